"""The read channel on a Redis Cluster: one auto-pipelined connection per master node.

A page of 20 fans reads their profiles with one HMGET each on the user's own slot (and counts with
one script call per slot), up to 20 commands on 3 nodes; through redis-py's cluster pipeline each
costs a command object, a node lookup and a pooled connection, and that bookkeeping held a cluster
page to about half of one Redis' throughput (bench/benchmarks.md, cluster). Here each call goes to
the node of its first key's slot, looked up in redis-py's own slot map, on that node's ReadChannel
(store/redis/channel.py): everything the request handlers queue in one turn of the event loop goes out in
one write per node, and the nodes answer concurrently. Users' profiles, read with a plain HMGET
each, go on a second connection per node that keeps them until Redis says they changed
(store/redis/tracking.py): a hot page's profiles then cost a PING per node rather than 20 commands.

The fast path never decides what is right. When a node answers a call with a redirection (MOVED,
ASK), says the cluster is down or busy with the slot (CLUSTERDOWN, TRYAGAIN), cannot be reached or
does not answer in time, or the slot map is not known yet, the whole read runs again through
redis-py, which follows the redirection and refreshes the slot map that the next reads use. Reads
only, and writes that change nothing when run a second time (the requesters' steps of an unlock,
FollowStore.run_repeatable): running one twice changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from redis.asyncio import RedisCluster
from redis.asyncio.connection import SSLConnection
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ConnectionError,
    MovedError,
    NoScriptError,
    SlotNotCoveredError,
    TimeoutError,
    TryAgainError,
)

from followgraph.store.redis.channel import DEFAULT_TIMEOUT, Address, ReadChannel, Reads, script_commands
from followgraph.store.redis.lua import Client, KeyedRead, ScriptCall, run_scripts
from followgraph.store.redis.spans import CLUSTER_READ_CHANNEL, RoundTrips, call_names
from followgraph.store.redis.tracking import (
    DEFAULT_CAPACITY,
    CacheStats,
    ProfileChanged,
    TrackedChannel,
    TrackingRefused,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

log = logging.getLogger(__name__)


@lru_cache(maxsize=1 << 16)
def slot_of(key: str) -> int:
    """The Redis Cluster slot of `key`; remembered, as a cluster page asks it of the same users'
    keys again and again."""
    return key_slot(key.encode())


# What sends a read back to redis-py: the cluster moved on, a node is out of reach, or a kept profile
# changed while it was read.
REROUTED = (
    MovedError,
    NoScriptError,
    AskError,
    ClusterDownError,
    TryAgainError,
    SlotNotCoveredError,
    ConnectionError,
    TimeoutError,
    ProfileChanged,
)

# A node's name, and whether its calls go to its tracking connection (the kept profiles).
Lane = tuple[str, bool]


class ClusterReadChannel:
    """Runs read script calls on their slots' master nodes, one ReadChannel per node (and a
    TrackedChannel per node for the cacheable reads, keeping `cache` replies at most; 0 keeps
    none); any read the cluster does not answer as the slot map says runs through redis-py
    instead."""

    def __init__(
        self,
        client: RedisCluster,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        username: str | None = None,
        password: str | None = None,
        on_send: Callable[[], None] | None = None,
        cache: int = DEFAULT_CAPACITY,
        tracer: Tracer | None = None,
    ) -> None:
        self.client = client
        self.timeout = timeout
        self.username = username
        self.password = password
        self.on_send = on_send
        self.cache = cache
        self.cache_stats = CacheStats()
        self._channels: dict[Lane, ReadChannel] = {}
        # Reads that went through redis-py instead, counted for the tests.
        self.rerouted = 0
        # Each read gets a span when tracing is on, whatever nodes it goes to (store/redis/spans.py);
        # the nodes' own channels make none.
        self.spans = None if tracer is None else RoundTrips(tracer, CLUSTER_READ_CHANNEL)

    @classmethod
    def for_client(
        cls,
        client: Client,
        *,
        timeout: float | None = None,
        cache: int = DEFAULT_CAPACITY,
        tracer: Tracer | None = None,
    ) -> ClusterReadChannel | None:
        """A channel to the nodes of the cluster `client` talks to, logged in as it is; None when the
        client is not a cluster, uses TLS or does not decode replies."""
        if not isinstance(client, RedisCluster):
            return None
        kwargs = client.nodes_manager.connection_kwargs
        kind = kwargs.get("connection_class")
        if kind is not None and issubclass(kind, SSLConnection):
            return None
        if not kwargs.get("decode_responses"):
            return None
        wait = timeout if timeout is not None else kwargs.get("socket_timeout") or DEFAULT_TIMEOUT
        return cls(
            client,
            timeout=float(wait),
            username=kwargs.get("username"),
            password=kwargs.get("password"),
            on_send=getattr(kind, "count_send", None),
            cache=cache,
            tracer=tracer,
        )

    def run_scripts(self, calls: Sequence[ScriptCall]) -> Coroutine[Any, Any, list[Any]]:
        """The replies of script calls that read, or write what a second run leaves unchanged: one
        write per node, the nodes concurrently. (The coroutine itself when the read gets no span.)"""
        if self.spans is None:
            return self._run_scripts(calls)
        return self.spans.around(self._run_scripts(calls), lambda: call_names(calls))

    async def _run_scripts(self, calls: Sequence[ScriptCall]) -> list[Any]:
        if not calls:
            return []
        try:
            return await self._direct(calls)
        except TrackingRefused as exc:
            log.warning("Redis refused the read channel's CLIENT TRACKING; no profiles are kept: %s", exc)
            self.cache = 0
            for lane in [lane for lane in self._channels if lane[1]]:
                await self._channels.pop(lane).aclose()
            return await self._run_scripts(calls)
        except REROUTED as exc:
            log.debug("cluster read through redis-py: %s: %s", type(exc).__name__, exc)
            self.rerouted += 1
            if isinstance(exc, ProfileChanged):
                self.cache_stats.changed += 1
            replies = await run_scripts(self.client, calls)
            await self._forget_gone_nodes()
            return replies

    async def _direct(self, calls: Sequence[ScriptCall]) -> list[Any]:
        slots = self.client.nodes_manager.slots_cache
        # Each node's script calls, by their indexes among all; each node's keys of each keyed read.
        scripts: dict[str, list[int]] = {}
        keyed: dict[tuple[str, KeyedRead], list[str]] = {}
        try:
            for i, (script, keys, _) in enumerate(calls):
                if isinstance(script, KeyedRead):
                    for key in keys:
                        lane = (slots[slot_of(key)][0].name, script)
                        if (group := keyed.get(lane)) is None:
                            keyed[lane] = [key]
                        else:
                            group.append(key)
                else:
                    scripts.setdefault(slots[slot_of(keys[0])][0].name, []).append(i)
        except (KeyError, IndexError):
            raise SlotNotCoveredError("The slot map does not cover a slot (or is not known yet).") from None
        if not keyed and len(scripts) == 1:
            return await self._channel((next(iter(scripts)), False)).run_scripts(calls)
        jobs: list[_Job] = [_Scripts(self._channel((name, False)), calls, at) for name, at in scripts.items()]
        cached = self.cache > 0
        jobs += [
            _Keyed(self._channel((name, cached and read.cacheable)), read, keys)
            for (name, read), keys in keyed.items()
        ]
        answers = await self._at_once(jobs)
        if answers is None:
            answers = await self._each(jobs)
        replies: list[Any] = [None] * len(calls)
        read_of: dict[KeyedRead, dict[str, Any]] = {}
        for job, answer in zip(jobs, answers, strict=True):
            if isinstance(job, _Scripts):
                for i, reply in zip(job.at, answer, strict=True):
                    replies[i] = reply
            elif isinstance(job, _Keyed):
                read_of.setdefault(job.read, {}).update(zip(job.keys, answer, strict=True))
        for i, (script, keys, _) in enumerate(calls):
            if isinstance(script, KeyedRead):
                found = read_of[script]
                replies[i] = [found[key] for key in keys]
        return replies

    async def _at_once(self, jobs: list[_Job]) -> list[list[Any]] | None:
        """Each job's replies, queued now on its open connection, without a task per job; None when
        a connection is not open or was lost, or a node does not know a script (`_each` connects,
        loads and sends again)."""
        if not all(job.channel.connected for job in jobs):
            return None
        futures: list[asyncio.Future[list[Any]]] = []
        for job in jobs:
            sent = job.send_now()
            assert sent is not None  # connected: checked above, in this same turn of the loop
            futures.append(sent)
        # Awaited one after the other: the replies of the nodes arrive in the same turns of the
        # event loop, so this wakes the caller about once, where asyncio.wait cost a waiter, a
        # callback per future and a timer (some 10 µs a page). No timer of its own is needed:
        # each connection fails its calls with a TimeoutError when its node does not answer in
        # time (store/redis/channel.py).
        try:
            for future in futures:
                with contextlib.suppress(Exception):
                    await future
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        errors = [future.exception() for future in futures]
        late = next((error for error in errors if isinstance(error, TimeoutError)), None)
        if late is not None:
            raise late
        if any(error is not None for error in errors):
            return None
        answers = [future.result() for future in futures]
        for answer in answers:
            for reply in answer:
                if isinstance(reply, NoScriptError):
                    return None
                if isinstance(reply, Exception):
                    raise reply
        return answers

    async def _each(self, jobs: list[_Job]) -> list[list[Any]]:
        answers = await asyncio.gather(*(job.run() for job in jobs), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        return answers  # type: ignore[return-value]  # no exceptions left

    def _channel(self, lane: Lane) -> ReadChannel:
        channel = self._channels.get(lane)
        if channel is None:
            name, tracked = lane
            host, _, port = name.rpartition(":")
            address = Address(host=host, port=int(port), username=self.username, password=self.password)
            if tracked:
                channel = TrackedChannel(
                    address,
                    capacity=self.cache,
                    timeout=self.timeout,
                    on_send=self.on_send,
                    stats=self.cache_stats,
                )
            else:
                channel = ReadChannel(address, timeout=self.timeout, on_send=self.on_send)
            self._channels[lane] = channel
        return channel

    async def _forget_gone_nodes(self) -> None:
        known = self.client.nodes_manager.nodes_cache
        for lane in [lane for lane in self._channels if lane[0] not in known]:
            await self._channels.pop(lane).aclose()

    async def aclose(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.aclose()


class _Job:
    """One node connection's part of a read."""

    __slots__ = ("channel",)

    channel: ReadChannel

    def send_now(self) -> asyncio.Future[list[Any]] | None:
        raise NotImplementedError

    async def run(self) -> list[Any]:
        raise NotImplementedError


