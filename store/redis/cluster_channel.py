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

A failover is such a change. Until the replica is promoted, the reads of the failed master's slots
fail as redis-py's do. Once redis-py has the new slot map (it refreshes it at most once a second,
whichever command's error asked), the next read routes by it, and the connections to nodes that are
no longer masters (the dead one, or a frozen one come back as a replica) are closed: a replica
would answer a kept profile's PING, though not its reads.

With `replica=True` (FOLLOWGRAPH_READ_FROM_REPLICAS) the calls go to a replica of each slot's master
instead (store/redis/cluster_replicas.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from functools import lru_cache
from operator import contains
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

from followgraph.store.redis import cluster_replicas as replicas
from followgraph.store.redis.channel import (
    DEFAULT_TIMEOUT,
    Address,
    ReadChannel,
    connection_lost,
    script_commands,
    settle,
)
from followgraph.store.redis.cluster_jobs import Fence, Held, Job, Keyed, Scripts
from followgraph.store.redis.lua import Client, KeyedRead, ScriptCall, run_scripts
from followgraph.store.redis.spans import CLUSTER_READ_CHANNEL, RoundTrips, call_names
from followgraph.store.redis.tracking import (
    DEFAULT_CAPACITY,
    CacheStats,
    Fences,
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
# Keys whose node is remembered (a page's users' profile keys come again and again): forgotten
# all at once past this many, and whenever a read goes through redis-py (a slot may have moved).
ROUTES = 1 << 16
# Lists of keys whose nodes are remembered, likewise (about 1.5 kB each: a page's 21 keys).
LISTS = 1024


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
        replica: bool = False,
    ) -> None:
        if replica and cache > 0:
            raise ValueError("A channel to the replicas keeps no profiles: give cache=0.")
        self.client = client
        # The node of a slot among those the map lists for it: its master (0), or a replica.
        self._pick = replicas.replica_of if replica else replicas.master_of
        self.replica = replica
        # Until when the reads go to the masters: a replica could not serve one.
        self.resting_until = 0.0
        self.timeout = timeout
        self.username = username
        self.password = password
        self.on_send = on_send
        self.cache = cache
        self.cache_stats = CacheStats()
        self._channels: dict[Lane, ReadChannel] = {}
        # The node of each key a keyed read asked for, by name, as the slot map said then; and
        # of each key of a list of them asked before (a hot page's profiles), with the nodes once.
        self._routes: dict[str, str] = {}
        self._lists: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
        # The slot map the routes were read from: redis-py makes a new one at each refresh.
        self._map: object = None
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
        replica: bool = False,
    ) -> ClusterReadChannel | None:
        """A channel to the nodes of the cluster `client` talks to (its masters, or with `replica`
        a replica of each), logged in as it is; None when the client is not a cluster, uses TLS or
        does not decode replies."""
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
            replica=replica,
        )

    @property
    def keeps(self) -> bool:
        return self.cache > 0

    def run_scripts(self, calls: Sequence[ScriptCall]) -> Coroutine[Any, Any, list[Any]]:
        """The replies of script calls that read, or write what a second run leaves unchanged: one
        write per node, the nodes concurrently. (The coroutine itself when the read gets no span.)"""
        if self.spans is None:
            return self._run_scripts(calls)
        return self.spans.around(self._run_scripts(calls), lambda: call_names(calls))

    async def run_keyed(self, read: KeyedRead, keys: Sequence[str]) -> list[Any]:
        """The reply of `read` of each of `keys`, read now (none kept): each key's command on its
        node, the nodes at once."""
        # A read of its own, not the cacheable one `read` may be: nothing of it is kept.
        [replies] = await self.run_scripts([(KeyedRead(read.one), keys, ())])
        return replies  # type: ignore[no-any-return]  # a keyed read's reply is its keys' replies

    async def _run_scripts(self, calls: Sequence[ScriptCall]) -> list[Any]:
        if not calls:
            return []
        if self.client.nodes_manager.slots_cache is not self._map:
            await self._follow_map()
        if self.replica and self.resting_until and time.monotonic() >= self.resting_until:
            self._rest(False)
        try:
            first = calls[0][0]
            # The store's reads of users' facts: their profiles first, then the other parts.
            if isinstance(first, KeyedRead) and first.cacheable and self.cache > 0:
                answered = await self._facts(calls)
                if answered is not None:
                    return answered
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
            self._routes.clear()
            self._lists.clear()
            if isinstance(exc, ProfileChanged):
                self.cache_stats.changed += 1
            if self.replica and isinstance(exc, replicas.UNFIT) and not self.resting_until:
                what = f"{type(exc).__name__}: {exc}"
                rest = replicas.RESTING
                log.warning("a replica cannot serve reads (%s): reading the masters for %.0f s", what, rest)
                self._rest(True)
            replies = await run_scripts(self.client, calls)
            if self.client.nodes_manager.slots_cache is not self._map:
                await self._follow_map()
            return replies

    async def _direct(self, calls: Sequence[ScriptCall]) -> list[Any]:
        slots = self.client.nodes_manager.slots_cache
        # Each node's script calls, by their indexes among all; each node's keys of each keyed read.
        scripts: dict[str, list[int]] = {}
        keyed: dict[tuple[str, KeyedRead], list[str]] = {}
        # A cacheable keyed read whose every reply is kept (a hot page's profiles): where each is.
        held: Held | None = None
        try:
            for i, (script, keys, _) in enumerate(calls):
                if isinstance(script, KeyedRead):
                    if held is None and script.cacheable and self.cache > 0:
                        held = self._held(i, keys)
                        if held is not None:
                            continue
                    for key in keys:
                        name = self._node_of(key)
                        if (group := keyed.get((name, script))) is None:
                            keyed[name, script] = [key]
                        else:
                            group.append(key)
                else:
                    scripts.setdefault(self._pick(slots[slot_of(keys[0])]), []).append(i)
        except (KeyError, IndexError):
            raise SlotNotCoveredError("The slot map does not cover a slot (or is not known yet).") from None
        if held is None and not keyed and len(scripts) == 1:
            return await self._channel((next(iter(scripts)), False)).run_scripts(calls)
        if held is not None and not keyed and len(scripts) <= 1:
            answered = await self._held_at_once(calls, held, scripts)
            if answered is not None:
                return answered
        jobs: list[Job] = [Scripts(self._channel((name, False)), calls, at) for name, at in scripts.items()]
        cached = self.cache > 0
        jobs += [
            Keyed(self._channel((name, cached and read.cacheable)), read, keys)
            for (name, read), keys in keyed.items()
        ]
        if held is not None:
            jobs += [Fence(channel) for channel in held.channels]
        answers = await self._at_once(jobs)
        if answers is None:
            answers = await self._each(jobs)
        replies: list[Any] = [None] * len(calls)
        read_of: dict[KeyedRead, dict[str, Any]] = {}
        for job, answer in zip(jobs, answers, strict=True):
            if isinstance(job, Scripts):
                for i, reply in zip(job.at, answer, strict=True):
                    replies[i] = reply
            elif isinstance(job, Keyed):
                read_of.setdefault(job.read, {}).update(zip(job.keys, answer, strict=True))
        for i, (script, keys, _) in enumerate(calls):
            if isinstance(script, KeyedRead):
                if held is not None and i == held.at:
                    replies[i] = held.replies(keys)
                    self.cache_stats.hits += len(keys)
                    continue
                found = read_of[script]
                replies[i] = [found[key] for key in keys]
        return replies

    async def _facts(self, calls: Sequence[ScriptCall]) -> list[Any] | None:
        """A hot page's read of users' facts (`_held_at_once`) when its profiles are all kept and
        its other calls are scripts of one node; None for any other read (`_direct` makes it)."""
        slots = self.client.nodes_manager.slots_cache
        scripts: dict[str, list[int]] = {}
        try:
            held = self._held(0, calls[0][1])
            if held is None:
                return None
            for i in range(1, len(calls)):
                script, keys, _ = calls[i]
                if isinstance(script, KeyedRead):
                    return None
                scripts.setdefault(self._pick(slots[slot_of(keys[0])]), []).append(i)
        except (KeyError, IndexError):
            raise SlotNotCoveredError("The slot map does not cover a slot (or is not known yet).") from None
        if len(scripts) > 1:
            return None
        return await self._held_at_once(calls, held, scripts)

    def _rest(self, resting: bool) -> None:
        """Read the masters (for RESTING seconds, store/redis/cluster_replicas.py), or the replicas again."""
        self.resting_until = time.monotonic() + replicas.RESTING if resting else 0.0
        self._pick = replicas.master_of if resting or not self.replica else replicas.replica_of
        self._routes.clear()
        self._lists.clear()

    def _node_of(self, key: str) -> str:
        """The name of the node of `key`'s slot (remembered: see ROUTES)."""
        routes = self._routes
        if (name := routes.get(key)) is None:
            if len(routes) >= ROUTES:
                routes.clear()
            name = routes[key] = self._pick(self.client.nodes_manager.slots_cache[slot_of(key)])
        return name

    def _held(self, at: int, keys: Sequence[str]) -> Held | None:
        """Where the reply of each of `keys` is kept, and the tracking channel of each node that
        keeps one, when every one is kept on an open tracking connection; else None (a read of its
        own asks the nodes). The replies are taken once a fence on each of those connections is
        done: a hot page's profiles then cost a PING per node, shared with the other reads of the
        same turn of the event loop, and a lookup or two a key (run in C: map)."""
        listed = tuple(keys)
        routed = self._lists.get(listed)
        if routed is None:
            names = [self._node_of(key) for key in keys]
            if len(self._lists) >= LISTS:
                self._lists.clear()
            routed = self._lists[listed] = (names, list(dict.fromkeys(names)))
        names, nodes = routed
        kept_on: dict[str, dict[str, Any]] = {}
        channels: list[TrackedChannel] = []
        for name in nodes:
            channel = self._channels.get((name, True))
            if not isinstance(channel, TrackedChannel) or (kept := channel.kept_now()) is None:
                return None
            kept_on[name] = kept
            channels.append(channel)
        holders = list(map(kept_on.__getitem__, names))
        if not all(map(contains, holders, keys)):
            return None
        return Held(at, holders, channels)

    async def _held_at_once(
        self, calls: Sequence[ScriptCall], held: Held, scripts: dict[str, list[int]]
    ) -> list[Any] | None:
        """A hot page's read: its kept profiles (`held`) beside the script calls of one node (the
        viewer's relations), queued now with a fence on each node that keeps a profile, without a
        job per node; None when a connection is not open or was lost, or the node does not know a
        script (the general way connects, loads and sends again)."""
        futures: list[asyncio.Future[list[Any]]] = []
        at: list[int] = []
        if scripts:
            [(name, at)] = scripts.items()
            channel = self._channels.get((name, False))
            sent = None if channel is None else channel.send_now(script_commands([calls[i] for i in at]))
            if sent is None:
                return None
            futures.append(sent)
        fences = Fences(asyncio.get_running_loop().create_future(), len(held.channels))
        for tracked in held.channels:
            if not tracked.fence(fences):
                for future in futures:
                    future.cancel()
                return None
        futures.append(fences.future)
        await settle(futures)
        if connection_lost(futures):
            return None
        replies: list[Any] = [None] * len(calls)
        if at:
            for i, reply in zip(at, futures[0].result(), strict=True):
                if isinstance(reply, NoScriptError):
                    return None
                if isinstance(reply, Exception):
                    raise reply
                replies[i] = reply
        keys = calls[held.at][1]
        replies[held.at] = held.replies(keys)
        self.cache_stats.hits += len(keys)
        return replies

    async def _at_once(self, jobs: list[Job]) -> list[list[Any]] | None:
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
        # Each connection fails its calls with a TimeoutError when its node does not answer.
        await settle(futures)
        errors = [future.exception() for future in futures]
        late = next((error for error in errors if isinstance(error, TimeoutError)), None)
        if late is not None:
            raise late
        if any(error is not None for error in errors):
            return None
        answers = [future.result() for future in futures]
        for job, answer in zip(jobs, answers, strict=True):
            # A kept read's error reply (or ProfileChanged) comes alone, first.
            for reply in answer[:1] if job.kept else answer:
                if isinstance(reply, NoScriptError):
                    return None
                if isinstance(reply, Exception):
                    raise reply
        return answers

    async def _each(self, jobs: list[Job]) -> list[list[Any]]:
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
            if self.replica:
                channel = replicas.ReplicaChannel(address, timeout=self.timeout, on_send=self.on_send)
            elif tracked:
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

    async def _follow_map(self) -> None:
        """Route by the slot map redis-py has now, and close the connections to nodes that are not
        masters in it (not in it at all, reading from replicas)."""
        self._map = self.client.nodes_manager.slots_cache
        self._routes.clear()
        self._lists.clear()
        nodes = self.client.get_nodes() if self.replica else self.client.get_primaries()
        kept = {node.name for node in nodes}
        for lane in [lane for lane in self._channels if lane[0] not in kept]:
            await self._channels.pop(lane).aclose()

    @property
    def nodes(self) -> set[str]:
        """The names of the nodes it holds a channel to (host:port)."""
        return {name for name, _ in self._channels}

    async def aclose(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.aclose()
