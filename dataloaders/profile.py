"""ProfileDataLoader: registration and profile fields of users, batched per request."""

from __future__ import annotations

from collections.abc import Sequence

from strawberry.dataloader import DataLoader

from store import FollowStore, Profile


class ProfileDataLoader(DataLoader[str, Profile | None]):
    """None for a user who is not registered."""

    def __init__(self, store: FollowStore) -> None:
        super().__init__(load_fn=self._load)
        self._store = store

    async def _load(self, user_ids: Sequence[str]) -> list[Profile | None]:
        return await self._store.profiles(user_ids)
