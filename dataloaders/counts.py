"""CountsDataLoader: following / fans / mutual counts of users, batched per request."""

from __future__ import annotations

from collections.abc import Sequence

from dataloaders.base import StoreDataLoader
from store import Counts


class CountsDataLoader(StoreDataLoader[str, Counts]):
    name = "counts"

    async def fetch(self, user_ids: Sequence[str]) -> list[Counts]:
        return await self.store.counts(user_ids)
