"""The follow rate limit: an exact moving window per user, kept in Redis and so shared by every
server process (the `limits` library's moving-window strategy, atomic in a Lua script on one key)."""

from __future__ import annotations

from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.aio.storage import RedisClusterStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter
from redis.asyncio import RedisCluster

from followgraph.store.keys import Keys
from followgraph.store.lua import Client


@dataclass(frozen=True, slots=True)
class RateLimited:
    limit: str
    retry_at: float  # epoch seconds


def _cluster_uri(redis: RedisCluster) -> str:
    nodes = redis.get_nodes() or list(redis.nodes_manager.startup_nodes.values())
    return "async+redis+cluster://" + ",".join(f"{node.host}:{node.port}" for node in nodes)


class FollowRateLimiter:
    def __init__(self, redis: Client, rate: str, *, keys: Keys | None = None) -> None:
        self.item: RateLimitItem = parse(rate)
        prefix = (keys or Keys()).rate_limit_prefix()
        self._storage: Storage
        if isinstance(redis, RedisCluster):
            # `limits` builds its own cluster client from the nodes; it is closed by aclose().
            kwargs = redis.get_connection_kwargs()
            self._storage = RedisClusterStorage(
                _cluster_uri(redis),
                implementation="redispy",
                key_prefix=prefix,
                socket_timeout=kwargs.get("socket_timeout") or 1.0,
                socket_connect_timeout=kwargs.get("socket_connect_timeout") or 1.0,
            )
        else:
            self._storage = RedisStorage(
                "async+redis://",
                implementation="redispy",
                connection_pool=redis.connection_pool,  # type: ignore[arg-type]  # passed on to redis-py
                key_prefix=prefix,
            )
        self._limiter = MovingWindowRateLimiter(self._storage)

    async def hit(self, user_id: str) -> RateLimited | None:
        """Count one follow of `user_id`; RateLimited (and nothing counted) past the limit."""
        if await self._limiter.hit(self.item, "follow", user_id):
            return None
        stats = await self._limiter.get_window_stats(self.item, "follow", user_id)
        return RateLimited(str(self.item), stats.reset_time)

    def cluster_client(self) -> RedisCluster | None:
        """The cluster client `limits` made for this limiter, if any."""
        client = getattr(getattr(self._storage, "bridge", None), "storage", None)
        return client if isinstance(client, RedisCluster) else None

    async def aclose(self) -> None:
        """Close a client of the limiter's own (cluster mode); a shared pool is left to its owner."""
        client = self.cluster_client()
        if client is not None:
            await client.aclose()
