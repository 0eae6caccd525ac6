"""uvicorn's httptools protocol with the read limits it lacks: header and body deadlines, header size.

uvicorn (0.54) arms its only timer, `timeout_keep_alive`, when a response completes, and cancels
it whenever a byte arrives. So a connection that never completes its first request's headers has
no timer at all and stays open for ever; so does one that trickles a byte now and then, headers or
a body that no route reads; and httptools joins the pieces of an unfinished header in memory,
however large it grows. `limit_concurrency` answers 503 only once a request's headers are in.
This protocol adds, per connection:

- a header deadline: a request's headers (the first one's counted from the connection) must arrive
  within `header_timeout`, or the connection is closed (408 when part of a request came);
- a body deadline: the whole request must arrive within `body_timeout` of its first byte;
- a header size limit: beyond `max_header_bytes`, 431 and the connection is closed;
- past `max_connections`, a new connection gets a short deadline (uvicorn's `limit_concurrency`,
  set to the same number, answers its request with 503), and a WebSocket upgrade is answered 503
  too. uvicorn counts an open WebSocket among the connections but upgrades whatever the count, so
  a flood of sockets took every connection and /healthz was 503 for everyone (#36).

The probes, /healthz and /readyz, are answered beyond the cap: a liveness probe failing under a
flood would make a restart loop of it. Up to PROBE_SLOTS of their requests run at a time beyond the
cap (more are 503), each on a connection closed after its answer. The slots count requests in
progress, not connections: connections beyond the cap are counted too while they wait for their
503, so a flood keeps the count past any margin kept for probes. The path is compared only once
the cap is reached: a request under it pays nothing for this. (A port of their own would work too,
but every deployment's probes would have to move to it.)

One timer per connection carries both deadlines and is re-armed only when it fires, so a request
costs a clock read and a few attribute writes, not a timer of its own.

It also sends a response's head and body in one write. uvicorn writes the head when the app sends
`http.response.start` and the body at `http.response.body`: two send() calls, and two TCP segments
for the client to read, where /graphql sends both in the same turn of the event loop. The
responses of a connection are written through its `_JoinedWrites` (one per connection: they follow
one another), which holds the head until the next write of that turn and sends them together;
at the end of the turn it sends whatever it still holds (a streamed response, a 100 Continue), so
nothing waits longer than the turn it was written in.

And it runs each request through a leaner request-response cycle than uvicorn's (`_Cycle`), with
the same ASGI events and the same bytes on the wire (tests/transport/test_http_cycle.py compares the
two). Per request, uvicorn arms a keep-alive timer when the response completes and cancels it when
the next request's first byte arrives; here the connection's one timer carries the keep-alive
deadline too. uvicorn makes an asyncio.Event for the body and checks each response header with two
regular expressions; here the body is waited for only when it has not arrived, the headers' names
and values are each checked in one search, and the server's own headers (date, server) are encoded
once a second, not once a request (uvicorn's own send cost a /graphql request about 4 µs more:
README, "Security and limits"). One difference on purpose: a response header uvicorn refuses
is answered 500, where uvicorn closes the connection without an answer.
"""

from __future__ import annotations

import asyncio
import functools
import re
import resource
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, FlowControl, service_unavailable
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string
from uvicorn.server import ServerState

# A connection beyond the cap may wait this long for its request (to answer it 503), not longer.
OVER_CAP_GRACE = 1.0
# After answering a refused request, read and drop what the client still sends for this long at
# most, so that its answer is not lost to a reset (closing with unread data sends RST).
LINGER = 2.0
# Open files kept for everything but client connections: Redis, logs, the metrics port.
FD_RESERVE = 256
# The paths answered beyond the connection cap, and how many of their requests may run at once
# beyond it (a probe takes about a millisecond; /readyz at most its 2 s wait for Redis).
PROBE_PATHS = frozenset({"/healthz", "/readyz"})
PROBE_SLOTS = 8


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """What a client may take to send a request, and how large its headers may be."""

    header_timeout: float = 5.0
    body_timeout: float = 10.0
    max_header_bytes: int = 32_768
    max_connections: int = 10_000


