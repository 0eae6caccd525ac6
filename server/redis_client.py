"""The Redis client of a server process: pooled, with timeouts and retries on lost connections.

Retries are safe: every write of the store is an idempotent script, so a command re-sent after a
lost reply leaves the same state as one that arrived once.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, TimeoutError

SOCKET_TIMEOUT = 1.0


def connect(url: str, *, max_connections: int = 64, timeout: float = SOCKET_TIMEOUT) -> aioredis.Redis:
    """A client for `url` (redis://, rediss:// or unix://) that decodes replies to str.

    A command that gets no answer within `timeout` seconds fails (and is retried, then reported);
    the pool blocks up to `timeout` when all its connections are busy, instead of failing the
    request as redis-py's default pool does.
    """
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        decode_responses=True,
        max_connections=max_connections,
        timeout=timeout,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        # One retry: enough for a lost reply or a restarted server. redis-py applies this policy
        # to the command and again to the reconnect inside it, so attempts multiply; a second
        # layer of health-check PINGs would multiply them again, hence no health checks.
        retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=1),
        retry_on_error=[ConnectionError, TimeoutError],
        health_check_interval=0,
    )
    return aioredis.Redis.from_pool(pool)
