"""FollowGraph on a primary watched by Redis Sentinel: a primary, a replica and three sentinels from
the tests' redis-server binary (server/redis_sentinel.py, as `serve --demo-ha` starts them); the
primary killed; the app going on, without a restart, on the replica the sentinels promote; the old
primary back as a replica."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from followgraph.server.redis_client import RedisUrlError, SentinelUrl, connect
from followgraph.server.redis_sentinel import LocalSentinel
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.channels import open_reads
from tests.served import serve
from tests.server.processes import free_ports


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[LocalSentinel]:
    with LocalSentinel(tmp_path / "ha", ports=tuple(free_ports(5))) as setup:
        yield setup


def _until(what: str, ready: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(0.1)


def test_a_local_sentinel_fails_over_and_takes_the_old_primary_back_as_a_replica(
    sentinel: LocalSentinel,
) -> None:
    first, second = sentinel.ports[:2]
    assert sentinel.primary_port() == first
    pid = sentinel.server(first).process
    assert pid is not None
    assert (sentinel.directory / str(first) / "redis.pid").read_text().strip() == str(pid.pid)
    assert sentinel.heal() == [], "nothing exited"
    sentinel.server(first).kill()
    _until("the sentinels promote the replica", lambda: sentinel.primary_port() == second)
    assert sentinel.heal() == [first]
    back = redis.Redis(unix_socket_path=str(sentinel.server(first).socket_path), decode_responses=True)
    try:
        _until(
            "the old primary syncs from the new one",
            lambda: back.info("replication").get("master_link_status") == "up",
        )
        assert back.info("replication")["master_port"] == second
    finally:
        back.close()


def test_a_sentinel_url_names_sentinels_service_and_db() -> None:
    url = SentinelUrl.parse("rediss+sentinel://me:secret@10.0.0.1:26379,10.0.0.2:26380/main/3")
    assert url == SentinelUrl((("10.0.0.1", 26379), ("10.0.0.2", 26380)), "main", 3, "me", "secret", True)
    assert SentinelUrl.parse("redis://localhost") is None
    with pytest.raises(RedisUrlError, match="name the service"):
        SentinelUrl.parse("redis+sentinel://10.0.0.1:26379")


async def test_the_app_follows_a_failover_without_a_restart(
    sentinel: LocalSentinel, settings: Settings
) -> None:
    configured = replace(settings, redis_url=sentinel.url)
    async with serve(configured) as api:
        await api.register("a", "b", "c")
        await api.store.follow(follower="a", followee="b")
        # Acknowledged by the replica before the primary dies (what WAIT 1 promises).
        assert await api.store.redis.execute_command("WAIT", 1, 2000) == 1
        old = sentinel.primary_port()
        assert old is not None
        sentinel.server(old).kill()
        started = time.monotonic()
        while True:
            try:
                await api.store.follow(follower="c", followee="b")
                break
            except Exception:
                assert time.monotonic() - started < 30, "writes did not come back within 30 s"
                await asyncio.sleep(0.2)
        assert sentinel.primary_port() != old
        data = await api.data('{ user(userId: "b") { fansCount fans { edges { node { userId } } } } }')
        assert data["user"]["fansCount"] == 2
        assert {e["node"]["userId"] for e in data["user"]["fans"]["edges"]} == {"a", "c"}


async def test_reads_go_through_redis_py_which_asks_the_sentinels(sentinel: LocalSentinel) -> None:
    client = connect(sentinel.url)
    try:
        # No read channel: its one connection would stay with a primary that is no more.
        assert open_reads(client) is None
        store = FollowStore(client)
        await store.upsert_user("x", name="X")
        assert (await store.profiles(["x"]))[0] is not None
    finally:
        await client.aclose()
