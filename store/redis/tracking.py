"""Profiles kept in the server process, Redis saying when one changes (client-side caching).

A page of 20 fans shows 20 users' names, and reading their profiles was most of what the page cost
Redis: on one Redis a script call that runs 21 HMGETs and hands their replies through Lua, on a
cluster up to 20 HMGETs on three nodes, whose commands were most of what a cluster page cost the
server beyond a page on one Redis (docs/performance.md has the figures).
Profiles change rarely, and a hot page shows the same users again and again. So the read channel
(each master node's, on a cluster) gets a second connection, which speaks RESP3 with
`CLIENT TRACKING ON`: Redis remembers the keys read on it and, when one of them changes (written,
deleted, expired, evicted, moved away with its slot, flushed), pushes an invalidation on that same
connection. The replies read on it are kept until then.

Read-your-writes holds. Redis queues a write's invalidation on the tracking connection before the
write's own reply goes out, so it is ahead of the reply to anything sent on that connection after
the write returned. A read therefore sends at least one command to each node whose kept replies it
uses (a PING when it has all of them, which the reads queued in the same write share) and takes
them when that command's reply arrives, after every invalidation sent before it (or later: a
reader of several nodes waits for each one's PING with `fence` and then takes them itself). A
reply invalidated in between is not guessed at: the read fails with ProfileChanged, and the caller
reads again without the cache.

Only plain reads of one key go on this connection (lua.KeyedRead with `cacheable`): under RESP3
some script replies change type (Lua's false becomes a boolean), so the scripts stay on the RESP2
connection. When the connection is lost, invalidations sent to it may be lost too, so what it kept
goes with it: the next connection starts empty. Where Redis refuses HELLO 3 or CLIENT TRACKING (an
ACL without the CLIENT command, a managed service that turns tracking off), the connection is not
made (TrackingRefused) and the channel reads profiles without keeping them.

Every process keeps its own copy and hears of every change on its own connection, so the rule
above holds across processes: once a write's reply has come back to whoever wrote it (another
server process, a script run by hand), a read that any process begins afterwards sees it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hiredis import PushNotification
from redis.exceptions import ConnectionError

from followgraph.store.redis.channel import (
    DEFAULT_TIMEOUT,
    Address,
    ChannelProtocol,
    Command,
    LoginRefused,
    PendingCall,
    ReadChannel,
)
from followgraph.store.redis.lua import KeyedRead

# Profiles kept per connection (per process on one Redis, per master node on a cluster), by
# default: about 0.5 kB each in the server (470 B measured for a short name and no avatar URL, 560
# B with a 40-character one: the key, the HMGET reply and the entry), so some 10 MB; Redis'
# tracking table remembers each key read on a tracking connection (about 145 B a key measured,
# up to its tracking-table-max-keys, 1M by default, past which it invalidates some).
DEFAULT_CAPACITY = 20_000
_PING: Command = ("PING",)


class ProfileChanged(Exception):
    """A kept reply was invalidated while its read waited for the node: read it again."""


class TrackingRefused(LoginRefused):
    """Redis refused the tracking connection's HELLO 3 or CLIENT TRACKING (an ACL without them, a
    managed service that turns them off): nothing can be kept on that node."""


@dataclass(slots=True)
class CacheStats:
    """What the kept replies saved, over every connection of a channel."""

    hits: int = 0
    misses: int = 0
    invalidations: int = 0
    changed: int = 0


class _Kept:
    """One connection's replies by key, the oldest dropped past `capacity`."""

    __slots__ = ("capacity", "replies", "stats")

    def __init__(self, capacity: int, stats: CacheStats) -> None:
        self.capacity = capacity
        self.stats = stats
        self.replies: OrderedDict[str, Any] = OrderedDict()

    def put(self, key: str, reply: Any) -> None:
        replies = self.replies
        if key not in replies and len(replies) >= self.capacity:
            replies.popitem(last=False)
        replies[key] = reply

    def invalidate(self, keys: list[str] | None) -> None:
        """Forget `keys`; all of them for None (Redis flushed, or dropped its tracking table)."""
        self.stats.invalidations += 1
        if keys is None:
            self.replies.clear()
            return
        pop = self.replies.pop
        for key in keys:
            pop(key, None)


