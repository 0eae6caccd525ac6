"""The WebSocket endpoint's refusals and operations: bad and expired tokens (4403), subscribe before
ack (4401), the caps per connection and per user, a subscriber that falls behind, the gauges,
pings, and 1001 on shutdown. On the real Redis server; the caps do not depend on the backend."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from gql.transport.exceptions import TransportQueryError
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin, Subprotocol

from followgraph.server.settings import Settings
from followgraph.store.graph.events import Event, EventKind
from tests.conftest import TEST_SECRET
from tests.live import Live, serve_live
from tests.subscriber import listen, raw

GRAPHQL_TRANSPORT_WS = Subprotocol("graphql-transport-ws")
FOLLOW = "mutation Follow($id: ID!) { follow(input: {userId: $id}) { changed } }"


def limited(tmp_path: Path, **changes: object) -> Settings:
    base = Settings(data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, database_url="off")
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


@pytest.fixture
async def live(real_redis: aioredis.Redis, tmp_path: Path) -> AsyncIterator[Live]:
    settings = limited(
        tmp_path,
        ws_max_subscriptions=2,
        ws_max_connections_per_user=2,
        subscription_buffer=5,
        ws_ping_seconds=0.2,
    )
    async with serve_live(settings, real_redis) as served:
        await served.register("alice", "bob")
        yield served


async def test_an_expired_token_closes_the_connection_with_4403(live: Live) -> None:
    expired = live.token("alice", now=datetime.now(UTC) - timedelta(hours=2))
    async with raw(live.ws_url) as socket:
        await socket.init(expired)
        code, reason = await socket.closed()

    assert (code, reason) == (4403, "The token has expired.")


async def test_a_malformed_token_closes_with_4403_and_says_why(live: Live) -> None:
    async with raw(live.ws_url) as socket:
        await socket.init("not-a-jwt")
        code, reason = await socket.closed()

    assert code == 4403
    assert reason and "token" in reason.lower()


async def test_a_token_that_expires_while_connected_closes_the_socket_then(live: Live) -> None:
    # exp one second past the 30 s leeway from now: accepted, and closed about a second later.
    leeway = live.settings.auth_config().leeway_seconds
    token = live.token("alice", now=datetime.now(UTC) - timedelta(seconds=3600 + leeway - 1))
    async with raw(live.ws_url) as socket:
        await socket.init(token)
        assert (await socket.receive())["type"] == "connection_ack"
        code, reason = await socket.closed(timeout=5)

    assert (code, reason) == (4403, "The token has expired.")


async def test_subscribe_before_connection_init_is_4401(live: Live) -> None:
    async with raw(live.ws_url) as socket:
        await socket.subscribe("1")
        code, _ = await socket.closed()

    assert code == 4401


async def test_a_third_subscription_on_one_connection_is_refused_with_the_limit(live: Live) -> None:
    async with raw(live.ws_url) as socket:
        await socket.init(live.token("alice"))
        assert (await socket.receive())["type"] == "connection_ack"
        for id in ("1", "2", "3"):
            await socket.subscribe(id)
        refused = await socket.receive()
        await live.subscribers(2)

    assert refused["id"] == "3" and refused["type"] == "error"
    [error] = refused["payload"]
    assert error["message"] == "Too many subscriptions on this connection: at most 2. Complete one first."
    assert error["extensions"] == {"code": "TOO_MANY_SUBSCRIPTIONS"}


async def test_a_third_connection_of_one_user_is_closed_with_4429(live: Live) -> None:
    async with raw(live.ws_url) as one, raw(live.ws_url) as two, raw(live.ws_url) as three:
        for socket in (one, two):
            await socket.init(live.token("alice"))
            assert (await socket.receive())["type"] == "connection_ack"
        await three.init(live.token("alice"))
        code, reason = await three.closed()
        async with raw(live.ws_url) as other_user:
            await other_user.init(live.token("bob"))
            bob_acked = (await other_user.receive())["type"]

    assert (code, reason) == (4429, "Too many connections for this user: at most 2 per server process.")
    assert bob_acked == "connection_ack"


async def test_a_subscriber_that_falls_behind_is_ended_with_a_clear_error(live: Live) -> None:
    async with listen(live.ws_url, live.token("bob")) as bob:
        await live.subscribers(1)
        # More events than its buffer (5) arrive at once, before its task can take any.
        for n in range(8):
            live.hub.dispatch(Event(f"{n + 1}-0", EventKind.FOLLOW, "alice", "bob", 1))
        error = await bob.error()

    assert isinstance(error, TransportQueryError) and error.errors is not None
    assert error.errors[0]["extensions"]["code"] == "SUBSCRIPTION_FELL_BEHIND"
    assert "fell behind" in error.errors[0]["message"] and "`after`" in error.errors[0]["message"]
    await live.subscribers(0)


async def test_the_gauges_count_connections_and_subscriptions(live: Live) -> None:
    async def gauges() -> tuple[float, float]:
        text = (await live.http.get(f"http://127.0.0.1:{live.port}/metrics")).text
        values = dict(line.split() for line in text.splitlines() if line and not line.startswith("#"))
        return float(values["followgraph_ws_connections"]), float(values["followgraph_subscriptions"])

    async with listen(live.ws_url, live.token("bob")), listen(live.ws_url, live.token("alice")):
        await live.subscribers(2)
        during = await gauges()
    await live.subscribers(0)
    # The connections gauge drops when the server has finished closing each socket: wait for it.
    async with asyncio.timeout(10):
        while (after := await gauges()) != (0.0, 0.0):
            await asyncio.sleep(0.05)

    assert during == (2.0, 2.0)
    assert after == (0.0, 0.0)


async def test_the_server_pings_and_the_socket_stays_open(live: Live) -> None:
    async with raw(live.ws_url) as socket:
        await socket.init(live.token("alice"))
        assert (await socket.receive())["type"] == "connection_ack"
        ping = await socket.receive(timeout=2)
        await socket.send({"type": "pong"})
        again = await socket.receive(timeout=2)

    assert ping == again == {"type": "ping"}


async def test_shutdown_closes_sockets_with_1001_going_away(live: Live) -> None:
    async with raw(live.ws_url) as socket:
        await socket.init(live.token("bob"))
        assert (await socket.receive())["type"] == "connection_ack"
        await socket.subscribe("1")
        await live.subscribers(1)
        stopping = asyncio.create_task(live.stop())
        code, _ = await socket.closed()
        await stopping

    assert code == 1001


async def test_a_subscription_over_http_is_400_and_points_to_websocket(live: Live) -> None:
    response = await live.http.post(
        live.url,
        json={"query": "subscription S { viewerEvents { eventId } }"},
        headers={"authorization": f"Bearer {live.token('alice')}"},
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["message"].startswith("Subscriptions run over WebSocket")


async def test_a_subscription_document_gets_the_same_query_limits_as_over_http(live: Live) -> None:
    depth = live.settings.max_depth
    nested = "userId"
    for _ in range(depth):
        nested = f"following(first: 1) {{ nodes {{ {nested} }} }}"
    query = f"subscription Deep {{ viewerEvents {{ actor {{ {nested} }} }} }}"
    async with raw(live.ws_url) as socket:
        await socket.init(live.token("alice"))
        assert (await socket.receive())["type"] == "connection_ack"
        await socket.send(
            {"id": "1", "type": "subscribe", "payload": {"query": query, "operationName": "Deep"}}
        )
        refused = await socket.receive()

    assert refused["type"] == "error", refused
    assert refused["payload"][0]["message"] == f"The query is nested deeper than {depth} levels."
    assert live.hub.subscribers == 0


async def test_a_browser_page_on_another_origin_cannot_open_a_socket(live: Live) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(
            live.ws_url, subprotocols=[GRAPHQL_TRANSPORT_WS], origin=Origin("http://evil.test")
        ):
            pass

    assert refused.value.response.status_code == 403
