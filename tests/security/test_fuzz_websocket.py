"""Fuzzing the WebSocket side of /graphql: generated connection_init and subscribe messages, other
protocol messages with anything in them, and raw text and binary frames, a few to a socket.

Whatever arrives, the server answers by the graphql-transport-ws protocol (ack, pong, next, error,
complete; every error with an `extensions.code` and none masked) or closes the socket with one of
the protocol's close codes and a reason that fits a close frame; it logs no error, and another
socket is served afterwards.

As in test_fuzz.py, Hypothesis drives a plain test function and the server (a real uvicorn, which
the WebSocket needs) lives on a private event loop that every example reuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, note
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from tests.conftest import TEST_SECRET, clean_redis
from tests.live import Live, serve_live
from tests.security.helpers import MASKED_MESSAGE
from tests.security.test_fuzz import FUZZ, JSON_VALUES, USERS

PROTOCOL = Subprotocol("graphql-transport-ws")
# The protocol's close codes (4400 bad message, 4401 subscribe before ack, 4403 forbidden, 4408 no
# connection_init in time, 4409 duplicate id, 4429 second connection_init or too many sockets),
# and 1009 for a message past the size limit.
CLOSE_CODES = frozenset({1009, 4400, 4401, 4403, 4408, 4409, 4429})
SERVER_TYPES = frozenset({"connection_ack", "ping", "pong", "next", "error", "complete"})
MAX_REASON = 123

DOCUMENTS = st.sampled_from(
    [
        "subscription S { viewerEvents { eventId kind actor { userId } } }",
        "subscription S($after: String) { viewerEvents(after: $after) { eventId } }",
        "query Q { viewer { userId following(first: 2) { nodes { userId } } } }",
        'query { user(userId: "u1") { userId fansCount } }',
        'mutation M { follow(input: {userId: "u2"}) { changed } }',
        'mutation { block(input: {userId: "u3"}) { changed } }',
        "{ __typename }",
        "subscription { viewerEvents { eventId } } query Q { __typename }",
        "{",
        "",
    ]
)
IDS = st.one_of(*[st.sampled_from(["1", "2", "3"])] * 6, st.text(max_size=8), JSON_VALUES)


@dataclass
class Harness:
    runner: asyncio.Runner
    live: Live
    stack: AsyncExitStack
    errors: list[logging.LogRecord] = field(default_factory=list)

    def run(self, coroutine: Any) -> Any:
        return self.runner.run(coroutine)


class Errors(logging.Handler):
    """Keeps the ERROR records logged while it is installed."""

    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.ERROR)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def harness(redis_server: RedisServer, data_dir: Path) -> Iterator[Harness]:
    settings = Settings(
        data_dir=data_dir,
        jwt_secret=TEST_SECRET,
        database_url="off",
        follow_rate_limit="off",
        ws_max_subscriptions=3,
        ws_init_timeout=2.0,
        max_body_bytes=20_000,
    )
    with asyncio.Runner() as runner:

        async def start() -> Harness:
            stack = AsyncExitStack()
            redis = await clean_redis(redis_server, stack)
            live = await stack.enter_async_context(serve_live(settings, redis))
            await live.register(*USERS)
            return Harness(runner, live, stack)

        fixture = runner.run(start())
        handler = Errors(fixture.errors)
        logging.getLogger().addHandler(handler)
        try:
            yield fixture
        finally:
            logging.getLogger().removeHandler(handler)
            runner.run(fixture.stack.aclose())


def frames(token: str) -> st.SearchStrategy[str | bytes]:
    """One frame: a protocol message with anything in its members, or raw text or bytes."""
    authorization = st.one_of(
        st.just(f"Bearer {token}"),
        st.just(f"Bearer {token}x"),
        st.text(max_size=30),
        JSON_VALUES,
    )
    init_payloads = st.one_of(
        st.fixed_dictionaries({}, optional={"Authorization": authorization, "authorization": authorization}),
        JSON_VALUES,
    )
    request_like = st.fixed_dictionaries(
        {"query": st.one_of(DOCUMENTS, DOCUMENTS, DOCUMENTS, JSON_VALUES)},
        optional={
            "variables": st.one_of(st.just({"after": "0-0"}), JSON_VALUES),
            "operationName": st.one_of(st.sampled_from(["S", "Q", "M", "x" * 300]), JSON_VALUES),
            "extensions": JSON_VALUES,
        },
    )
    subscribe_payloads = st.one_of(
        request_like,
        request_like,
        request_like,
        st.fixed_dictionaries(
            {},
            optional={
                "query": st.one_of(DOCUMENTS, DOCUMENTS, JSON_VALUES),
                "variables": st.one_of(st.just({"after": "0-0"}), JSON_VALUES),
                "operationName": st.one_of(st.sampled_from(["S", "Q", "M", "x" * 300]), JSON_VALUES),
                "extensions": JSON_VALUES,
            },
        ),
        JSON_VALUES,
    )
    init = st.fixed_dictionaries({"type": st.just("connection_init")}, optional={"payload": init_payloads})
    subscribe = st.fixed_dictionaries(
        {"type": st.just("subscribe"), "id": IDS, "payload": subscribe_payloads}
    )
    others = st.fixed_dictionaries(
        {"type": st.sampled_from(["complete", "ping", "pong"])}, optional={"id": IDS, "payload": JSON_VALUES}
    )
    junk = st.one_of(
        st.dictionaries(st.sampled_from(["type", "id", "payload"]), JSON_VALUES, max_size=3).map(json.dumps),
        JSON_VALUES.map(json.dumps),
        st.text(max_size=40),
        st.binary(max_size=40),
    )
    # Mostly protocol messages, so that examples get past the first frame; junk now and then.
    protocol = st.one_of(init, *[subscribe] * 5, others, others).map(json.dumps)
    return st.one_of(protocol, protocol, protocol, protocol, protocol, protocol, protocol, junk)


def check_error(error: Any, message: Any) -> None:
    assert isinstance(error, dict), message
    assert error.get("message") != MASKED_MESSAGE, message
    assert isinstance(error.get("extensions", {}).get("code"), str), message


def check_message(raw: str | bytes) -> dict[str, Any]:
    """A server message that follows the protocol."""
    assert isinstance(raw, str), raw
    message = orjson.loads(raw)
    assert isinstance(message, dict) and message.get("type") in SERVER_TYPES, message
    if message["type"] == "error":
        assert isinstance(message["payload"], list) and message["payload"], message
        for error in message["payload"]:
            check_error(error, message)
    if message["type"] == "next":
        for error in message["payload"].get("errors", []):
            check_error(error, message)
    return message


async def exchange(live: Live, sent: list[str | bytes], init_first: bool) -> tuple[int | None, list[str]]:
    """Send the frames, then a ping; read until the pong (and a little after) or the close."""
    received: list[str] = []
    async with connect(live.ws_url, subprotocols=[PROTOCOL], max_size=None) as socket:
        if init_first:
            init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {live.token('u0')}"}}
            await socket.send(json.dumps(init))
        try:
            for frame in sent:
                await socket.send(frame)
            await socket.send(json.dumps({"type": "ping"}))
            async with asyncio.timeout(5):
                while True:
                    message = check_message(await socket.recv())
                    received.append(message["type"])
                    if message["type"] == "pong":
                        break
            # Operations still running answer a little later.
            with contextlib.suppress(TimeoutError):
                while True:
                    async with asyncio.timeout(0.05):
                        received.append(check_message(await socket.recv())["type"])
        except ConnectionClosed as closed:
            return closing(closed, socket), received
    return None, received


def closing(closed: ConnectionClosed, socket: ClientConnection) -> int:
    """The server's close code, which must be the protocol's, with a reason that fits the frame."""
    frame = closed.rcvd
    assert frame is not None, f"the server dropped the socket without a close frame ({closed})"
    assert frame.code in CLOSE_CODES, frame
    assert len(frame.reason.encode()) <= MAX_REASON, frame
    return frame.code


async def still_serving(live: Live) -> None:
    """Another socket: acknowledged, and a query answered."""
    async with connect(live.ws_url, subprotocols=[PROTOCOL]) as socket:
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {live.token('u1')}"}}
        await socket.send(json.dumps(init))
        await socket.send(
            json.dumps({"id": "1", "type": "subscribe", "payload": {"query": "{ __typename }"}})
        )
        async with asyncio.timeout(5):
            answers = [orjson.loads(await socket.recv()) for _ in range(3)]
    assert [answer["type"] for answer in answers] == ["connection_ack", "next", "complete"], answers
    assert answers[1]["payload"] == {"data": {"__typename": "Query"}}


def test_random_websocket_messages(redis_server: RedisServer, tmp_path: Path) -> None:
    with harness(redis_server, tmp_path / "data") as h:
        token = h.live.token("u0")
        closes: dict[int | None, int] = {}

        @hypothesis_settings(FUZZ, max_examples=200)
        @given(
            sent=st.lists(frames(token), min_size=1, max_size=5),
            init_first=st.sampled_from([True, True, True, False]),
        )
        def check(sent: list[str | bytes], init_first: bool) -> None:
            code, received = h.run(exchange(h.live, sent, init_first))
            note(f"closed with {code}, after {received}")
            closes[code] = closes.get(code, 0) + 1
            h.run(still_serving(h.live))
            assert not h.errors, [record.getMessage() for record in h.errors]
            assert not h.live.task.done()

        check()
        # The examples reached both sides: sockets closed by the protocol, and sockets kept open.
        assert None in closes and 4400 in closes, closes
