"""Shared fixtures: a private real Redis server for the session, and a clean database per test.

The store suite runs on two backends: the real Redis server these fixtures start (the default,
and the proof) and fakeredis (fast, a second opinion). Tests never touch a Redis that happens to
be running on the machine.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import fakeredis
import pytest
import redis.asyncio as aioredis

from server.redis_server import RedisServer
from store import FollowStore


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(directory=Path(tmp_path_factory.mktemp("redis")))
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def real_redis(redis_server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis(unix_socket_path=str(redis_server.socket_path), decode_responses=True)
    await client.flushall()
    yield client
    await client.aclose()


@pytest.fixture(params=["redis", "fakeredis"])
async def backend(request: pytest.FixtureRequest, redis_server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    """A clean async client on the real Redis server, then on fakeredis."""
    client: aioredis.Redis
    if request.param == "redis":
        client = aioredis.Redis(unix_socket_path=str(redis_server.socket_path), decode_responses=True)
        await client.flushall()
    else:
        client = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
def store(backend: aioredis.Redis) -> FollowStore:
    return FollowStore(backend)
