"""Per-request DataLoaders that batch the store's reads."""

from __future__ import annotations

from followgraph.dataloaders.base import BatchObserver, StoreDataLoader
from followgraph.dataloaders.facts import FactsDataLoader, FactsKey
from followgraph.dataloaders.page import PageDataLoader
from followgraph.store import FollowStore


class DataLoaders:
    """The loaders of one request, each created when first used."""

    __slots__ = ("_facts", "_observe", "_page", "_store", "_viewer_id")

    def __init__(
        self, store: FollowStore, viewer_id: str | None, observe: BatchObserver | None = None
    ) -> None:
        self._store = store
        self._viewer_id = viewer_id
        self._observe = observe
        self._facts: FactsDataLoader | None = None
        self._page: PageDataLoader | None = None

    @property
    def facts(self) -> FactsDataLoader:
        if self._facts is None:
            self._facts = FactsDataLoader(self._store, self._viewer_id, observe=self._observe)
        return self._facts

    @property
    def page(self) -> PageDataLoader:
        if self._page is None:
            self._page = PageDataLoader(self._store, observe=self._observe)
        return self._page

    def clear_all(self) -> None:
        """Forget everything loaded: after a write, later fields must see its effect."""
        for loader in (self._facts, self._page):
            if loader is not None:
                loader.clear_all()


__all__ = ["BatchObserver", "DataLoaders", "FactsDataLoader", "FactsKey", "PageDataLoader", "StoreDataLoader"]
