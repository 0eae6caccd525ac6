"""Per-request DataLoaders that batch the store's reads."""

from __future__ import annotations

from dataclasses import dataclass

from dataloaders.base import BatchObserver, StoreDataLoader
from dataloaders.counts import CountsDataLoader
from dataloaders.page import PageDataLoader
from dataloaders.profile import ProfileDataLoader
from dataloaders.relation import RelationDataLoader
from store import FollowStore


@dataclass(frozen=True, slots=True)
class DataLoaders:
    relation: RelationDataLoader
    profile: ProfileDataLoader
    counts: CountsDataLoader
    page: PageDataLoader

    @classmethod
    def create(
        cls, store: FollowStore, viewer_id: str | None, *, observe: BatchObserver | None = None
    ) -> DataLoaders:
        return cls(
            relation=RelationDataLoader(store, viewer_id, observe=observe),
            profile=ProfileDataLoader(store, observe=observe),
            counts=CountsDataLoader(store, observe=observe),
            page=PageDataLoader(store, observe=observe),
        )

    def clear_all(self) -> None:
        """Forget everything loaded: after a write, later fields must see its effect."""
        for loader in (self.relation, self.profile, self.counts, self.page):
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