class _HeadersTooLargeError(Exception):
    pass


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with ReadLimits; see the module docstring."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: ReadLimits,
        probes: _ProbeSlots | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        # The server's probe slots (`with_limits` makes one per server); a protocol made alone has its own.
        self._probes = probes if probes is not None else _ProbeSlots()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0  # loop time the timer fires at
        # When the request being read must be complete (headers, then body); None between requests.
        self._deadline: float | None = None
        self._began = 0.0
        self._in_headers = True
        self._header_bytes = 0
        self._chunk_bytes = 0
        self._message_done = False
        self._discarding = False
        self._joined: _JoinedWrites | None = None

    @classmethod
    def with_limits(cls, limits: ReadLimits) -> Any:
        """What uvicorn's `http=` option takes: this protocol bound to `limits` (picklable for workers)."""
        return functools.partial(cls, limits=limits, probes=_ProbeSlots())

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._joined = _JoinedWrites(transport, self.loop)
        wait = self.limits.header_timeout
        if len(self.connections) >= self.limits.max_connections:  # as uvicorn counts for its 503
            wait = min(wait, OVER_CAP_GRACE)
        self._deadline = self.loop.time() + wait
        self._arm(self._deadline)

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return
        self._unset_keepalive_if_required()
        self._message_done = False
        self._chunk_bytes = len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _HeadersTooLargeError):
                self._reject(431, "Request header fields too large.")
                return
            self.logger.warning("Invalid HTTP request received.")
            self.send_400_response("Invalid HTTP request received.")
            return
        except httptools.HttpParserUpgrade:
            if not self._should_upgrade():
                self._unsupported_upgrade_warning()
            elif self._over_cap():
                self.logger.warning("Exceeded concurrency limit.")
                self._reject(503, "Too many connections: try again later.")
            else:
                self.handle_websocket_upgrade()
            return
        # A chunk that ends inside headers is all header bytes, unless a request ended in it (then
        # the next one's first bytes go uncounted: at most one chunk, 256 kB with uvloop).
        if self._in_headers and not self._message_done:
            self._header_bytes += len(data)
            if self._header_bytes > self.limits.max_header_bytes:
                self._reject(431, "Request header fields too large.")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._began = self.loop.time()
        self._in_headers = True
        self._deadline = self._began + self.limits.header_timeout
        # The timer may be set for a previous request's later body deadline: bring it forward.
        if self._timer is None or self._timer_at > self._deadline:
            self._arm(self._deadline)

    def on_headers_complete(self) -> None:
        # Headers that end in the chunk that crossed the limit were not counted yet: count them.
        if self._header_bytes + self._chunk_bytes > self.limits.max_header_bytes:
            size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
            if size > self.limits.max_header_bytes:
                raise _HeadersTooLargeError
        self._in_headers = False
        self._header_bytes = 0
        self._deadline = self._began + self.limits.body_timeout
        # What uvicorn's on_headers_complete does, with a _Cycle for the request.
        parser, scope = self.parser, self.scope
        http_version = parser.get_http_version()
        scope["method"] = parser.get_method().decode("ascii")
        if http_version != "1.1":
            scope["http_version"] = http_version
        if parser.should_upgrade() and self._should_upgrade():
            return
        url = httptools.parse_url(self.url)
        raw_path = url.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = unquote(path)
        scope["path"] = self.root_path + path
        scope["raw_path"] = self.root_path.encode("ascii") + raw_path if self.root_path else raw_path
        scope["query_string"] = url.query or b""
        app: Any = self.app
        keep_alive = http_version != "1.0" and parser.should_keep_alive()
        limit = self.limit_concurrency
        # _over_cap(), inline: this runs for every request.
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            if path in PROBE_PATHS:
                app, keep_alive = functools.partial(self._probes.run, app), False
            else:
                app = service_unavailable
                self.logger.warning("Exceeded concurrency limit.")
        existing = self.cycle
        self.cycle = cycle = _Cycle(self, keep_alive=keep_alive)
        if existing is None or existing.response_complete:
            self._start_asgi_task(cycle, app)
        else:  # a pipelined request waits for the one before to be answered
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, app))

    def on_body(self, body: bytes) -> None:
        if self.parser.should_upgrade() and self._should_upgrade():
            return  # a WebSocket's first bytes, not a body (and no cycle was made)
        cycle = self.cycle
        if cycle.response_complete:
            return
        assert isinstance(cycle, _Cycle)
        cycle.chunks.append(body)
        cycle.size += len(body)
        if cycle.size > HIGH_WATER_LIMIT:
            self.flow.pause_reading()
        cycle.set()

    def on_message_complete(self) -> None:
        self._deadline = None
        self._in_headers = True
        self._header_bytes = 0
        self._message_done = True
        if self.parser.should_upgrade() and self._should_upgrade():
            return  # no cycle was made: the connection becomes a WebSocket
        cycle = self.cycle
        if cycle.response_complete:  # answered before its body was read: the connection rests
            self._rest()
            return
        assert isinstance(cycle, _Cycle)
        cycle.more_body = False
        cycle.set()

    def on_response_complete(self) -> None:
        """The response is sent: start the next pipelined request, or wait `timeout_keep_alive`
        for one (on the connection's timer, where uvicorn arms a timer of its own each time)."""
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
        else:
            self._rest()

    def _rest(self) -> None:
        """Close the connection if no request begins within `timeout_keep_alive` (unless one
        has begun already, and has its own deadline)."""
        if self._deadline is None:
            self._deadline = self.loop.time() + self.timeout_keep_alive
            if self._timer is None or self._timer_at > self._deadline:
                self._arm(self._deadline)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)

    def _over_cap(self) -> bool:
        """Whether the server holds `limit_concurrency` connections or requests, as uvicorn counts
        them for its 503 (this connection among them)."""
        limit = self.limit_concurrency
        return limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit)

    def _on_timer(self) -> None:
        self._timer = None
        if self._deadline is None or self.transport.is_closing():
            return
        if self._deadline > self.loop.time():
            self._arm(self._deadline)
            return
        if self._in_headers and self._header_bytes == 0:
            self.transport.close()  # nothing of a request came: nothing to answer
            return
        self._reject(408, "The request did not arrive in time.")

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = self.loop.call_at(at, self._on_timer)

    def _reject(self, status: int, message: str) -> None:
        """Answer `status` to a request whose headers are arriving, and close the connection.
        A request whose headers were read has a cycle, which answers it (or has answered it
        already, before its body arrived): the connection closes without a second answer."""
        if self._discarding or self.transport.is_closing():
            return
        if self.cycle is None or (self._in_headers and self.cycle.response_complete):
            body = message.encode()
            self.transport.write(
                b"".join(
                    [
                        STATUS_LINE[status],
                        b"content-type: text/plain; charset=utf-8\r\n",
                        b"content-length: %d\r\n" % len(body),
                        b"connection: close\r\n\r\n",
                        body,
                    ]
                )
            )
            if self.transport.can_write_eof():
                self._discarding = True
                self.transport.write_eof()
                self.flow.resume_reading()
                # The connection closes when the client closes its side (eof_received), or then.
                self.loop.call_later(LINGER, self.transport.close)
                return
        self.transport.close()


