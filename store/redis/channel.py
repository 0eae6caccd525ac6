"""The read channel: one Redis connection per process for the read path, pipelined automatically.

redis-py takes a connection from its pool, packs, writes, reads and releases it for every call;
on a page of 20 fans that bookkeeping was a third of the server's CPU time (bench/benchmarks.md).
The read channel instead keeps one connection open and writes everything the request handlers
queued during one turn of the event loop in a single send (what ioredis calls auto-pipelining);
hiredis packs the commands and parses the replies, which come back in order and are handed to
their callers in order.

It runs reads only (the page and facts scripts, which change nothing), so a call that lost its
connection is sent once more on a new one. Writes stay on redis-py's pooled client. The channel
speaks to a single Redis over TCP or a Unix socket, and by default keeps the profiles it reads on a
second connection (store/redis/keeping_channel.py); a Redis Cluster gets one per master node
(store/redis/cluster_channel.py; store/redis/channels.py `open_reads` picks); for TLS or an
in-memory fake there is none and the store reads through redis-py.

Failures:
- a call with no reply within `timeout` seconds fails with redis-py's TimeoutError, and the
  connection is dropped (later replies could no longer be matched to their callers), failing the
  other calls waiting on it with a ConnectionError; the next call connects again;
- a caller that gives up (its request cancelled) leaves its place in the queue: its replies are
  read and dropped when they come, so the others still get theirs;
- replies that are errors are raised as the exceptions redis-py raises for them (NoScriptError
  for NOSCRIPT, MovedError for MOVED, ResponseError for the rest...), built by redis-py's own
  table, so callers choose by type.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

import hiredis
from redis._parsers.base import BaseParser
from redis.asyncio import Redis
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
from redis.asyncio.sentinel import SentinelManagedConnection
from redis.exceptions import ConnectionError, NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from followgraph.store.redis.lua import Arg, Client, KeyedRead, ScriptCall
from followgraph.store.redis.spans import READ_CHANNEL, RoundTrips

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

log = logging.getLogger(__name__)

Command = Sequence[Arg]
DEFAULT_TIMEOUT = 1.0

# The same reads come again and again (a hot page's users' profiles, on a cluster one command
# each): their packed bytes are kept rather than packed anew, 0.1 µs a command instead of 0.6.
PACKED_COMMANDS = 8192
_pack = lru_cache(maxsize=PACKED_COMMANDS)(hiredis.pack_command)


@dataclass(frozen=True, slots=True)
class Address:
    """Where the channel connects, and how it logs in."""

    host: str = "127.0.0.1"
    port: int = 6379
    path: str | None = None  # a Unix socket, instead of host and port
    db: int = 0
    username: str | None = None
    password: str | None = None


class LoginRefused(ConnectionError):
    """Redis answered a new connection's first commands with an error (a wrong password, a command
    the user may not run)."""


class Reads(Protocol):
    """What the store reads through: a single Redis' channel or a cluster's."""

    async def run_scripts(self, calls: Sequence[ScriptCall]) -> list[Any]: ...

    @property
    def keeps(self) -> bool:
        """Whether the replies of cacheable keyed reads are kept until Redis says they changed
        (store/redis/tracking.py), so that the store reads profiles one key at a time."""
        ...

    async def aclose(self) -> None: ...


class KeyedReads(Protocol):
    """What bulk reads of many keys (exports) go through: a single Redis' channel or a cluster's."""

    async def run_keyed(self, read: KeyedRead, keys: Sequence[str]) -> list[Any]:
        """The reply of `read` of each of `keys`, read now (none kept), in one round trip (the
        nodes of a cluster at once)."""
        ...

    async def aclose(self) -> None: ...


class PendingCall:
    """The replies of one call's commands, as they arrive."""

    __slots__ = ("expected", "future", "replies", "sent_at")

    def __init__(self, future: asyncio.Future[list[Any]], expected: int, sent_at: float) -> None:
        self.future = future
        self.expected = expected
        self.replies: list[Any] = []
        self.sent_at = sent_at


