"""ProfileDataLoader: registration and profile fields of users, batched per request."""

from __future__ import annotations

from collections.abc import Sequence

from dataloaders.base import StoreDataLoader
from store import Profile


class ProfileDataLoader(StoreDataLoader[str, Profile | None]):
    """None for a user who is not registered."""

    name = "profile"

    async def fetch(self, user_ids: Sequence[str]) -> list[Profile | None]:
        return await self.store.profiles(user_ids)
