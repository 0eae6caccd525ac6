"""PageDataLoader: pages of following / fans / mutual lists, batched per request.

Every connection at the same depth of a query (the fans of each of twenty users, say) is read in
one pipelined round trip.
"""

from __future__ import annotations

from collections.abc import Sequence

from strawberry.dataloader import DataLoader

from store import FollowStore, ListQuery, Page


class PageDataLoader(DataLoader[ListQuery, Page]):
    def __init__(self, store: FollowStore) -> None:
        super().__init__(load_fn=self._load)
        self._store = store

    async def _load(self, queries: Sequence[ListQuery]) -> list[Page]:
        return await self._store.pages(queries)