class ChannelProtocol(asyncio.Protocol):
    def __init__(self, timeout: float, on_send: Callable[[], None] | None) -> None:
        # Error replies become the exceptions redis-py would raise for them.
        self.reader = hiredis.Reader(encoding="utf-8", replyError=BaseParser.parse_error)
        self.waiting: deque[PendingCall] = deque()
        self.queued: list[bytes] = []
        self.transport: asyncio.Transport | None = None
        self.lost: Exception | None = None
        self.timeout = timeout
        # One timer per connection watches the oldest call, rather than a timeout per call.
        self.timer: asyncio.TimerHandle | None = None
        self.on_send = on_send

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        waiting = self.waiting
        while waiting and (reply := self.reader.gets()) is not False:
            call = waiting[0]
            call.replies.append(reply)
            if len(call.replies) == call.expected:
                waiting.popleft()
                if not call.future.done():
                    call.future.set_result(call.replies)

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(ConnectionError(f"Redis closed the read channel's connection{f': {exc}' if exc else ''}."))

    def fail(self, error: Exception, *, late_before: float | None = None) -> None:
        """Fail every call waiting, and every later one, with `error`; drop the connection. Calls
        sent before `late_before` fail with a TimeoutError instead."""
        if self.lost is None:
            self.lost = error
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        late = RedisTimeoutError(f"Redis did not answer the read channel within {self.timeout:g} s.")
        while self.waiting:
            call = self.waiting.popleft()
            if not call.future.done():
                too_late = late_before is not None and call.sent_at <= late_before
                call.future.set_exception(late if too_late else error)
        if self.transport is not None:
            self.transport.abort()

    def _watch(self) -> None:
        self.timer = None
        if not self.waiting or self.lost is not None:
            return
        loop = asyncio.get_running_loop()
        deadline = self.waiting[0].sent_at + self.timeout
        now = loop.time()
        if now < deadline:
            self.timer = loop.call_at(deadline, self._watch)
            return
        # Replies come in order: with the oldest call unanswered, none behind it can be matched.
        self.fail(ConnectionError("The read channel's connection timed out."), late_before=now - self.timeout)

    def send(self, commands: Sequence[Command]) -> asyncio.Future[list[Any]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Any]] = loop.create_future()
        if self.lost is not None:
            future.set_exception(self.lost)
            return future
        now = loop.time()
        self.queue(commands, PendingCall(future, len(commands), now))
        return future

    def queue(self, commands: Sequence[Command], call: PendingCall) -> None:
        """Queue `commands` for the next write, their replies for `call`."""
        if not self.queued:
            asyncio.get_running_loop().call_soon(self._flush)
        self.queued += [_pack(tuple(command)) for command in commands]
        self.waiting.append(call)
        if self.timer is None:
            self.timer = asyncio.get_running_loop().call_at(call.sent_at + self.timeout, self._watch)

    def _flush(self) -> None:
        if self.lost is not None or self.transport is None:
            return
        self.transport.write(b"".join(self.queued))
        self.queued.clear()
        if self.on_send is not None:
            self.on_send()


async def settle(futures: Sequence[asyncio.Future[Any]]) -> None:
    """Wait until every one of `futures` is done, whatever each ends with (its caller looks at
    them all after), and cancel them all when the wait itself is cancelled. Awaited one after the
    other: replies sent in the same turn of the event loop arrive in the same turns, so this wakes
    its caller about once, where asyncio.wait costs a waiter, a callback per future and a timer.
    No timer of its own is needed: each connection fails its calls when Redis does not answer.
    (A try, not contextlib.suppress: its object cost a cluster page 0.6% of its instructions.)"""
    try:
        for future in futures:
            if not future.done():
                try:
                    await future
                except Exception:  # the caller looks at it
                    pass
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def connection_lost(futures: Sequence[asyncio.Future[Any]]) -> bool:
    """Whether one of the settled `futures` lost its connection (the read is sent again); any
    other error of theirs is raised."""
    for future in futures:
        error = future.exception()
        if isinstance(error, ConnectionError):
            return True
        if error is not None:
            raise error
    return False


def script_commands(calls: Sequence[ScriptCall]) -> list[Command]:
    """The EVALSHA commands of script calls."""
    return [script.command(keys, args) for script, keys, args in calls]


def script_loads(calls: Sequence[ScriptCall]) -> list[Command]:
    """The SCRIPT LOAD commands of the scripts of `calls` that Redis must know."""
    sources = dict.fromkeys(script.source for script, _, _ in calls if script.needs_loading)
    return [("SCRIPT", "LOAD", source) for source in sources]


def login_of(
    client: Client, timeout: float | None = None
) -> tuple[Address, float, Callable[[], None] | None] | None:
    """Where a read channel to the Redis `client` talks to connects and how it logs in, the
    timeout of its reads (`timeout`, else the client's), and what counts its writes; None when the
    client is not a plain single Redis over TCP or a Unix socket (a cluster, TLS, a fake, or a
    primary found through Sentinel, whose address changes with a failover: redis-py asks the
    sentinels again)."""
    if not isinstance(client, Redis):
        return None
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    kind = pool.connection_class
    path: str | None = None
    if issubclass(kind, UnixDomainSocketConnection):
        path = str(kwargs["path"])
    elif not issubclass(kind, Connection) or kind.__module__.startswith("fakeredis"):
        return None
    elif issubclass(kind, SentinelManagedConnection):
        return None
    elif issubclass(kind, SSLConnection):
        return None
    if not kwargs.get("decode_responses"):
        return None  # the store reads str replies
    address = Address(
        host=str(kwargs.get("host", "127.0.0.1")),
        port=int(kwargs.get("port", 6379)),
        path=path,
        db=int(kwargs.get("db", 0) or 0),
        username=kwargs.get("username"),
        password=kwargs.get("password"),
    )
    wait = timeout if timeout is not None else kwargs.get("socket_timeout") or DEFAULT_TIMEOUT
    # A connection class that counts its writes (tests and the benchmark count round trips)
    # counts the channel's too.
    counter = getattr(kind, "count_send", None)
    return address, float(wait), counter