class _Read(PendingCall):
    """The replies of one keyed read of `asked` keys, some of them kept: the commands sent are
    those of the others (`keys`)."""

    __slots__ = ("asked", "keys")

    def __init__(
        self, future: asyncio.Future[list[Any]], sent_at: float, asked: Sequence[str], keys: list[str]
    ) -> None:
        super().__init__(future, len(keys), sent_at)
        self.asked = asked
        # The key each sent command's reply is kept under.
        self.keys = keys

    def finish(self, kept: OrderedDict[str, Any]) -> list[Any]:
        """The replies in the order asked, the kept ones taken now, after every invalidation sent
        before the last reply; an error reply, or ProfileChanged, alone."""
        replies = self.replies
        for reply in replies:
            if isinstance(reply, Exception):
                return [reply]
        read = dict(zip(self.keys, replies, strict=True))
        get = kept.get
        return _checked([read[key] if key in read else get(key) for key in self.asked])


class Fences:
    """One future for fences on several tracking connections (a read of profiles kept on several
    cluster nodes): done when each connection's PING is answered, failed when one fails."""

    __slots__ = ("future", "left")

    def __init__(self, future: asyncio.Future[list[Any]], connections: int) -> None:
        self.future = future
        self.left = connections

    def arrived(self) -> None:
        self.left -= 1
        if not self.left and not self.future.done():
            self.future.set_result([])

    def failed(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)


class _Barrier(PendingCall):
    """A PING that the reads queued in the same write share, each of whose keys were all kept:
    when its reply comes, each read's future gets them as they are then (and each Fences hears
    that this connection's PING was answered)."""

    __slots__ = ("fences", "reads")

    def __init__(self, future: asyncio.Future[list[Any]], sent_at: float) -> None:
        super().__init__(future, 1, sent_at)
        self.reads: list[tuple[asyncio.Future[list[Any]], Sequence[str]]] = []
        self.fences: list[Fences] = []
        # Should the PING fail (a lost connection, a timeout), so do the reads.
        future.add_done_callback(self._failed)

    def finish(self, kept: OrderedDict[str, Any]) -> None:
        get = kept.get
        for future, keys in self.reads:
            if not future.done():
                future.set_result(_checked([get(key) for key in keys]))
        for fences in self.fences:
            fences.arrived()

    def _failed(self, future: asyncio.Future[list[Any]]) -> None:
        error = None if future.cancelled() else future.exception()
        if error is None:
            return
        for read, _ in self.reads:
            if not read.done():
                read.set_exception(error)
        for fences in self.fences:
            fences.failed(error)


def _checked(replies: list[Any]) -> list[Any]:
    """`replies`, or ProfileChanged alone when a kept one went missing (invalidated) meanwhile."""
    if None in replies:
        return [ProfileChanged("A profile changed while it was read.")]
    return replies


