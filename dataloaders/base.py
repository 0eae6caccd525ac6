"""The base of the per-request loaders: a DataLoader over the store that reports its batch sizes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TypeVar

from strawberry.dataloader import DataLoader

from store import FollowStore

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
        self._groups: DataLoader[tuple[K, ...], list[V]] | None = None

    def load_group(self, keys: Sequence[K]) -> Awaitable[list[V]]:
        """All of `keys` with one future (a page's users): batched like load(), without a future
        and a shield per key, which would cost more than the load itself."""
        if self._groups is None:
            self._groups = DataLoader(load_fn=self._load_groups)
        return asyncio.shield(self._groups.load(tuple(keys)))

    async def _load_groups(self, groups: Sequence[tuple[K, ...]]) -> list[list[V]]:
        values = await self._load([key for group in groups for key in group])
        out, start = [], 0
        for group in groups:
            out.append(list(values[start : start + len(group)]))
            start += len(group)
        return out

    def clear_all(self) -> None:
        super().clear_all()
        if self._groups is not None:
            self._groups.clear_all()

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
