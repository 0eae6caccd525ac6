"""The read channel on a Redis Cluster: one auto-pipelined connection per master node.

A page of 20 fans reads their profiles with one HMGET each on the user's own slot (and counts with
one script call per slot), up to 20 commands on 3 nodes; through redis-py's cluster pipeline each
costs a command object, a node lookup and a pooled connection, and that bookkeeping held a cluster
page to about half of one Redis' throughput (bench/benchmarks.md, cluster). Here each call goes to
the node of its first key's slot, looked up in redis-py's own slot map, on that node's ReadChannel
(store/channel.py): everything the request handlers queue in one turn of the event loop goes out in
one write per node, and the nodes answer concurrently.

The fast path never decides what is right. When a node answers a call with a redirection (MOVED,
ASK), says the cluster is down or busy with the slot (CLUSTERDOWN, TRYAGAIN), cannot be reached or
does not answer in time, or the slot map is not known yet, the whole read runs again through
redis-py, which follows the redirection and refreshes the slot map that the next reads use. Reads
only: running one twice changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from redis.asyncio import RedisCluster
from redis.asyncio.connection import SSLConnection
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

from followgraph.store.channel import DEFAULT_TIMEOUT, Address, ReadChannel, Reads, script_commands
from followgraph.store.keys import slot_of
from followgraph.store.lua import Client, ScriptCall, run_scripts

log = logging.getLogger(__name__)

# What sends a read back to redis-py: the cluster moved on, or a node is out of reach.
REROUTED = (
    MovedError,
    NoScriptError,
    AskError,
    ClusterDownError,
    TryAgainError,
    SlotNotCoveredError,
    ConnectionError,
    TimeoutError,
)


class ClusterReadChannel:
    """Runs read script calls on their slots' master nodes, one ReadChannel per node; any read the
    cluster does not answer as the slot map says runs through redis-py instead."""

    def __init__(
        self,
        client: RedisCluster,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        username: str | None = None,
        password: str | None = None,
        on_send: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.timeout = timeout
        self.username = username
        self.password = password
        self.on_send = on_send
        self._channels: dict[str, ReadChannel] = {}
        # Reads that went through redis-py instead, counted for the tests.
        self.rerouted = 0

    @classmethod
    def for_client(cls, client: Client, *, timeout: float | None = None) -> ClusterReadChannel | None:
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
        )

    async def run_scripts(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """The replies of read-only script calls: one write per node, the nodes concurrently."""
        if not calls:
            return []
        try:
            return await self._direct(calls)
        except REROUTED as exc:
            log.debug("cluster read through redis-py: %s: %s", type(exc).__name__, exc)
            self.rerouted += 1
            replies = await run_scripts(self.client, calls)
            await self._forget_gone_nodes()
            return replies

    async def _direct(self, calls: Sequence[ScriptCall]) -> list[Any]:
        slots = self.client.nodes_manager.slots_cache
        # Each node's calls, and where their replies go among all.
        indexes: dict[str, list[int]] = {}
        parts: dict[str, list[ScriptCall]] = {}
        for i, call in enumerate(calls):
            nodes = slots.get(slot_of(call[1][0]))
            if not nodes:
                raise SlotNotCoveredError("The slot map does not cover the slot (or is not known yet).")
            name = nodes[0].name
            if name in parts:
                parts[name].append(call)
                indexes[name].append(i)
            else:
                parts[name] = [call]
                indexes[name] = [i]
        if len(parts) == 1:
            return await self._channel(next(iter(parts))).run_scripts(calls)
        answers = await self._at_once(parts)
        if answers is None:
            answers = await self._each(parts)
        replies: list[Any] = [None] * len(calls)
        for places, answer in zip(indexes.values(), answers, strict=True):
            for i, reply in zip(places, answer, strict=True):
                replies[i] = reply
        return replies

    async def _at_once(self, parts: dict[str, list[ScriptCall]]) -> list[list[Any]] | None:
        """Each node's replies, its calls queued now on its open connection, without a task per node;
        None when a connection is not open or was lost, or a node does not know a script (`_each`
        connects, loads and sends again)."""
        channels = [self._channel(name) for name in parts]
        if not all(channel.connected for channel in channels):
            return None
        futures: list[asyncio.Future[list[Any]]] = []
        for channel, part in zip(channels, parts.values(), strict=True):
            sent = channel.send_now(script_commands(part))
            assert sent is not None  # connected: checked above, in this same turn of the loop
            futures.append(sent)
        # Awaited one after the other: the replies of the nodes arrive in the same turns of the
        # event loop, so this wakes the caller about once, where asyncio.wait cost a waiter, a
        # callback per future and a timer (some 10 µs a page). No timer of its own is needed:
        # each connection fails its calls with a TimeoutError when its node does not answer in
        # time (store/channel.py).
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

    async def _each(self, parts: dict[str, list[ScriptCall]]) -> list[list[Any]]:
        answers = await asyncio.gather(
            *(self._channel(name).run_scripts(part) for name, part in parts.items()),
            return_exceptions=True,
        )
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        return answers  # type: ignore[return-value]  # no exceptions left

    def _channel(self, name: str) -> ReadChannel:
        channel = self._channels.get(name)
        if channel is None:
            host, _, port = name.rpartition(":")
            address = Address(host=host, port=int(port), username=self.username, password=self.password)
            channel = ReadChannel(address, timeout=self.timeout, on_send=self.on_send)
            self._channels[name] = channel
        return channel

    async def _forget_gone_nodes(self) -> None:
        known = self.client.nodes_manager.nodes_cache
        for name in [n for n in self._channels if n not in known]:
            await self._channels.pop(name).aclose()

    async def aclose(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.aclose()


def open_reads(client: Client, *, timeout: float | None = None) -> Reads | None:
    """The read channel for `client`: one connection to a single Redis, one per master node of a
    cluster; None where the store reads through redis-py (TLS, an in-memory fake)."""
    single = ReadChannel.for_client(client, timeout=timeout)
    if single is not None:
        return single
    return ClusterReadChannel.for_client(client, timeout=timeout)
