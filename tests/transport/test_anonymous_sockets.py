"""Sockets without a token (#36): they may run queries for FOLLOWGRAPH_WS_ANONYMOUS_SECONDS, then
close with 4401; with 0 they are refused at connection_init; beyond
FOLLOWGRAPH_WS_MAX_ANONYMOUS_CONNECTIONS on a process, 4429. None of these applies to a socket with
a token. On the real Redis server, through a real uvicorn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import redis.asyncio as aioredis

from followgraph.server.settings import Settings
from tests.conftest import TEST_SECRET
from tests.live import Live, serve_live
from tests.subscriber import Raw, raw

GRACE = 0.5
NEEDED = "A token is needed to stay connected past 0.5 s: send Authorization in connection_init's payload."


@asynccontextmanager
async def served(redis: aioredis.Redis, tmp_path: Path, **env: str) -> AsyncIterator[Live]:
    variables = {f"FOLLOWGRAPH_{name.upper()}": value for name, value in env.items()}
    settings = Settings.from_env(
        variables, data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, database_url="off"
    )
    async with serve_live(settings, redis) as live:
        await live.register("alice")
        yield live


async def init_anonymously(socket: Raw) -> None:
    await socket.send({"type": "connection_init", "payload": {}})


async def test_an_anonymous_socket_runs_queries_then_is_closed_with_4401_after_the_grace(
    real_redis: aioredis.Redis, tmp_path: Path
) -> None:
    async with (
        served(real_redis, tmp_path, ws_anonymous_seconds=str(GRACE)) as live,
        raw(live.ws_url) as socket,
    ):
        await init_anonymously(socket)
        assert (await socket.receive())["type"] == "connection_ack"
        await socket.send(
            {"id": "1", "type": "subscribe", "payload": {"query": '{ user(userId: "alice") { userId } }'}}
        )
        answer = await socket.receive()
        code, reason = await socket.closed(timeout=GRACE + 5)

    assert answer == {"id": "1", "type": "next", "payload": {"data": {"user": {"userId": "alice"}}}}
    assert (code, reason) == (4401, NEEDED)


async def test_a_socket_with_a_token_outlives_the_grace(real_redis: aioredis.Redis, tmp_path: Path) -> None:
    async with (
        served(real_redis, tmp_path, ws_anonymous_seconds=str(GRACE), ws_ping_seconds="0") as live,
        raw(live.ws_url) as anonymous,
        raw(live.ws_url) as authenticated,
    ):
        await init_anonymously(anonymous)
        await authenticated.init(live.token("alice"))
        assert (
            (await anonymous.receive())["type"] == (await authenticated.receive())["type"] == "connection_ack"
        )
        code, _ = await anonymous.closed(timeout=GRACE + 5)
        await authenticated.send({"type": "ping"})
        pong = await authenticated.receive()
        await authenticated.send(
            {"id": "1", "type": "subscribe", "payload": {"query": "{ viewer { userId } }"}}
        )
        viewer = await authenticated.receive()

    assert code == 4401
    assert pong == {"type": "pong"}
    assert viewer["payload"] == {"data": {"viewer": {"userId": "alice"}}}


async def test_with_no_grace_an_anonymous_socket_is_refused_at_connection_init(
    real_redis: aioredis.Redis, tmp_path: Path
) -> None:
    async with served(real_redis, tmp_path, ws_anonymous_seconds="0") as live:
        async with raw(live.ws_url) as socket:
            await init_anonymously(socket)
            code, reason = await socket.closed()
        async with raw(live.ws_url) as socket:
            await socket.init(live.token("alice"))
            acked = (await socket.receive())["type"]

    assert (code, reason) == (
        4401,
        "A token is needed to stay connected: send Authorization in connection_init's payload.",
    )
    assert acked == "connection_ack"


async def test_anonymous_sockets_beyond_the_cap_are_closed_with_4429(
    real_redis: aioredis.Redis, tmp_path: Path
) -> None:
    async with (
        served(real_redis, tmp_path, ws_max_anonymous_connections="2") as live,
        raw(live.ws_url) as one,
        raw(live.ws_url) as two,
        raw(live.ws_url) as three,
        raw(live.ws_url) as authenticated,
    ):
        for socket in (one, two):
            await init_anonymously(socket)
            assert (await socket.receive())["type"] == "connection_ack"
        await init_anonymously(three)
        code, reason = await three.closed()
        await authenticated.init(live.token("alice"))
        acked = (await authenticated.receive())["type"]
        await one.send({"type": "ping"})  # a socket under the cap stays open
        pong = await one.receive()

    assert (code, reason) == (
        4429,
        "Too many connections without a token: at most 2 per server process: "
        "send Authorization in connection_init's payload.",
    )
    assert acked == "connection_ack"
    assert pong == {"type": "pong"}
