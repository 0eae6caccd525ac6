"""The guarded protocol (transport/http_protocol.py) answers as uvicorn's own does.

Each test feeds the same bytes to GuardedHttpToolsProtocol and to uvicorn's HttpToolsProtocol, each
over a recording transport, with the same application, and compares what they write: the guards,
the joined writes and the connection's one timer must not change a byte of an answer, errors
included. The keep-alive tests drive that timer with a short `timeout_keep_alive`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from followgraph.transport.http_protocol import GuardedHttpToolsProtocol, ReadLimits

App = Callable[[Any, Any, Any], Awaitable[None]]
GET = b"GET /path?q=1 HTTP/1.1\r\nhost: t\r\n\r\n"
DEFAULTS = [(b"date", b"Fri, 04 Dec 2026 12:00:00 GMT"), (b"server", b"uvicorn")]


class Transport:
    """What the protocols write, and whether they closed the connection."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        # Whether the server closed the connection before the client went away (both()).
        self.closed_by_server = False
        self.reading = True
        self.handed_to: Any = None

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def can_write_eof(self) -> bool:
        return False

    def set_protocol(self, protocol: Any) -> None:
        self.handed_to = protocol

    @property
    def output(self) -> bytes:
        return b"".join(self.writes)


def connect(kind: type[HttpToolsProtocol], app: App, **config: Any) -> tuple[HttpToolsProtocol, Transport]:
    loaded = Config(app=app, lifespan="off", proxy_headers=False, log_config=None, **config)
    loaded.load()
    state = ServerState()
    state.default_headers = DEFAULTS
    loop = asyncio.get_running_loop()
    if kind is GuardedHttpToolsProtocol:
        protocol: HttpToolsProtocol = GuardedHttpToolsProtocol(
            loaded, state, {}, loop, limits=ReadLimits(header_timeout=5.0, body_timeout=5.0)
        )
    else:
        protocol = kind(loaded, state, {}, loop)
    transport = Transport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


async def settle() -> None:
    """Let the application's task and the turn's held writes run."""
    for _ in range(10):
        await asyncio.sleep(0)


async def both(app: App, *chunks: bytes) -> tuple[Transport, Transport]:
    """Feed `chunks` to both protocols, one turn of the loop apart; their transports."""
    ours, theirs = connect(GuardedHttpToolsProtocol, app), connect(HttpToolsProtocol, app)
    for chunk in chunks:
        for protocol, _ in (ours, theirs):
            protocol.data_received(chunk)
        await settle()
    for protocol, transport in (ours, theirs):
        transport.closed_by_server = transport.closed
        protocol.connection_lost(None)
    return ours[1], theirs[1]


def answering(status: int, headers: list[tuple[bytes, bytes]], *bodies: bytes, more: bool = False) -> App:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for i, body in enumerate(bodies):
            last = i == len(bodies) - 1
            await send({"type": "http.response.body", "body": body, "more_body": more or not last})

    return app


@pytest.mark.parametrize(
    ("request_bytes", "app"),
    [
        (GET, answering(200, [(b"content-type", b"text/plain"), (b"content-length", b"5")], b"hello")),
        (GET, answering(200, [(b"Content-Type", b"text/plain")], b"chunk 1", b"chunk 2", b"")),
        (GET, answering(204, [])),
        (GET, answering(200, [(b"content-length", b"2"), (b"connection", b"close")], b"{}")),
        (b"HEAD / HTTP/1.1\r\nhost: t\r\n\r\n", answering(200, [(b"content-length", b"5")], b"hello")),
        (b"GET / HTTP/1.0\r\nhost: t\r\n\r\n", answering(200, [(b"content-length", b"2")], b"ok")),
        (GET + GET, answering(200, [(b"content-length", b"2")], b"ok")),
        (
            b"GET / HTTP/1.1\r\nhost: t\r\nconnection: upgrade\r\nupgrade: h2c\r\n\r\n",
            answering(200, [(b"content-length", b"2")], b"ok"),
        ),
        (GET, answering(200, [(b"content-length", b"5")], b"toolong")),
        (GET, answering(200, [(b"content-length", b"5")], b"no")),
        (GET, answering(200, [(b"content-length", b"2")], b"ok", b"more", more=False)),
    ],
    ids=[
        "content-length",
        "chunked",
        "no-content",
        "connection-close",
        "head",
        "http-1.0",
        "pipelined",
        "unsupported-upgrade",
        "body-too-long",
        "body-too-short",
        "sent-after-complete",
    ],
)
async def test_answers_byte_for_byte_as_uvicorn(request_bytes: bytes, app: App) -> None:
    ours, theirs = await both(app, request_bytes)
    assert theirs.output, "uvicorn answered nothing: the case tests nothing"
    assert ours.output == theirs.output
    assert ours.closed_by_server == theirs.closed_by_server


