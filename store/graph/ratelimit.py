"""The follow rate limit: an exact moving window per user, kept in Redis and so shared by every
server process.

The window is counted inside the follow script itself (store/graph/scripts.py `_LIMIT`), on a key with the
follower's hash tag: the check, the count and the follow are one atomic call and one round trip,
also on a cluster, where the follower's step runs on the follower's slot. The `limits` library
reads the rate (`400/day`, `20 per minute`) and names it; its own Redis storage is not used, since
it costs round trips of its own and, on a cluster, a client of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from limits import parse


@dataclass(frozen=True, slots=True)
class FollowLimit:
    """At most `amount` follows (requests included) in any `window_ms`, per follower."""

    amount: int
    window_ms: int
    text: str  # as the `limits` library names it: "400 per 1 day"

    @classmethod
    def parse(cls, rate: str) -> FollowLimit:
        """The limit of one rate such as `400/day` (ValueError when it is not one)."""
        item = parse(rate)
        return cls(item.amount, item.get_expiry() * 1000, str(item))


def limit_args(limit: FollowLimit | None) -> list[str]:
    """The follow scripts' arguments that carry the limit (empty ones: no limit)."""
    return ["", ""] if limit is None else [str(limit.amount), str(limit.window_ms)]
