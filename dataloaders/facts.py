"""FactsDataLoader: what a response needs of its users (profiles, relation to the viewer, counts),
batched per request: every page of users at the same depth costs one pipelined round trip."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from dataloaders.base import BatchObserver, StoreDataLoader
from store import FollowStore, UserFacts

# (profile, relation, counts, user ids): which parts of which users.
FactsKey = tuple[bool, bool, bool, tuple[str, ...]]


class FactsDataLoader(StoreDataLoader[FactsKey, list[UserFacts]]):
    name = "facts"

    def __init__(
        self, store: FollowStore, viewer_id: str | None, *, observe: BatchObserver | None = None
    ) -> None:
        super().__init__(store, observe=observe)
        self.viewer_id = viewer_id

    async def fetch(self, keys: Sequence[FactsKey]) -> list[list[UserFacts]]:
        wanted: dict[tuple[bool, bool, bool], dict[str, None]] = {}
        for profile, relation, counts, user_ids in keys:
            wanted.setdefault((profile, relation, counts), {}).update(dict.fromkeys(user_ids))
        loaded = await asyncio.gather(
            *(
                self.store.user_facts(self.viewer_id, list(ids), profile=p, relation=r, counts=c)
                for (p, r, c), ids in wanted.items()
            )
        )
        found = {parts: {f.user_id: f for f in facts} for parts, facts in zip(wanted, loaded, strict=True)}
        return [[found[(p, r, c)][user_id] for user_id in user_ids] for p, r, c, user_ids in keys]
