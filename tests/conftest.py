"""Shared fixtures: a private real Redis server and a real 3-master Redis Cluster for the session,
and a clean database per test.

The store suite runs on three backends: the real Redis server these fixtures start (the proof),
the real cluster (every script on one slot, follows in two steps) and fakeredis (fast, a second
opinion). The end-to-end API tests run on the server and on the cluster. Tests never touch a Redis
that happens to be running on the machine.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import fakeredis
import pytest
import redis.asyncio as aioredis
from hypothesis import settings as hypothesis_settings

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.channels import open_reads
from followgraph.store.redis.lua import Client
from followgraph.store.sql.databases import private_database
from followgraph.store.sql.engine import create_engine
from followgraph.store.sql.migrate import migrate
from tests.served import Served, serve
from tests.store.sql.rows import wipe


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(directory=Path(tmp_path_factory.mktemp("redis"))) as server:
        yield server


@pytest.fixture
async def real_redis(redis_server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    async with AsyncExitStack() as stack:
        yield await clean_redis(redis_server, stack)


async def clean_redis(redis_server: RedisServer, stack: AsyncExitStack) -> aioredis.Redis:
    """A client of the test server, its database flushed; `stack` closes it."""
    client = aioredis.Redis(unix_socket_path=str(redis_server.socket_path), decode_responses=True)
    stack.push_async_callback(client.aclose)
    await client.flushall()
    return client


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(directory=Path(tmp_path_factory.mktemp("cluster"))) as cluster:
        yield cluster


@dataclass(frozen=True)
class Backend:
    """Where a test's data lives: a kind of Redis and its URL, to open clients of one's own on it."""

    kind: str
    url: str

    def client(self) -> Client:
        if self.kind == "cluster":
            return connect(self.url, timeout=10.0)
        if self.kind == "redis":
            return aioredis.Redis.from_url(self.url, decode_responses=True)
        return fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True)

    async def clean_client(self) -> Client:
        client = self.client()
        await client.flushall()
        return client


def _backend(request: pytest.FixtureRequest, kind: str) -> Backend:
    if kind == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        return Backend(kind, server.url)
    if kind == "cluster":
        cluster: LocalCluster = request.getfixturevalue("redis_cluster")
        return Backend(kind, cluster.url)
    return Backend(kind, "")


@pytest.fixture(params=["redis", "cluster", "fakeredis"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    """A clean async client on the real Redis server, on the real cluster, then on fakeredis."""
    client = await _backend(request, request.param).clean_client()
    yield client
    await client.aclose()


@pytest.fixture(params=["redis", "cluster"])
def served_backend(request: pytest.FixtureRequest) -> Backend:
    """The real Redis server, then the real cluster: what the app runs on."""
    return _backend(request, request.param)


@pytest.fixture
async def served_redis(served_backend: Backend) -> AsyncIterator[Client]:
    """A clean client of `served_backend`."""
    client = await served_backend.clean_client()
    yield client
    await client.aclose()


@pytest.fixture
async def store(backend: Client) -> AsyncIterator[FollowStore]:
    """The store on `backend`, reading through the read channel where the server would."""
    reads = open_reads(backend)
    yield FollowStore(backend, reads=reads)
    if reads is not None:
        await reads.aclose()


# Property tests explore new inputs on every developer run; CI replays a fixed sequence, so that a
# submission is judged on its code, not on the luck of the draw.
hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

TEST_SECRET = "test-secret-that-is-long-enough-for-hs256!"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # The SQL copy and the search index have suites of their own (tests/server/test_sync.py,
    # tests/resolvers/test_search.py); apps here run without their consumers.
    return Settings(
        data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, database_url="off", search_index=False
    )


@pytest.fixture
async def api(served_redis: Client, settings: Settings) -> AsyncIterator[Served]:
    """The app over HTTP on the real Redis server or the cluster."""
    async with serve(settings, served_redis) as served:
        yield served


# -- the SQL copy's databases: each session creates one of its own on PostgreSQL and MariaDB (and
# drops it at the end) and a SQLite file. The servers default to the ones CI runs;
# FOLLOWGRAPH_TEST_POSTGRES / FOLLOWGRAPH_TEST_MYSQL point elsewhere (a server URL, no database).

SERVERS = {
    "postgresql": os.environ.get("FOLLOWGRAPH_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432"),
    "mysql": os.environ.get("FOLLOWGRAPH_TEST_MYSQL", "mysql://root@127.0.0.1:3306"),
}


@pytest.fixture(scope="session", params=["postgresql", "mysql", "sqlite"])
def sql_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a migrated database of this session's own, on each of the three databases."""
    kind: str = request.param
    if kind == "sqlite":
        url = f"sqlite:///{Path(tmp_path_factory.mktemp('sql')) / 'copy.db'}"
        asyncio.run(migrate(url))
        yield url
        return
    with private_database(SERVERS[kind], "fgtest") as url:
        asyncio.run(migrate(url))
        yield url


@pytest.fixture
async def copy_url(sql_url: str) -> str:
    """The session's database on one of the three, its tables emptied."""
    engine = create_engine(sql_url)
    await wipe(engine)
    await engine.dispose()
    return sql_url
