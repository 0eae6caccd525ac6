"""`followgraph serve` as a user runs it: a real uvicorn process on an embedded, persistent Redis."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore, ListKind
from followgraph.store.redis.lua import AnyPipeline, run_pipeline
from followgraph.transport.auth import mint_token
from tests.conftest import TEST_SECRET, clean_redis
from tests.server.processes import clean_env, free_port, interrupt, redis_pids, serve, wait_ready
from tests.subscriber import raw


def followgraph(*args: str, env: dict[str, str] | None = None) -> list[str]:
    return [sys.executable, "-m", "followgraph.cli", *args]


class Served:
    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir = data_dir
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.args: tuple[str, ...] = ()
        self.env: dict[str, str] = {}

    def start(self) -> None:
        args = followgraph("serve", "--port", str(self.port), "--data-dir", str(self.data_dir), *self.args)
        self.process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(**self.env)
        )
        process = self.process
        wait_ready(process, self.url, process.communicate)

    def stop(self) -> str:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=30)
        assert self.process.returncode == 0, err.decode()
        return err.decode()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def graphql(self, query: str, user: str | None = None) -> Any:
        headers = {}
        if user is not None:
            token = mint_token(Settings(data_dir=self.data_dir).auth_config(), user)
            headers["authorization"] = f"Bearer {token}"
        response = httpx.post(f"{self.url}/graphql", json={"query": query}, headers=headers, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    demo = subprocess.run(
        followgraph("demo", "--users", "60", "--data-dir", str(tmp_path)),
        capture_output=True,
        env=clean_env(),
        timeout=60,
    )
    assert demo.returncode == 0, demo.stderr.decode()
    server = Served(tmp_path, free_port())
    yield server
    if server.process is not None:
        interrupt(server.process, timeout=15)


def test_a_follow_survives_a_restart_of_the_server_and_its_embedded_redis(served: Served) -> None:
    served.start()
    served.graphql('mutation { unfollow(input: {userId: "1"}) { changed } }', user="60")
    before = served.graphql('{ user(userId: "1") { fansCount viewerIsFollowing } }', user="60")
    assert before["data"]["user"]["viewerIsFollowing"] is False
    follow = served.graphql('mutation { follow(input: {userId: "1"}) { changed relationship } }', user="60")
    assert follow["data"]["follow"]["changed"] is True
    log = served.stop()
    assert "embedded redis stopped" in log
    assert not list(served.data_dir.glob("redis/*.sock"))

    served.start()
    after = served.graphql('{ user(userId: "1") { fansCount viewerIsFollowing } }', user="60")
    assert after["data"]["user"] == {
        "fansCount": before["data"]["user"]["fansCount"] + 1,
        "viewerIsFollowing": True,
    }
    served.stop()


def test_the_served_endpoints(served: Served) -> None:
    served.start()
    page = served.graphql('{ user(userId: "1") { fans(first: 2) { edges { followedAt relationship } } } }')
    assert len(page["data"]["user"]["fans"]["edges"]) == 2
    assert httpx.get(f"{served.url}/healthz").json() == {"status": "ok"}
    assert "followgraph_requests_total" in httpx.get(f"{served.url}/metrics").text
    graphiql = httpx.get(f"{served.url}/graphql", headers={"accept": "text/html"})
    assert graphiql.status_code == 200 and "graphiql" in graphiql.text.lower()
    served.stop()


def test_sigterm_stops_the_embedded_redis_cleanly(served: Served) -> None:
    served.start()
    assert served.process is not None
    served.process.send_signal(signal.SIGTERM)
    _, err = served.process.communicate(timeout=30)
    assert "embedded redis stopped" in err.decode()
    assert redis_pids(served.data_dir) == []


def test_a_killed_server_does_not_leave_its_redis_behind(served: Served) -> None:
    served.start()
    assert served.process is not None
    assert len(redis_pids(served.data_dir)) == 1
    served.process.kill()
    served.process.communicate()
    deadline = time.monotonic() + 10
    while redis_pids(served.data_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert redis_pids(served.data_dir) == []
    served.start()
    assert served.graphql('{ user(userId: "1") { userId } }') == {"data": {"user": {"userId": "1"}}}
    served.stop()


def test_metrics_on_their_own_port_are_not_on_the_api_port(served: Served) -> None:
    metrics_port = free_port()
    served.args = ("--metrics-port", str(metrics_port))
    served.start()
    served.graphql('{ user(userId: "1") { userId } }')

    assert httpx.get(f"{served.url}/metrics").status_code == 404
    metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text
    assert 'followgraph_requests_total{operation="unnamed",outcome="ok"} 1.0' in metrics
    assert "followgraph_embedded_redis_restarts_total 0.0" in metrics
    served.stop()


def test_a_killed_embedded_redis_is_back_by_itself(served: Served) -> None:
    served.start()
    [first] = redis_pids(served.data_dir)
    os.kill(first, signal.SIGKILL)

    query = {"query": '{ user(userId: "1") { userId fansCount } }'}
    deadline = time.monotonic() + 30
    answer: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            answer = httpx.post(f"{served.url}/graphql", json=query, timeout=5).json()
        except httpx.TransportError:
            answer = {}
        if "data" in answer and "errors" not in answer:
            break
        time.sleep(0.1)

    assert answer.get("data", {}).get("user", {}).get("userId") == "1", answer  # the data came back
    [second] = redis_pids(served.data_dir)
    assert second != first
    assert httpx.get(f"{served.url}/healthz").status_code == 200
    assert httpx.get(f"{served.url}/readyz").status_code == 200
    assert "followgraph_embedded_redis_restarts_total 1.0" in httpx.get(f"{served.url}/metrics").text
    log = served.stop()
    assert "the embedded redis exited on its own" in log
    assert "is running again" in log


def test_serve_demo_loads_once_and_prints_a_working_token(tmp_path: Path) -> None:
    server = Served(tmp_path, free_port())
    server.args = ("--demo",)
    try:
        server.start()
        assert server.process is not None and server.process.stdout is not None
        banner = server.process.stdout.read1(4096).decode()  # type: ignore[attr-defined]
        assert f"http://127.0.0.1:{server.port}/ (the web app; GraphiQL at /graphql)" in banner
        token = next(word for word in banner.split() if word.startswith("eyJ"))
        response = httpx.post(
            f"{server.url}/graphql",
            json={"query": '{ viewer { userId } user(userId: "1") { fansCount } }'},
            headers={"authorization": f"Bearer {token}"},
        )
        data = response.json()["data"]
        assert data["viewer"] == {"userId": "42"}
        assert data["user"]["fansCount"] > 1000
    finally:
        server.stop()
    # The variable is the flag's: demo mode again, without loading the graph twice.
    server.args, server.env = (), {"FOLLOWGRAPH_DEMO": "1"}
    server.start()
    assert server.process is not None and server.process.stdout is not None
    banner = server.process.stdout.read1(4096).decode()  # type: ignore[attr-defined]
    assert "Token of demo user 42" in banner
    assert httpx.get(f"{server.url}/demo/token").json()["userId"] == "42"
    log = server.stop()
    assert "already has users" in log


def test_a_taken_port_is_said_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = followgraph("serve", "--port", str(port), "--demo", "--data-dir", str(tmp_path / "data"))
        done = subprocess.run(args, capture_output=True, env=clean_env(), timeout=60)
    assert done.returncode == 1
    said = done.stdout.decode() + done.stderr.decode()
    assert f"Cannot listen on 127.0.0.1:{port}: Address already in use." in said
    assert "Choose another port with --port or FOLLOWGRAPH_PORT." in said
    # Neither the embedded Redis nor the demo graph was started or loaded.
    assert "Loaded" not in said and not (tmp_path / "data").exists()


async def test_a_websocket_message_past_the_body_limit_closes_the_socket_with_1009(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    env = {
        "FOLLOWGRAPH_REDIS_URL": redis_server.url,
        "FOLLOWGRAPH_JWT_SECRET": TEST_SECRET,
        "FOLLOWGRAPH_MAX_BODY_BYTES": "100000",
        "FOLLOWGRAPH_DATABASE_URL": "off",
    }
    with serve(tmp_path, env=env) as server:
        ws_url = f"ws://127.0.0.1:{server.port}/graphql"
        async with raw(ws_url) as socket:
            await socket.send({"type": "connection_init"})
            assert (await socket.receive())["type"] == "connection_ack"
            await socket.send({"type": "ping", "payload": {"pad": "x" * 50_000}})
            within = await socket.receive()
            await socket.send({"type": "ping", "payload": {"pad": "x" * 100_000}})
            code, _ = await socket.closed()

    assert within == {"type": "pong"}
    assert code == 1009


UNLOCK = "mutation { updateSettings(input: {locked: false}) { settings { locked } errors { code } } }"
REQUESTS = 50_000


async def _locked_with_requests(client: aioredis.Redis, owner: str, requests: int) -> FollowStore:
    store = FollowStore(client)
    await store.upsert_user(owner)
    await store.update_settings(owner, locked=True)
    k = store.keys
    for start in range(0, requests, 10_000):
        chunk = range(start, min(start + 10_000, requests))

        def fill(pipe: AnyPipeline, chunk: range = chunk) -> None:
            # What requests of the locked owner leave behind (one round trip).
            pipe.zadd(k.requests_in(owner), {f"r{i}": 1_000 + i for i in chunk})
            for i in chunk:
                pipe.zadd(k.requests_out(f"r{i}"), {owner: 1_000 + i})

        await run_pipeline(client, fill)
    return store


async def test_a_restart_takes_up_an_unlock_s_acceptance_where_it_stopped(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    async with AsyncExitStack() as stack:
        store = await _locked_with_requests(await clean_redis(redis_server, stack), "owner", REQUESTS)
        env = {
            "FOLLOWGRAPH_REDIS_URL": redis_server.url,
            "FOLLOWGRAPH_JWT_SECRET": TEST_SECRET,
            "FOLLOWGRAPH_DATABASE_URL": "off",
            # The unlock answers after 0.2 s, its acceptance going on.
            "FOLLOWGRAPH_REQUEST_TIMEOUT": "0.4",
        }
        token = mint_token(Settings(jwt_secret=TEST_SECRET).auth_config(), "owner")
        with serve(tmp_path, env=env) as server:
            answer = httpx.post(
                f"{server.url}/graphql",
                json={"query": UNLOCK},
                headers={"authorization": f"Bearer {token}"},
                timeout=10,
            )
            assert answer.json() == {
                "data": {"updateSettings": {"settings": {"locked": False}, "errors": []}}
            }
            interrupt(server.process, timeout=20)  # a deploy: the server stops mid-acceptance
            assert server.process.returncode == 0
            assert "still running at shutdown" not in server.log()
        left = await store.pending_count("owner")
        assert 0 < left < REQUESTS, left
        assert await store.redis.smembers(store.keys.accepting()) == {"owner"}
        # Each batch was finished on both sides: the follows made are whole.
        accepted = await store.redis.zcard(store.keys.fans("owner"))
        assert accepted == REQUESTS - left
        with serve(tmp_path, env=env) as server:
            # The last step is the log line, after the last batch and the mark's removal: waiting
            # for no request pending would stop the server between them.
            begun = "Taking up the unfinished acceptance of the follow requests of 1 account(s)."
            done = "Took up the unfinished acceptance of the follow requests of 1 account(s)."
            for _ in range(600):
                if done in server.log():
                    break
                await asyncio.sleep(0.1)
            assert begun in server.log()
            assert done in server.log()
        assert await store.redis.zcard(store.keys.fans("owner")) == REQUESTS
        assert await store.redis.smembers(store.keys.accepting()) == set()
        assert [e.user_id for e in (await store.page(ListKind.FOLLOWING, "r0", first=5)).entries] == ["owner"]
