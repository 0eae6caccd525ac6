"""CountsDataLoader: following / fans / mutual counts of users, batched per request."""

from __future__ import annotations

from collections.abc import Sequence

from strawberry.dataloader import DataLoader

from store import Counts, FollowStore


class CountsDataLoader(DataLoader[str, Counts]):
    def __init__(self, store: FollowStore) -> None:
        super().__init__(load_fn=self._load)
        self._store = store

    async def _load(self, user_ids: Sequence[str]) -> list[Counts]:
        return await self._store.counts(user_ids)
