"""PageDataLoader: pages of following / fans / mutual lists, batched per request.

Every connection at the same depth of a query (the fans of each of twenty users, say) is read in
one pipelined round trip.
"""

from __future__ import annotations

from collections.abc import Sequence

from followgraph.dataloaders.base import StoreDataLoader
from followgraph.store import ListQuery, Page


class PageDataLoader(StoreDataLoader[ListQuery, Page]):
    name = "page"

    async def fetch(self, queries: Sequence[ListQuery]) -> list[Page]:
        return await self.store.pages(queries)
