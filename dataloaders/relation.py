"""RelationDataLoader: how each user relates to the request's viewer, batched per request."""

from __future__ import annotations

from collections.abc import Sequence

from strawberry.dataloader import DataLoader

from store import FollowStore, Relation


class RelationDataLoader(DataLoader[str, Relation]):
    """One pipelined round trip (two ZMSCOREs on the viewer's slot) for every user loaded together."""

    def __init__(self, store: FollowStore, viewer_id: str | None) -> None:
        super().__init__(load_fn=self._load)
        self._store = store
        self._viewer_id = viewer_id

    async def _load(self, user_ids: Sequence[str]) -> list[Relation]:
        return await self._store.relations(self._viewer_id, user_ids)
