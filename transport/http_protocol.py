"""uvicorn's httptools protocol with the read limits it lacks: header and body deadlines, header size.

uvicorn (0.55, pinned) arms its only timer, `timeout_keep_alive`, when a response completes, and
cancels it whenever a byte arrives. So a connection that never completes its first request's headers
has no timer at all and stays open for ever; so does one that trickles a byte now and then, headers
or a body that no route reads; and httptools joins the pieces of an unfinished header in memory,
however large it grows. `limit_concurrency` answers 503 only once a request's headers are in. This
protocol adds, per connection:

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
responses of a connection are written through its `JoinedWrites` (transport/http_cycle.py; one
per connection: they follow one another), which holds the head until the next write of that turn
and sends them together; at the end of the turn it sends whatever it still holds (a streamed
response, a 100 Continue), so nothing waits longer than the turn it was written in.

And it runs each request through a leaner request-response cycle than uvicorn's (`Cycle`, in
transport/http_cycle.py), with
the same ASGI events and the same bytes on the wire (tests/transport/test_http_cycle.py compares the
two). Per request, uvicorn arms a keep-alive timer when the response completes and cancels it when
the next request's first byte arrives; here the connection's one timer carries the keep-alive
deadline too. uvicorn makes an asyncio.Event for the body and checks each response header with two
regular expressions; here the body is waited for only when it has not arrived, the headers' names
and values are each checked in one search, and the server's own headers (date, server) are encoded
once a second, not once a request (uvicorn's own send cost a /graphql request about 4 µs more:
docs/performance.md, "The HTTP protocol"). One difference on purpose: a response header uvicorn refuses
is answered 500, where uvicorn closes the connection without an answer.
"""

from __future__ import annotations

import asyncio
import functools
import resource
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, service_unavailable
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from followgraph.transport.http_cycle import Cycle, JoinedWrites

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
        self._joined: JoinedWrites | None = None

    @classmethod
    def with_limits(cls, limits: ReadLimits) -> Any:
        """What uvicorn's `http=` option takes: this protocol bound to `limits` (picklable for workers)."""
        return functools.partial(cls, limits=limits, probes=_ProbeSlots())

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._joined = JoinedWrites(transport, self.loop)
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
        # What uvicorn's on_headers_complete does, with a Cycle for the request.
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
        self.cycle = cycle = Cycle(self, keep_alive=keep_alive)
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
        assert isinstance(cycle, Cycle)
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
        assert isinstance(cycle, Cycle)
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
