"""The embedded Redis's watchdog: a killed redis-server comes back by itself with its data; one that
cannot start again makes /healthz fail."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from prometheus_client import CollectorRegistry, generate_latest

from followgraph.server.redis_server import RedisServer, current_aof
from followgraph.server.settings import Settings
from followgraph.server.watchdog import RedisWatchdog
from tests.conftest import TEST_SECRET
from tests.served import serve


def wait_for(condition: Callable[[], bool], within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis", appendonly=True)
    server.start()
    yield server
    server.stop()


def test_a_killed_redis_is_restarted_from_its_aof(server: RedisServer) -> None:
    client = redis.Redis(unix_socket_path=str(server.socket_path), socket_timeout=1.0)
    client.set("kept", "yes")
    watchdog = RedisWatchdog(server, first_delay=0.05)
    watchdog.start()
    try:
        pid = server.process.pid if server.process else 0
        server.process.kill() if server.process else None

        assert wait_for(lambda: watchdog.restarts == 1)
        assert server.running and server.process is not None and server.process.pid != pid
        assert client.get("kept") == b"yes"
        assert watchdog.problem() is None
        registry = CollectorRegistry()
        registry.register(watchdog)
        assert b"followgraph_embedded_redis_restarts_total 1.0" in generate_latest(registry)
    finally:
        watchdog.stop()
        client.close()


def test_stopping_the_server_on_purpose_is_not_a_crash(server: RedisServer) -> None:
    watchdog = RedisWatchdog(server, poll=0.01)
    watchdog.start()
    watchdog.stop()
    server.stop()
    time.sleep(0.1)

    assert not server.running
    assert watchdog.exits == 0 and watchdog.restarts == 0


async def test_healthz_fails_when_the_redis_cannot_start_again(server: RedisServer, tmp_path: Path) -> None:
    gave_up: list[bool] = []
    watchdog = RedisWatchdog(
        server, first_delay=0.05, longest_delay=0.2, give_up_after=3, on_give_up=lambda: gave_up.append(True)
    )
    settings = Settings(
        data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, redis_url=server.url, follow_rate_limit="off"
    )
    watchdog.start()
    try:
        async with serve(settings, watchdog=watchdog) as served:
            assert (await served.client.get("/healthz")).status_code == 200
            # A crash that leaves an AOF Redis refuses to load: every restart fails.
            server.kill()
            aof = current_aof(server.directory)
            assert aof is not None
            aof.write_bytes(b"not a redis command\r\n" + aof.read_bytes())

            assert wait_for(lambda: watchdog.problem() is not None)
            response = await served.client.get("/healthz")
            metrics = (await served.client.get("/metrics")).text

        assert response.status_code == 503
        assert response.json()["status"] == "failing"
        assert "restarts in a row failed" in response.json()["problem"]
        assert gave_up == [True]
        assert "followgraph_embedded_redis_failed_starts_total" in metrics
    finally:
        watchdog.stop()
