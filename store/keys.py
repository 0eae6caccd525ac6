"""Every Redis key name of the follow graph. No other module spells a key.

All keys of one user share the hash tag `{u:ID}`, so they live in one Redis Cluster slot and a
script or pipeline touching only one user's keys is a single-slot operation.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.crc import key_slot

DEFAULT_PREFIX = "fg:"


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = DEFAULT_PREFIX

    def _user(self, user_id: str) -> str:
        return f"{self.prefix}{{u:{user_id}}}"

    def following(self, user_id: str) -> str:
        """Sorted set of the users `user_id` follows; score = follow time (epoch ms)."""
        return f"{self._user(user_id)}:following"

    def fans(self, user_id: str) -> str:
        """Sorted set of the users following `user_id`; score = their follow time (epoch ms)."""
        return f"{self._user(user_id)}:fans"

    def mutual(self, user_id: str) -> str:
        """Sorted set of the users `user_id` follows who follow back; score = when it became mutual."""
        return f"{self._user(user_id)}:mutual"

    def profile(self, user_id: str) -> str:
        """Hash of name, avatarUrl, createdAt; its existence means the user is registered."""
        return f"{self._user(user_id)}:profile"

    def fans_seen(self, user_id: str) -> str:
        """String: epoch ms of the user's last markFansSeen."""
        return f"{self._user(user_id)}:fans_seen"

    def slot(self, user_id: str) -> int:
        """The Redis Cluster slot holding every key of `user_id`."""
        return key_slot(self.profile(user_id).encode())

    def rate_limit_prefix(self) -> str:
        """Prefix of the rate limiter's keys (one per limited user and action)."""
        return f"{self.prefix}limits"

    def pattern(self, suffix: str = "*") -> str:
        """A SCAN pattern matching every user's key ending in `suffix` (all keys of the graph by default)."""
        escaped = "".join("\\" + c if c in "*?[]\\" else c for c in self.prefix)
        return f"{escaped}{{u:*}}:{suffix}"

    def user_of(self, key: str) -> str:
        """The user id inside one of this module's keys."""
        start = len(self.prefix) + len("{u:")
        return key[start : key.index("}", start)]
