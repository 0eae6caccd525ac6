"""Per-request DataLoaders that batch the store's reads."""

from __future__ import annotations

from dataloaders.base import BatchObserver, StoreDataLoader
from dataloaders.counts import CountsDataLoader
from dataloaders.page import PageDataLoader
from dataloaders.profile import ProfileDataLoader
from dataloaders.relation import RelationDataLoader
from store import FollowStore


class DataLoaders:
    """The loaders of one request, each created when first used (most requests need few)."""

    __slots__ = ("_counts", "_observe", "_page", "_profile", "_relation", "_store", "_viewer_id")

    def __init__(
        self, store: FollowStore, viewer_id: str | None, observe: BatchObserver | None = None
    ) -> None:
        self._store = store
        self._viewer_id = viewer_id
        self._observe = observe
        self._relation: RelationDataLoader | None = None
        self._profile: ProfileDataLoader | None = None
        self._counts: CountsDataLoader | None = None
        self._page: PageDataLoader | None = None

    @classmethod
    def create(
        cls, store: FollowStore, viewer_id: str | None, *, observe: BatchObserver | None = None
    ) -> DataLoaders:
        return cls(store, viewer_id, observe)

    @property
    def relation(self) -> RelationDataLoader:
        if self._relation is None:
            self._relation = RelationDataLoader(self._store, self._viewer_id, observe=self._observe)
        return self._relation

    @property
    def profile(self) -> ProfileDataLoader:
        if self._profile is None:
            self._profile = ProfileDataLoader(self._store, observe=self._observe)
        return self._profile

    @property
    def counts(self) -> CountsDataLoader:
        if self._counts is None:
            self._counts = CountsDataLoader(self._store, observe=self._observe)
        return self._counts

    @property
    def page(self) -> PageDataLoader:
        if self._page is None:
            self._page = PageDataLoader(self._store, observe=self._observe)
        return self._page

    def clear_all(self) -> None:
        """Forget everything loaded: after a write, later fields must see its effect."""
        for loader in (self._relation, self._profile, self._counts, self._page):
            if loader is not None:
                loader.clear_all()


__all__ = [
    "BatchObserver",
    "CountsDataLoader",
    "DataLoaders",
    "PageDataLoader",
    "ProfileDataLoader",
    "RelationDataLoader",
    "StoreDataLoader",
]
