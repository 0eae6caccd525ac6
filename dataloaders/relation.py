"""RelationDataLoader: how each user relates to the request's viewer, batched per request."""

from __future__ import annotations

from collections.abc import Sequence

from dataloaders.base import BatchObserver, StoreDataLoader
from store import FollowStore, Relation


class RelationDataLoader(StoreDataLoader[str, Relation]):
    """One pipelined round trip (two ZMSCOREs on the viewer's slot) for every user loaded together."""

    name = "relation"

    def __init__(
        self, store: FollowStore, viewer_id: str | None, *, observe: BatchObserver | None = None
    ) -> None:
        super().__init__(store, observe=observe)
        self.viewer_id = viewer_id

    async def fetch(self, user_ids: Sequence[str]) -> list[Relation]:
        return await self.store.relations(self.viewer_id, user_ids)