class ReadChannel:
    """Runs commands in one round trip each, sharing one connection with every other caller."""

    def __init__(
        self,
        address: Address,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        on_send: Callable[[], None] | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.address = address
        self.timeout = timeout
        self.on_send = on_send
        # Each call's round trip gets a span when tracing is on (store/redis/spans.py).
        self.spans = (
            None
            if tracer is None
            else RoundTrips(
                tracer,
                READ_CHANNEL,
                address=address.path or address.host,
                port=None if address.path else address.port,
                db=address.db,
            )
        )
        self._protocol: ChannelProtocol | None = None
        self._connecting: asyncio.Task[ChannelProtocol] | None = None
        self._closed = False

    @classmethod
    def for_client(
        cls, client: Client, *, timeout: float | None = None, tracer: Tracer | None = None
    ) -> ReadChannel | None:
        """A channel to the Redis `client` talks to, logged in as it is; None when the client is not
        a plain single Redis over TCP or a Unix socket (see `login_of`)."""
        login = login_of(client, timeout)
        if login is None:
            return None
        address, wait, counter = login
        return cls(address, timeout=wait, on_send=counter, tracer=tracer)

    def run(self, commands: Sequence[Command]) -> Coroutine[Any, Any, list[Any]]:
        """The replies of `commands`, sent together; a reply that is an error is raised. Sent once
        more on a new connection when the connection is lost before the replies came. (The
        coroutine itself when its round trip gets no span: a coroutine around it would cost every
        read a frame.)"""
        if self.spans is None:
            return self._run(commands)
        return self.spans.around(self._run(commands), lambda: [command[0] for command in commands])

    async def _run(self, commands: Sequence[Command]) -> list[Any]:
        if not commands:
            return []
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            protocol = await self._connected()
        try:
            replies = await protocol.send(commands)
        except ConnectionError:
            replies = await (await self._connected()).send(commands)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    async def run_scripts(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """The replies of script calls in one round trip, loading the scripts when Redis does not
        know them (a restarted or flushed server)."""
        commands = script_commands(calls)
        try:
            return await self.run(commands)
        except NoScriptError:
            await self.run(script_loads(calls))
            return await self.run(commands)

    def run_keyed(self, read: KeyedRead, keys: Sequence[str]) -> Coroutine[Any, Any, list[Any]]:
        """The reply of `read` of each of `keys`, read now (none kept), in one round trip."""
        return self.run(read.commands(keys))

    @property
    def connected(self) -> bool:
        return self._protocol is not None and self._protocol.lost is None

    @property
    def keeps(self) -> bool:
        """Whether it keeps replies: not this one (store/redis/keeping_channel.py's does)."""
        return False

    def send_now(self, commands: Sequence[Command]) -> asyncio.Future[list[Any]] | None:
        """Queue `commands` on the open connection without waiting: the future of their replies,
        error replies among them as exceptions, not raised. None when the channel is not connected
        (`run` connects). The connection's timer fails the future when Redis does not answer in
        time; a caller that stops waiting may cancel it, and its replies are dropped as they come."""
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            return None
        return protocol.send(commands)

    async def _connected(self) -> ChannelProtocol:
        protocol = self._protocol
        if protocol is not None and protocol.lost is None:
            return protocol
        if self._closed:
            raise ConnectionError("The read channel is closed.")
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._connect())
        try:
            return await asyncio.shield(self._connecting)
        finally:
            if self._connecting is not None and self._connecting.done():
                self._connecting = None

    def _new_protocol(self) -> ChannelProtocol:
        return ChannelProtocol(self.timeout, self.on_send)

    def _login(self) -> list[Command]:
        """The commands a new connection sends first."""
        address = self.address
        login: list[Command] = []
        if address.password is not None:
            login.append(
                ("AUTH", address.password)
                if address.username is None
                else ("AUTH", address.username, address.password)
            )
        if address.db:
            login.append(("SELECT", address.db))
        return login

    async def _connect(self) -> ChannelProtocol:
        loop = asyncio.get_running_loop()
        address = self.address
        try:
            async with asyncio.timeout(self.timeout):
                if address.path is not None:
                    _, protocol = await loop.create_unix_connection(self._new_protocol, address.path)
                else:
                    _, protocol = await loop.create_connection(self._new_protocol, address.host, address.port)
                if login := self._login():
                    for reply in await protocol.send(login):
                        if isinstance(reply, Exception):
                            protocol.fail(ConnectionError(str(reply)))
                            raise LoginRefused(f"The read channel could not log in: {reply}")
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(f"The read channel could not connect to Redis: {exc}") from exc
        self._protocol = protocol
        return protocol

    async def aclose(self) -> None:
        self._closed = True
        if self._protocol is not None:
            self._protocol.fail(ConnectionError("The read channel is closed."))
            self._protocol = None
