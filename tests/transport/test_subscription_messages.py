"""What a WebSocket client sends on /graphql: the message size limit (1009), the checks of a subscribe
payload shared with HTTP, and queries and mutations run by the HTTP endpoint's executor."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from followgraph.schema import QueryLimits
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from tests.conftest import TEST_SECRET
from tests.live import Live, serve_live
from tests.subscriber import Raw, raw

MESSAGE_TOO_BIG = 1009


@pytest.fixture
async def live(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Live]:
    redis = aioredis.Redis(unix_socket_path=str(redis_server.socket_path), decode_responses=True)
    await redis.flushall()
    settings = Settings(data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, database_url="off")
    try:
        async with serve_live(settings, redis) as served:
            await served.register("alice", "bob")
            yield served
    finally:
        await redis.aclose()


async def acked(socket: Raw, live: Live, user: str = "alice") -> None:
    await socket.init(live.token(user))
    assert (await socket.receive())["type"] == "connection_ack"


async def still_open(socket: Raw) -> bool:
    await socket.send({"type": "ping"})
    return (await socket.receive()) == {"type": "pong"}


async def answer(socket: Raw, payload: dict[str, Any], id: str = "1") -> dict[str, Any]:
    await socket.send({"id": id, "type": "subscribe", "payload": payload})
    return await socket.receive()


async def test_a_message_larger_than_the_body_limit_closes_the_socket_with_1009(live: Live) -> None:
    limit = live.settings.max_body_bytes
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        await socket.send({"type": "ping", "payload": {"pad": "x" * limit}})
        code, _ = await socket.closed()

    assert code == MESSAGE_TOO_BIG


async def test_a_message_within_the_body_limit_is_read(live: Live) -> None:
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        await socket.send({"type": "ping", "payload": {"pad": "x" * (live.settings.max_body_bytes // 2)}})
        assert await socket.receive() == {"type": "pong"}


@pytest.mark.parametrize(
    ("member", "value", "message"),
    [
        ("operationName", "x" * 900_000, "`operationName` is longer than 256 characters."),
        ("operationName", 1, "`operationName` must be a string."),
        ("extensions", 1, "`extensions` must be a JSON object."),
        ("extensions", [], "`extensions` must be a JSON object."),
        ("variables", "x", "`variables` must be a JSON object."),
    ],
    ids=["long-name", "name-not-string", "extensions-number", "extensions-array", "variables-string"],
)
async def test_a_subscribe_payload_gets_the_checks_of_http_as_an_error_for_its_id(
    live: Live, member: str, value: object, message: str
) -> None:
    payload = {"query": "subscription S { viewerEvents { eventId } }", member: value}
    over_http = await live.http.post(live.url, json=payload)
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        refused = await answer(socket, payload)
        open_after = await still_open(socket)

    assert refused == {
        "id": "1",
        "type": "error",
        "payload": [{"message": message, "extensions": {"code": "BAD_REQUEST"}}],
    }
    assert over_http.json()["errors"] == refused["payload"]
    assert open_after
    assert live.hub.subscribers == 0


async def test_a_malformed_subscribe_message_closes_with_4400_and_a_short_reason(live: Live) -> None:
    messages: list[object] = [
        {"id": "1", "type": "subscribe", "payload": 1},
        {"id": ["1"], "type": "subscribe", "payload": {"query": "{ viewer { userId } }"}},
        {"id": ["1"], "type": "complete"},
        {"type": "x" * 10_000},
        [],
    ]
    for message in messages:
        async with raw(live.ws_url) as socket:
            await acked(socket, live)
            await socket.connection.send(json.dumps(message))
            code, reason = await socket.closed()

        assert code == 4400, message
        assert reason is not None and len(reason.encode()) <= 123


async def test_a_reused_long_id_closes_with_4409_and_a_short_reason(live: Live) -> None:
    id = "i" * 10_000
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        await socket.send(
            {"id": id, "type": "subscribe", "payload": {"query": "subscription { viewerEvents { eventId } }"}}
        )
        await live.subscribers(1)
        await socket.send(
            {"id": id, "type": "subscribe", "payload": {"query": "subscription { viewerEvents { eventId } }"}}
        )
        code, reason = await socket.closed()

    assert code == 4409
    assert reason is not None and len(reason.encode()) <= 123


# Queries and mutations over WebSocket


async def test_a_query_over_websocket_runs_through_the_http_executor_and_learns_its_plan(live: Live) -> None:
    query = "query Me { viewer { userId } }"
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        first = await answer(socket, {"query": query, "operationName": "Me"})
        complete = await socket.receive()

    assert first == {"id": "1", "type": "next", "payload": {"data": {"viewer": {"userId": "alice"}}}}
    assert complete == {"id": "1", "type": "complete"}
    assert live.app.state.endpoint.executor.plan(query, "Me") is not None


async def test_a_mutation_over_websocket_runs(live: Live) -> None:
    mutation = 'mutation { follow(input: {userId: "bob"}) { changed } }'
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        done = await answer(socket, {"query": mutation})

    assert done["payload"] == {"data": {"follow": {"changed": True}}}
    assert await live.store.redis.zscore(live.store.keys.following("alice"), "bob") is not None


async def test_errors_over_websocket_carry_a_code_as_over_http(live: Live) -> None:
    cases: list[dict[str, Any]] = [
        {"query": "{ viewer { userId "},
        {"query": "{ viewer { nope } }"},
        {"query": "query A { viewer { userId } }", "operationName": "B"},
        {"query": 'query Q($x: Boolean!) { user(userId: "a") { userId } }', "variables": {"x": "no"}},
    ]
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        answers = [await answer(socket, payload, id=str(n)) for n, payload in enumerate(cases)]
        open_after = await still_open(socket)

    for n, (payload, received) in enumerate(zip(cases, answers, strict=True)):
        over_http = (await live.http.post(live.url, json=payload)).json()
        assert received["type"] == "error" and received["id"] == str(n), received
        assert received["payload"] == over_http["errors"], (received, over_http)
        assert all(error["extensions"]["code"] for error in received["payload"])
    assert open_after


# The error cap

MANY_BAD_VARIABLES = 200


def badly_typed_variables(operation: str = "query Q", field: str | None = None) -> dict[str, Any]:
    """An operation declaring MANY_BAD_VARIABLES `Boolean!` variables, each given a string."""
    names = [f"v{i}" for i in range(MANY_BAD_VARIABLES)]
    declared = ", ".join(f"${name}: Boolean!" for name in names)
    # Each is used once (an unused variable is a validation error), on a selection of its own.
    used = " ".join(f"__typename @include(if: ${name})" for name in names)
    selection = f"{field} {{ {used} }}" if field else used
    return {
        "query": f"{operation}({declared}) {{ {selection} }}",
        "variables": dict.fromkeys(names, "not a boolean"),
    }


async def test_a_subscription_with_many_bad_variables_gets_max_errors_and_one_more(live: Live) -> None:
    most = QueryLimits().max_errors
    payload = badly_typed_variables("subscription Q", "viewerEvents")
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        refused = await answer(socket, payload)

    assert refused["type"] == "error"
    assert len(refused["payload"]) == most + 1
    assert refused["payload"][-1]["message"] == f"Too many errors: only the first {most} are reported."


async def test_a_query_over_websocket_with_many_bad_variables_gets_max_errors_and_one_more(
    live: Live,
) -> None:
    most = QueryLimits().max_errors
    async with raw(live.ws_url) as socket:
        await acked(socket, live)
        refused = await answer(socket, badly_typed_variables())

    assert refused["type"] == "error"
    assert len(refused["payload"]) == most + 1