@pytest.mark.parametrize(
    "headers",
    [[(b"x-bad", b"a\r\nset-cookie: injected")], [(b"bad name", b"v")], [(b"x-nul", b"a\x00")]],
    ids=["header-injection", "bad-name", "nul-in-value"],
)
async def test_a_bad_header_closes_the_connection_without_an_answer_as_uvicorn_does(
    headers: list[tuple[bytes, bytes]],
) -> None:
    ours, theirs = await both(answering(200, [(b"content-length", b"0"), *headers], b""), GET)
    assert ours.output == theirs.output == b""
    assert ours.closed_by_server and theirs.closed_by_server


async def test_a_body_in_chunks_reaches_the_application_whole() -> None:
    received: list[list[tuple[bytes, bool]]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        messages = []
        while True:
            message = await receive()
            messages.append((message["body"], message["more_body"]))
            if not message["more_body"]:
                break
        received.append(messages)
        body = b"".join(chunk for chunk, _ in messages)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"%d" % len(body))],
            }
        )
        await send({"type": "http.response.body", "body": body})

    head = b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 11\r\n\r\n"
    ours, theirs = await both(app, head + b"hello", b" ", b"world")
    assert ours.output == theirs.output
    assert ours.output.endswith(b"\r\n\r\nhello world")
    # The same messages too: a chunk each turn, the last without more_body.
    assert received[0] == received[1] == [(b"hello", True), (b" ", True), (b"world", False)]


async def test_100_continue_goes_out_when_the_application_first_reads() -> None:
    head = b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 2\r\nexpect: 100-continue\r\n\r\n"
    app = answering(200, [(b"content-length", b"2")], b"ok")
    ours, theirs = await both(app, head, b"{}")
    assert ours.output == theirs.output
    assert ours.output.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")


async def test_a_client_gone_while_the_application_waits_for_the_body_is_a_disconnect() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["type"])
        seen.append((await receive())["type"])

    protocol, _ = connect(GuardedHttpToolsProtocol, app)
    protocol.data_received(b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 4\r\n\r\nab")
    await settle()
    protocol.connection_lost(None)
    await settle()
    assert seen == ["http.request", "http.disconnect"]


async def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout() -> None:
    app = answering(200, [(b"content-length", b"2")], b"ok")
    protocol, transport = connect(GuardedHttpToolsProtocol, app, timeout_keep_alive=0.2)
    protocol.data_received(GET)
    await settle()
    assert transport.output.startswith(b"HTTP/1.1 200 OK") and not transport.closed
    await asyncio.sleep(0.1)
    protocol.data_received(GET)  # used again before the timeout: kept
    await settle()
    await asyncio.sleep(0.15)
    assert not transport.closed
    await asyncio.sleep(0.2)
    assert transport.closed
    assert transport.output.count(b"HTTP/1.1 200 OK") == 2


async def test_a_request_begun_before_the_keep_alive_timeout_gets_its_header_deadline() -> None:
    app = answering(200, [(b"content-length", b"2")], b"ok")
    protocol, transport = connect(GuardedHttpToolsProtocol, app, timeout_keep_alive=0.1)
    protocol.data_received(GET)
    await settle()
    protocol.data_received(b"GET / HTTP/1.1\r\n")  # half a request: its header deadline (5 s) rules
    await asyncio.sleep(0.3)
    assert not transport.closed
    protocol.data_received(b"host: t\r\n\r\n")
    await settle()
    assert transport.output.count(b"HTTP/1.1 200 OK") == 2


async def test_a_connection_answered_before_its_body_arrived_rests_once_the_body_is_in() -> None:
    """uvicorn's keep-alive timer is cancelled by the body's bytes and not armed again; here the
    connection gets its keep-alive deadline once the body is in."""

    async def early(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    protocol, transport = connect(GuardedHttpToolsProtocol, early, timeout_keep_alive=0.2)
    protocol.data_received(b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 4\r\n\r\nab")
    await settle()
    assert transport.output.startswith(b"HTTP/1.1 413 ")
    protocol.data_received(b"cd")
    await asyncio.sleep(0.4)
    assert transport.closed


async def test_a_websocket_upgrade_is_handed_to_the_websocket_protocol_as_uvicorn_hands_it() -> None:
    upgrade = (
        b"GET /graphql HTTP/1.1\r\nhost: t\r\nconnection: Upgrade\r\nupgrade: websocket\r\n"
        b"sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    app = answering(200, [(b"content-length", b"2")], b"ok")
    handed = []
    for kind in (GuardedHttpToolsProtocol, HttpToolsProtocol):
        protocol, transport = connect(kind, app)
        protocol.data_received(upgrade)
        await settle()
        assert b"400" not in transport.output
        handed.append(type(transport.handed_to))
    assert handed[0] is handed[1] is not type(None)