class _Scripts(_Job):
    """The script calls at indexes `at` of `calls`, in their order."""

    __slots__ = ("at", "calls")

    def __init__(self, channel: ReadChannel, calls: Sequence[ScriptCall], at: list[int]) -> None:
        self.channel = channel
        self.calls = [calls[i] for i in at]
        self.at = at

    def send_now(self) -> asyncio.Future[list[Any]] | None:
        return self.channel.send_now(script_commands(self.calls))

    async def run(self) -> list[Any]:
        return await self.channel.run_scripts(self.calls)


class _Keyed(_Job):
    """A keyed read of `keys`: on the node's tracking connection (TrackedChannel) when it is
    cacheable, else a command per key on the node's script connection."""

    __slots__ = ("keys", "read")

    def __init__(self, channel: ReadChannel, read: KeyedRead, keys: list[str]) -> None:
        self.channel = channel
        self.read = read
        self.keys = keys

    def send_now(self) -> asyncio.Future[list[Any]] | None:
        channel = self.channel
        if isinstance(channel, TrackedChannel):
            return channel.read_now(self.read, self.keys)
        return channel.send_now(self.read.commands(self.keys))

    async def run(self) -> list[Any]:
        channel = self.channel
        if isinstance(channel, TrackedChannel):
            return await channel.read(self.read, self.keys)
        return await channel.run(self.read.commands(self.keys))


def open_reads(
    client: Client,
    *,
    timeout: float | None = None,
    cache: int = DEFAULT_CAPACITY,
    tracer: Tracer | None = None,
) -> Reads | None:
    """The read channel for `client`: one connection to a single Redis, one per master node of a
    cluster (and one more per node keeping up to `cache` profiles); None where the store reads
    through redis-py (TLS, an in-memory fake). With a `tracer`, its round trips get spans."""
    single = ReadChannel.for_client(client, timeout=timeout, tracer=tracer)
    if single is not None:
        return single
    return ClusterReadChannel.for_client(client, timeout=timeout, cache=cache, tracer=tracer)
