"""FactsDataLoader: what a response needs of its users (profiles, relation to the viewer, counts),
batched per request: every page of users at the same depth costs one pipelined round trip."""

from __future__ import annotations

from collections.abc import Sequence

from followgraph.dataloaders.base import BatchObserver, StoreDataLoader
from followgraph.store import FollowStore, Parts, UserFacts

# Which parts of which users.
FactsKey = tuple[Parts, tuple[str, ...]]


class FactsDataLoader(StoreDataLoader[FactsKey, list[UserFacts]]):
    name = "facts"

    def __init__(
        self, store: FollowStore, viewer_id: str | None, *, observe: BatchObserver | None = None
    ) -> None:
        super().__init__(store, observe=observe)
        self.viewer_id = viewer_id

    async def fetch(self, keys: Sequence[FactsKey]) -> list[list[UserFacts]]:
        # One read of every part any key wants, for all their users: one round trip, even when
        # the lists of a query select different fields of their users.
        ids = list(dict.fromkeys(user_id for _, user_ids in keys for user_id in user_ids))
        parts = Parts()
        for wanted, _ in keys:
            parts = parts | wanted
        loaded = await self.store.facts(self.viewer_id, ids, parts)
        found = {f.user_id: f for f in loaded}
        # A key may get parts it did not ask for; only selected fields are ever read from them.
        return [[found[user_id] for user_id in user_ids] for _, user_ids in keys]
