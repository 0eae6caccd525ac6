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
for the client to read, where /graphql sends both in the same turn of the event loop. Each request's
cycle (uvicorn's own RequestResponseCycle) writes through its connection's `JoinedWrites`, which
holds the head until the next write of that turn and sends them together; at the end of the turn it
sends whatever it still holds (a streamed response, a 100 Continue), so nothing waits longer than the
turn it was written in.

The request cycle is uvicorn's: a leaner copy of it saved 1 to 1.5 µs of a request's CPU
(docs/architecture.md, "The HTTP protocol guards"), not enough to own a copy of uvicorn's response
code. What this module relies on of uvicorn's internals (the protocol's callbacks and attributes,
the cycle's `transport`) is pinned by the minor version and checked by tests/test_internals.py.
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
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
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
                self._handed_over()
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
        if self._over_cap() and self._probe_path():
            self._admit_probe()
        else:
            super().on_headers_complete()
        if self.cycle is not None:
            # Made just now (its task has not run yet), or the one before (an upgrade makes none).
            self.cycle.transport = self._joined  # type: ignore[assignment]

    def _probe_path(self) -> bool:
        """Whether the request whose headers are in asks for a probe's path."""
        path = httptools.parse_url(self.url).path.decode("ascii")
        return (unquote(path) if "%" in path else path) in PROBE_PATHS

    def _admit_probe(self) -> None:
        """Run a probe's request beyond the cap: in a probe slot, on a connection closed after it.
        uvicorn's on_headers_complete reads the cap and the app as it makes the request's cycle."""
        app, limit, before = self.app, self.limit_concurrency, self.cycle
        self.app, self.limit_concurrency = functools.partial(self._probes.run, app), None
        try:
            super().on_headers_complete()
        finally:
            self.app, self.limit_concurrency = app, limit
        if self.cycle is not before:  # an upgrade makes no cycle
            self.cycle.keep_alive = False

    def on_message_complete(self) -> None:
        self._deadline = None
        self._in_headers = True
        self._header_bytes = 0
        self._message_done = True
        cycle = self.cycle
        upgrade = self.parser.should_upgrade() and self._should_upgrade()
        super().on_message_complete()
        if not upgrade and cycle.response_complete:  # answered before its body was read
            self._rest()

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

    def _handed_over(self) -> None:
        """The connection is the WebSocket protocol's now: drop what keeps this one alive. The parser
        refers back to this protocol, a cycle that uvicorn breaks in connection_lost, which an
        upgraded connection never reaches; left, it gave each closed WebSocket's first protocol,
        transport and socket to the cyclic collector, once this timer had fired."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.parser = None  # type: ignore[assignment]

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


class JoinedWrites:
    """The view of a connection's transport its responses write through: a write is held until the
    next one of the same turn of the event loop, and sent with it (a response's head with its body),
    or at the end of the turn. Everything else is the transport's own."""

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
