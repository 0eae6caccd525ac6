"""The follow rate limit: an exact moving window per user, kept in Redis and so shared by every
server process (the `limits` library's moving-window strategy, atomic in a Lua script)."""

from __future__ import annotations

from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.aio.storage import RedisStorage
from limits.aio.strategies import MovingWindowRateLimiter
from redis.asyncio import Redis

from store.keys import Keys


@dataclass(frozen=True, slots=True)
class RateLimited:
    limit: str
    retry_at: float  # epoch seconds


class FollowRateLimiter:
    def __init__(self, redis: Redis, rate: str, *, keys: Keys | None = None) -> None:
        self.item: RateLimitItem = parse(rate)
        storage = RedisStorage(
            "async+redis://",
            implementation="redispy",
            connection_pool=redis.connection_pool,  # type: ignore[arg-type]  # passed on to redis-py
            key_prefix=(keys or Keys()).rate_limit_prefix(),
        )
        self._limiter = MovingWindowRateLimiter(storage)

    async def hit(self, user_id: str) -> RateLimited | None:
        """Count one follow of `user_id`; RateLimited (and nothing counted) past the limit."""
        if await self._limiter.hit(self.item, "follow", user_id):
            return None
        stats = await self._limiter.get_window_stats(self.item, "follow", user_id)
        return RateLimited(str(self.item), stats.reset_time)
