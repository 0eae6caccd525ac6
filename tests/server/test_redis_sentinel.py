"""FollowGraph on a primary watched by Redis Sentinel: a primary, a replica and three sentinels from
the tests' redis-server binary; the primary killed; the app going on, without a restart, on the
replica the sentinels promote."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

import pytest
import redis

from followgraph.server.redis_client import RedisUrlError, SentinelUrl, connect
from followgraph.server.redis_server import RedisServer, find_redis_server
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.cluster_channel import open_reads
from tests.served import serve
from tests.server.processes import free_ports

SERVICE = "fg"


@dataclass
class SentinelSetup:
    primary: RedisServer
    replica: RedisServer
    sentinel_ports: list[int]
    sentinels: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}"

    def primary_port(self) -> int:
        client = redis.Redis(port=self.sentinel_ports[0], decode_responses=True)
        try:
            _, port = cast("tuple[str, int]", client.sentinel_get_master_addr_by_name(SERVICE))
            return int(port)
        finally:
            client.close()


def _sentinel(directory: Path, port: int, primary: int) -> subprocess.Popen[bytes]:
    directory.mkdir(parents=True)
    config = directory / "sentinel.conf"
    config.write_text(
        "\n".join(
            [
                f"port {port}",
                "bind 127.0.0.1",
                f"dir {directory}",
                f"logfile {directory / 'sentinel.log'}",
                f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 2",
                f"sentinel down-after-milliseconds {SERVICE} 1000",
                f"sentinel failover-timeout {SERVICE} 5000",
                f"sentinel parallel-syncs {SERVICE} 1",
                "",
            ]
        )
    )
    return subprocess.Popen([find_redis_server(), str(config), "--sentinel"], stdout=subprocess.DEVNULL)


def _wait(what: str, ready: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if callable(ready) and ready():
                return
        except (redis.RedisError, OSError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout} s")


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[SentinelSetup]:
    ports = free_ports(5)
    primary = RedisServer(tmp_path / "primary", port=ports[0])
    replica = RedisServer(
        tmp_path / "replica", port=ports[1], extra_args=("--replicaof", "127.0.0.1", str(ports[0]))
    )
    primary.start()
    replica.start()
    setup = SentinelSetup(primary, replica, ports[2:])
    try:
        setup.sentinels = [
            _sentinel(tmp_path / f"sentinel{i}", port, ports[0]) for i, port in enumerate(ports[2:])
        ]

        def synced() -> bool:
            info = redis.Redis(port=ports[1]).info("replication")
            return bool(info.get("master_link_status") == "up")

        _wait("the replica syncs", synced)
        _wait("the sentinels name the primary", lambda: setup.primary_port() == ports[0])
        yield setup
    finally:
        for process in setup.sentinels:
            process.terminate()
            process.wait(10)
        replica.stop()
        if primary.running:
            primary.stop()


def test_a_sentinel_url_names_sentinels_service_and_db() -> None:
    url = SentinelUrl.parse("rediss+sentinel://me:secret@10.0.0.1:26379,10.0.0.2:26380/main/3")
    assert url == SentinelUrl((("10.0.0.1", 26379), ("10.0.0.2", 26380)), "main", 3, "me", "secret", True)
    assert SentinelUrl.parse("redis://localhost") is None
    with pytest.raises(RedisUrlError, match="name the service"):
        SentinelUrl.parse("redis+sentinel://10.0.0.1:26379")


async def test_the_app_follows_a_failover_without_a_restart(
    sentinel: SentinelSetup, settings: Settings
) -> None:
    configured = replace(settings, redis_url=sentinel.url)
    async with serve(configured) as api:
        await api.register("a", "b", "c")
        await api.store.follow(follower="a", followee="b")
        # Acknowledged by the replica before the primary dies (what WAIT 1 promises).
        assert await api.store.redis.execute_command("WAIT", 1, 2000) == 1
        old = sentinel.primary_port()
        sentinel.primary.kill()
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


async def test_reads_go_through_redis_py_which_asks_the_sentinels(sentinel: SentinelSetup) -> None:
    client = connect(sentinel.url)
    try:
        # No read channel: its one connection would stay with a primary that is no more.
        assert open_reads(client) is None
        store = FollowStore(client)
        await store.upsert_user("x", name="X")
        assert (await store.profiles(["x"]))[0] is not None
    finally:
        await client.aclose()