class _TrackingProtocol(ChannelProtocol):
    def __init__(self, timeout: float, on_send: Callable[[], None] | None, kept: _Kept) -> None:
        super().__init__(timeout, on_send)
        self.kept = kept
        # The PING queued for the write to come, shared by the reads queued with it.
        self.barrier: _Barrier | None = None

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        waiting = self.waiting
        kept = self.kept
        while (reply := reader.gets()) is not False:
            if type(reply) is PushNotification:
                if len(reply) == 2 and reply[0] == "invalidate":
                    kept.invalidate(reply[1])
                continue
            if not waiting:
                self.fail(ConnectionError("Redis sent the tracking connection a reply nobody asked for."))
                return
            call = waiting[0]
            replies = call.replies
            # Kept as it arrives: an invalidation that comes after it must find it.
            if isinstance(call, _Read) and not isinstance(reply, Exception):
                kept.put(call.keys[len(replies)], reply)
            replies.append(reply)
            if len(replies) == call.expected:
                waiting.popleft()
                if isinstance(call, _Barrier):
                    call.finish(kept.replies)
                if not call.future.done():
                    call.future.set_result(call.finish(kept.replies) if isinstance(call, _Read) else replies)

    def _flush(self) -> None:
        # Reads queued from now on go out in a later write: they need a PING of their own.
        self.barrier = None
        super()._flush()

    def read(self, read: KeyedRead, keys: Sequence[str]) -> asyncio.Future[list[Any]]:
        """The replies of `read` of `keys`, kept ones among them; at least one command goes out
        after the read began (see the module's docstring)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Any]] = loop.create_future()
        if self.lost is not None:
            future.set_exception(self.lost)
            return future
        kept = self.kept.replies
        missing = [key for key in keys if key not in kept]
        stats = self.kept.stats
        stats.misses += len(missing)
        stats.hits += len(keys) - len(missing)
        if missing:
            commands = read.commands(missing)
            self.queue(commands, _Read(future, loop.time(), keys, missing))
            return future
        self._barrier(loop).reads.append((future, keys))
        return future

    def fence(self, fences: Fences) -> None:
        """Tell `fences` when a PING queued now (shared with everything queued in this turn of the
        event loop) is answered: every invalidation Redis sent before the PING ran has then
        arrived, so what is kept from then on is right."""
        if self.lost is not None:
            fences.failed(self.lost)
        else:
            self._barrier(asyncio.get_running_loop()).fences.append(fences)

    def _barrier(self, loop: asyncio.AbstractEventLoop) -> _Barrier:
        barrier = self.barrier
        if barrier is None:
            barrier = self.barrier = _Barrier(loop.create_future(), loop.time())
            self.queue([_PING], barrier)
        return barrier


class TrackedChannel(ReadChannel):
    """A read channel whose connection keeps the replies of cacheable reads until Redis says their
    key changed, `capacity` of them at most."""

    def __init__(
        self,
        address: Address,
        *,
        capacity: int = DEFAULT_CAPACITY,
        timeout: float = DEFAULT_TIMEOUT,
        on_send: Callable[[], None] | None = None,
        stats: CacheStats | None = None,
    ) -> None:
        super().__init__(address, timeout=timeout, on_send=on_send)
        self.capacity = capacity
        self.stats = stats if stats is not None else CacheStats()

    def _new_protocol(self) -> ChannelProtocol:
        return _TrackingProtocol(self.timeout, self.on_send, _Kept(self.capacity, self.stats))

    def _login(self) -> list[Command]:
        address = self.address
        hello: list[Any] = ["HELLO", 3]
        if address.password is not None:
            hello += ["AUTH", address.username or "default", address.password]
        login: list[Command] = [tuple(hello), ("CLIENT", "TRACKING", "ON")]
        if address.db:
            login.append(("SELECT", address.db))
        return login

    async def _connect(self) -> ChannelProtocol:
        try:
            return await super()._connect()
        except LoginRefused as exc:
            raise TrackingRefused(str(exc)) from exc

    def kept_now(self) -> dict[str, Any] | None:
        """The replies the open connection keeps, by key (to read, not to change), None when it is
        not open: a reply taken from them is right once a `fence` queued after the read began is
        done."""
        protocol = self._protocol
        if not isinstance(protocol, _TrackingProtocol) or protocol.lost is not None:
            return None
        return protocol.kept.replies

    def fence(self, fences: Fences) -> bool:
        """The open connection's `_TrackingProtocol.fence`; False when it is not open."""
        protocol = self._protocol
        if not isinstance(protocol, _TrackingProtocol) or protocol.lost is not None:
            return False
        protocol.fence(fences)
        return True

    def read_now(self, read: KeyedRead, keys: Sequence[str]) -> asyncio.Future[list[Any]] | None:
        """`send_now` for a keyed read: the future of its replies (an error reply, or
        ProfileChanged, alone in them), or None when the channel is not connected."""
        protocol = self._protocol
        if not isinstance(protocol, _TrackingProtocol) or protocol.lost is not None:
            return None
        return protocol.read(read, keys)

    async def read(self, read: KeyedRead, keys: Sequence[str]) -> list[Any]:
        """The replies of `read` of `keys`, connecting first when needed, and once more on a new
        connection when this one is lost; an error reply (or ProfileChanged) is raised."""
        try:
            replies = await _tracking(await self._connected()).read(read, keys)
        except ConnectionError:
            replies = await _tracking(await self._connected()).read(read, keys)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies


def _tracking(protocol: ChannelProtocol) -> _TrackingProtocol:
    assert isinstance(protocol, _TrackingProtocol)  # TrackedChannel makes no other
    return protocol
