"""The parts of a cluster read (store/redis/cluster_channel.py): what goes to one node's connection,
and a hot page's profiles taken from the nodes' kept replies once each node's PING is answered."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from redis.exceptions import ConnectionError

from followgraph.store.redis.channel import ReadChannel, script_commands
from followgraph.store.redis.lua import KeyedRead, ScriptCall
from followgraph.store.redis.tracking import Fences, ProfileChanged, TrackedChannel


class Job:
    """One node connection's part of a read."""

    __slots__ = ("channel", "kept")

    channel: ReadChannel
    # Whether its replies are a TrackedChannel's keyed read's: an error among them comes alone.
    kept: bool

    def send_now(self) -> asyncio.Future[list[Any]] | None:
        raise NotImplementedError

    async def run(self) -> list[Any]:
        raise NotImplementedError


class Scripts(Job):
    """The script calls at indexes `at` of `calls`, in their order."""

    __slots__ = ("at", "calls")

    def __init__(self, channel: ReadChannel, calls: Sequence[ScriptCall], at: list[int]) -> None:
        self.channel = channel
        self.kept = False
        self.calls = [calls[i] for i in at]
        self.at = at

    def send_now(self) -> asyncio.Future[list[Any]] | None:
        return self.channel.send_now(script_commands(self.calls))

    async def run(self) -> list[Any]:
        return await self.channel.run_scripts(self.calls)


class Fence(Job):
    """A PING on a node's tracking connection (TrackedChannel.fence): done, the replies it keeps
    are right."""

    __slots__ = ()

    def __init__(self, channel: TrackedChannel) -> None:
        self.channel = channel
        self.kept = True

    def send_now(self) -> asyncio.Future[list[Any]] | None:
        channel = self.channel
        assert isinstance(channel, TrackedChannel)
        fences = Fences(asyncio.get_running_loop().create_future(), 1)
        return fences.future if channel.fence(fences) else None

    async def run(self) -> list[Any]:
        fence = self.send_now()
        if fence is None:
            raise ConnectionError("The tracking connection was lost.")
        return await fence


class Held:
    """A cacheable keyed read (the call at `at`) whose replies are all kept: the kept replies that
    hold each key's, and the tracking channels to fence before taking them."""

    __slots__ = ("at", "channels", "holders")

    def __init__(self, at: int, holders: list[dict[str, Any]], channels: list[TrackedChannel]) -> None:
        self.at = at
        self.holders = holders
        self.channels = channels

    def replies(self, keys: Sequence[str]) -> list[Any]:
        """Each key's reply, taken now (the fences are done); ProfileChanged when one was
        invalidated meanwhile."""
        replies = list(map(dict.get, self.holders, keys))
        if None in replies:
            raise ProfileChanged("A profile changed while it was read.")
        return replies


class Keyed(Job):
    """A keyed read of `keys`: on the node's tracking connection (TrackedChannel) when it is
    cacheable, else a command per key on the node's script connection."""

    __slots__ = ("keys", "read")

    def __init__(self, channel: ReadChannel, read: KeyedRead, keys: list[str]) -> None:
        self.channel = channel
        self.kept = isinstance(channel, TrackedChannel)
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
