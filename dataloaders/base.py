"""The base of the per-request loaders: a DataLoader over the store that reports its batch sizes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TypeVar

from strawberry.dataloader import DataLoader

from followgraph.store import FollowStore

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Called with the loader's name and the size of every batch it sends (for metrics).
BatchObserver = Callable[[str, int], None]


class StoreDataLoader(DataLoader[K, V]):
    name = "store"

    def __init__(self, store: FollowStore, *, observe: BatchObserver | None = None) -> None:
        super().__init__(load_fn=self._load)
        self.store = store
        self._observe = observe

    def load(self, key: K) -> Awaitable[V]:
        # Strawberry hands every caller of a key the same future. When graphql-core cancels one
        # caller (a sibling field failed), cancelling that shared future would raise
        # CancelledError in every other field waiting for the same key; shield it.
        return asyncio.shield(super().load(key))

    async def _load(self, keys: Sequence[K]) -> Sequence[V]:
        if self._observe is not None:
            self._observe(self.name, len(keys))
        return await self.fetch(keys)

    async def fetch(self, keys: Sequence[K]) -> Sequence[V]:
        raise NotImplementedError