class _ProbeSlots:
    """The probes' requests running beyond the connection cap: at most PROBE_SLOTS at a time.

    Counted while the request runs, not from when it was read: a request never run (its
    connection lost while it waited behind another) takes no slot."""

    __slots__ = ("busy",)

    def __init__(self) -> None:
        self.busy = 0

    async def run(self, app: Any, scope: Any, receive: Any, send: Any) -> None:
        if self.busy >= PROBE_SLOTS:
            await service_unavailable(scope, receive, send)
            return
        self.busy += 1
        try:
            await app(scope, receive, send)
        finally:
            self.busy -= 1


# What uvicorn refuses in a response header's name and value: checked for all the headers at once,
# over their names and their values joined (a bad byte is bad wherever it stands).
_BAD_NAME = re.compile(rb'[\x00-\x1f\x7f()<>@,;:\[\]={} \t\\"]')
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class _ServerLines:
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


_server_lines = _ServerLines()


class _Cycle(RequestResponseCycle):
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
    def message_event(self) -> _Cycle:  # type: ignore[override]
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
        head = [STATUS_LINE[status], _server_lines(self.default_headers), *lines]
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


class _JoinedWrites:
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


def connection_cap(wanted: int) -> int:
    """Raise this process's open-file limit to its hard limit; `wanted`, or less if it does not fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1_048_576)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - FD_RESERVE))
