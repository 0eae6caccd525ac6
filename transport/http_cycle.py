"""The lean request-response cycle of the guarded HTTP protocol (transport/http_protocol.py), and
its joined writes of a response's head and body.

`Cycle` runs one request as uvicorn's RequestResponseCycle does (the same ASGI events, checks and
errors, tests/transport/test_http_cycle.py compares the bytes), for less work: the body is waited
for only when it has not arrived, response header names and values are each checked in one search,
and the server's own lines (date, server) are encoded once a second. `JoinedWrites` sends a
response's head with its body in one write. Both lean on uvicorn's internals (RequestResponseCycle,
STATUS_LINE): uvicorn is pinned to the minor versions tested.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, RequestResponseCycle
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

if TYPE_CHECKING:
    from followgraph.transport.http_protocol import GuardedHttpToolsProtocol

# What uvicorn refuses in a response header's name and value: checked for all the headers at once,
# over their names and their values joined (a bad byte is bad wherever it stands).
_BAD_NAME = re.compile(rb'[\x00-\x1f\x7f()<>@,;:\[\]={} \t\\"]')
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class ServerLines:
    """The server's own header lines (date, server), encoded once for each list uvicorn makes of
    them (once a second), not once a response."""

    __slots__ = ("_lines", "_of")

    def __init__(self) -> None:
        self._of: list[tuple[bytes, bytes]] | None = None
        self._lines = b""

    def __call__(self, defaults: list[tuple[bytes, bytes]]) -> bytes:
        if defaults is not self._of:
            self._lines = b"".join(b"%s: %s\r\n" % pair for pair in defaults)
            self._of = defaults
        return self._lines


server_lines = ServerLines()


class Cycle(RequestResponseCycle):
    """One request and its response, as uvicorn's RequestResponseCycle runs them (the same ASGI
    events, checks and errors), for less work: see the module docstring."""

    def __init__(self, protocol: GuardedHttpToolsProtocol, *, keep_alive: bool) -> None:
        # uvicorn's constructor is not called: it makes the Event this does without.
        self.scope = protocol.scope
        self.transport = protocol._joined or protocol.transport  # type: ignore[assignment]
        self.flow: FlowControl = protocol.flow
        self.logger = protocol.logger
        self.access_logger = protocol.access_logger
        self.access_log = protocol.access_log
        self.default_headers = protocol.server_state.default_headers
        self.on_response = protocol.on_response_complete
        self.loop = protocol.loop
        self.disconnected = False
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = protocol.expect_100_continue
        # The request body's chunks not yet received by the application, and their size.
        self.chunks: list[bytes] = []
        self.size = 0
        self.more_body = True
        # Whether something happened (a chunk, the body's end, a disconnection) that the
        # application has not received; the future its receive() waits on when not.
        self._news = False
        self._waiter: asyncio.Future[None] | None = None
        self.response_started = False
        self.response_complete = False
        self.chunked_encoding: bool | None = None
        self.expected_content_length = 0

    @property
    def message_event(self) -> Cycle:  # type: ignore[override]
        """uvicorn's connection_lost calls `message_event.set()`: the cycle is its own (a property,
        not an attribute: an attribute holding the cycle would make every request a reference
        cycle, kept until the garbage collector runs)."""
        return self

    def set(self) -> None:
        """Something for receive(): a chunk, the body's end, a disconnection or the response's end."""
        self._news = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def receive(self) -> Any:
        if self.waiting_for_100_continue and not self.transport.is_closing():
            self.transport.write(_CONTINUE)
            self.waiting_for_100_continue = False
        if not self.disconnected and not self.response_complete:
            self.flow.resume_reading()
            if not self._news:
                self._waiter = waiter = self.loop.create_future()
                await waiter
            self._news = False
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        chunks, self.chunks, self.size = self.chunks, [], 0
        # One chunk, the usual body, is handed over as it is, without a copy.
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        return {"type": "http.request", "body": body, "more_body": self.more_body}

    async def send(self, message: Any) -> None:
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        if self.disconnected:
            return
        if self.response_started:
            self._send_body(message)
            return
        if message["type"] != "http.response.start":
            raise RuntimeError(f"Expected ASGI message 'http.response.start', but got '{message['type']}'.")
        status = message["status"]
        head = self._head(status, message.get("headers", ()))
        # Started only once its head is known good: a bad header is answered 500, where uvicorn,
        # having started, closes the connection without an answer.
        self.response_started = True
        self.waiting_for_100_continue = False
        if self.access_log:
            self.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(self.scope),
                self.scope["method"],
                get_path_with_query_string(self.scope),
                self.scope["http_version"],
                status,
            )
        self.transport.write(head)

    def _head(self, status: int, headers: Any) -> bytes:
        """The status line and headers of the response; RuntimeError for a bad header, before
        anything of the cycle changed (so that its 500 goes out as any other answer)."""
        lines, names, values = [], [], []
        chunked: bool | None = None
        length = 0
        keep_alive, closing = self.keep_alive, False
        for name, value in headers:
            name = name.lower()
            if name == b"content-length" and chunked is None:
                length = int(value.decode())
                chunked = False
            elif name == b"transfer-encoding" and value.lower() == b"chunked":
                length = 0
                chunked = True
            elif name == b"connection" and b"close" in [t.lower().strip() for t in value.split(b",")]:
                keep_alive, closing = False, True
            lines.append(b"%s: %s\r\n" % (name, value))
            names.append(name)
            values.append(value)
        if _BAD_NAME.search(b"".join(names)):
            raise RuntimeError("Invalid HTTP header name.")
        if _BAD_VALUE.search(b"".join(values)):
            raise RuntimeError("Invalid HTTP header value.")
        head = [STATUS_LINE[status], server_lines(self.default_headers), *lines]
        if not keep_alive and not closing:
            head.append(b"connection: close\r\n")
        if chunked is None and self.scope["method"] != "HEAD" and status not in (204, 304):
            chunked = True  # neither content-length nor transfer-encoding
            head.append(b"transfer-encoding: chunked\r\n")
        head.append(b"\r\n")
        self.chunked_encoding, self.expected_content_length, self.keep_alive = chunked, length, keep_alive
        return b"".join(head)

    def _send_body(self, message: Any) -> None:
        if self.response_complete:
            raise RuntimeError(
                f"Unexpected ASGI message '{message['type']}' sent, after response already completed."
            )
        if message["type"] != "http.response.body":
            raise RuntimeError(f"Expected ASGI message 'http.response.body', but got '{message['type']}'.")
        body = message.get("body", b"")
        more_body = message.get("more_body", False)
        if self.scope["method"] == "HEAD":
            self.expected_content_length = 0
        elif self.chunked_encoding:
            chunk = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
            self.transport.write(chunk if more_body else chunk + b"0\r\n\r\n")
        else:
            if len(body) > self.expected_content_length:
                raise RuntimeError("Response content longer than Content-Length")
            self.expected_content_length -= len(body)
            self.transport.write(body)
        if more_body:
            return
        if self.expected_content_length != 0:
            raise RuntimeError("Response content shorter than Content-Length")
        self.response_complete = True
        self.set()
        if not self.keep_alive:
            self.transport.close()
        self.on_response()


class JoinedWrites:
    """The responses' view of a connection's transport: a write is held until the next one of the
    same turn of the event loop, and sent with it (a response's head with its body), or at the end
    of the turn. Everything else is the transport's own."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is None:
            self._held = bytes(data)
            self._loop.call_soon(self._send_held)
            return
        self._held = None
        self._transport.write(held + data)

    def _send_held(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self._send_held()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
