"""The read channel of a single Redis that keeps profiles (store/redis/tracking.py).

A page's second round trip reads its users' relations to the viewer (a script call) and their
profiles. On one Redis the profiles were a script call of their own that ran 21 HMGETs and handed
their replies through Lua, about half of what the page cost Redis (docs/performance.md). Kept, a
hot page's profiles cost a PING. The scripts stay on the channel's own connection, in RESP2 (under
RESP3 some of their replies change type); the profiles are read on a second connection, a
TrackedChannel, which speaks RESP3 with CLIENT TRACKING and keeps them until Redis says they
changed. Both connections' parts of a read go out in the same turn of the event loop, so a read
still costs one round trip, and read-your-writes holds as tracking.py argues: the PING (or the
HMGETs) that a read sends on the tracking connection is answered after every invalidation Redis
queued before it.

When Redis refuses tracking (an ACL without the CLIENT command, a managed service that turns it
off), the channel says so once and goes on without keeping anything: `keeps` turns False, and the
store reads profiles with its script again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from redis.exceptions import ConnectionError, NoScriptError

from followgraph.store.redis.channel import (
    DEFAULT_TIMEOUT,
    Address,
    Command,
    ReadChannel,
    connection_lost,
    login_of,
    script_commands,
    script_loads,
    settle,
)
from followgraph.store.redis.lua import Client, KeyedRead, ScriptCall
from followgraph.store.redis.spans import call_names
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


class KeepingReadChannel(ReadChannel):
    """The read channel of a single Redis, keeping profiles: script calls go on its own connection
    (RESP2, as ReadChannel's), cacheable keyed reads on a second one (a TrackedChannel) that keeps
    their replies, `capacity` of them at most. A read's parts on the two connections go out in the
    same turn of the event loop and are awaited together: one round trip."""

    def __init__(
        self,
        address: Address,
        *,
        capacity: int = DEFAULT_CAPACITY,
        timeout: float = DEFAULT_TIMEOUT,
        on_send: Callable[[], None] | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        counted = None if on_send is None else _OncePerTurn(on_send)
        super().__init__(address, timeout=timeout, on_send=counted, tracer=tracer)
        self.cache_stats = CacheStats()
        # None once Redis refused tracking: the keyed reads then go on the script connection.
        self.kept: TrackedChannel | None = TrackedChannel(
            address, capacity=capacity, timeout=timeout, on_send=counted, stats=self.cache_stats
        )

    @classmethod
    def for_client(
        cls,
        client: Client,
        *,
        timeout: float | None = None,
        tracer: Tracer | None = None,
        capacity: int = DEFAULT_CAPACITY,
    ) -> KeepingReadChannel | None:
        """ReadChannel.for_client's channel, keeping up to `capacity` profiles."""
        login = login_of(client, timeout)
        if login is None:
            return None
        address, wait, counter = login
        return cls(address, capacity=capacity, timeout=wait, on_send=counter, tracer=tracer)

    @property
    def keeps(self) -> bool:
        return self.kept is not None

    def run_scripts(self, calls: Sequence[ScriptCall]) -> Coroutine[Any, Any, list[Any]]:
        """ReadChannel.run_scripts, with keyed reads among the calls (one command a key, or none
        for a key whose reply is kept). (The coroutine itself when the read gets no span.)"""
        if self.kept is None or not any(isinstance(script, KeyedRead) for script, _, _ in calls):
            return super().run_scripts(calls)
        first = calls[0][0]
        # The store's reads of users' facts: their profiles first, then the other parts.
        read = self._facts(calls) if isinstance(first, KeyedRead) and first.cacheable else self._read(calls)
        if self.spans is None:
            return read
        return self.spans.around(read, lambda: call_names(calls))

    async def _facts(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """`_read` of a cacheable keyed read followed by script calls, on open connections
        (`_read` otherwise): the same round trip without working out each call's part."""
        read, keys, _ = calls[0]
        assert isinstance(read, KeyedRead)
        rest = calls[1:]
        protocol, kept = self._protocol, self.kept
        if (
            protocol is None
            or protocol.lost is not None
            or kept is None
            or not kept.connected
            or any(isinstance(script, KeyedRead) for script, _, _ in rest)
        ):
            return await self._read(calls)
        sent = protocol.send(script_commands(rest)) if rest else None
        profiles = kept.read_now(read, keys)
        assert profiles is not None  # connected: checked above, in this same turn of the loop
        try:
            if sent is not None and not sent.done():
                try:
                    await sent
                except Exception:  # looked at below
                    pass
            if not profiles.done():
                try:
                    await profiles
                except Exception:  # looked at below
                    pass
        except BaseException:
            profiles.cancel()
            if sent is not None:
                sent.cancel()
            raise
        main: list[Any] = []
        for future in (profiles,) if sent is None else (sent, profiles):
            error = future.exception()
            if isinstance(error, ConnectionError):
                return await self._read(calls)
            if error is not None:
                raise error
        if sent is not None:
            main = sent.result()
            for reply in main:
                if isinstance(reply, NoScriptError):
                    return await self._read(calls)
                if isinstance(reply, Exception):
                    raise reply
        replies = profiles.result()
        if isinstance(replies[0], ProfileChanged):
            # A reply kept was invalidated while this read waited: not guessed at, read again.
            self.cache_stats.changed += 1
            replies = await self._run(read.commands(keys))
        elif isinstance(replies[0], Exception):
            raise replies[0]
        return [replies, *main]

    async def _read(self, calls: Sequence[ScriptCall]) -> list[Any]:
        split = _Split(calls, keeping=self.kept is not None)
        answers = await self._at_once(split)
        if answers is None:
            answers = await self._one_by_one(split)
        return split.replies(*answers)

    async def _at_once(self, split: _Split) -> tuple[list[Any], list[list[Any]]] | None:
        """The replies of the script connection's commands and of each kept read, queued now on
        both connections without a task; None when a connection was lost or Redis does not know a
        script (`_one_by_one` connects again, loads and sends again)."""
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            protocol = await self._connected()
        kept = self.kept
        if kept is None:
            return None
        if not kept.connected:
            try:
                await kept._connected()
            except TrackingRefused as exc:
                await self._refused(exc)
                return None
            except ConnectionError:
                return None
        if protocol.lost is not None:
            return None
        futures: list[asyncio.Future[list[Any]]] = []
        if split.commands:
            futures.append(protocol.send(split.commands))
        for read, keys in split.keyed:
            sent = kept.read_now(read, keys)
            assert sent is not None  # connected: checked above, in this same turn of the loop
            futures.append(sent)
        await settle(futures)
        if connection_lost(futures):
            return None
        answers = [future.result() for future in futures]
        main = answers.pop(0) if split.commands else []
        for reply in main:
            if isinstance(reply, NoScriptError):
                return None
            if isinstance(reply, Exception):
                raise reply
        keyed: list[list[Any]] = []
        for (read, keys), replies in zip(split.keyed, answers, strict=True):
            if isinstance(replies[0], ProfileChanged):
                # A reply kept was invalidated while this read waited: not guessed at, read again.
                self.cache_stats.changed += 1
                replies = await self._run(read.commands(keys))
            elif isinstance(replies[0], Exception):
                raise replies[0]
            keyed.append(replies)
        return main, keyed

    async def _one_by_one(self, split: _Split) -> tuple[list[Any], list[list[Any]]]:
        """What `_at_once` answers, each part in a round trip of its own, connecting when needed
        and loading the scripts Redis does not know."""
        main: list[Any] = []
        if split.commands:
            try:
                main = await self._run(split.commands)
            except NoScriptError:
                await self._run(script_loads(split.calls))
                main = await self._run(split.commands)
        keyed = [await self._keyed(read, keys) for read, keys in split.keyed]
        return main, keyed

    async def _keyed(self, read: KeyedRead, keys: Sequence[str]) -> list[Any]:
        kept = self.kept
        if kept is not None:
            try:
                return await kept.read(read, keys)
            except TrackingRefused as exc:
                await self._refused(exc)
            except ProfileChanged:
                self.cache_stats.changed += 1
        return await self._run(read.commands(keys))

    async def _refused(self, error: TrackingRefused) -> None:
        log.warning("Redis refused the read channel's CLIENT TRACKING; no profiles are kept: %s", error)
        kept, self.kept = self.kept, None
        if kept is not None:
            await kept.aclose()

    async def aclose(self) -> None:
        kept, self.kept = self.kept, None
        if kept is not None:
            await kept.aclose()
        await super().aclose()


class _Split:
    """A read's calls as they go out: script calls, and keyed reads that are not kept (a command a
    key), on the script connection; cacheable keyed reads on the tracking connection."""

    __slots__ = ("calls", "commands", "keyed", "sizes")

    # What a call's size says: one command on the script connection; a keyed read kept.
    ONE, KEPT = -1, -2

    def __init__(self, calls: Sequence[ScriptCall], *, keeping: bool) -> None:
        self.calls = calls
        self.commands: list[Command] = []
        self.keyed: list[tuple[KeyedRead, Sequence[str]]] = []
        # Per call: ONE, KEPT, or the number of commands of a keyed read on the script connection.
        self.sizes: list[int] = []
        for script, keys, args in calls:
            if not isinstance(script, KeyedRead):
                self.commands.append(script.command(keys, args))
                self.sizes.append(self.ONE)
            elif keeping and script.cacheable:
                self.keyed.append((script, keys))
                self.sizes.append(self.KEPT)
            else:
                self.commands += script.commands(keys)
                self.sizes.append(len(keys))

    def replies(self, main: list[Any], keyed: list[list[Any]]) -> list[Any]:
        """Each call's reply, in the calls' order (a keyed read's: the list of its keys')."""
        commands, kept = iter(main), iter(keyed)
        replies: list[Any] = []
        for size in self.sizes:
            if size == self.ONE:
                replies.append(next(commands))
            elif size == self.KEPT:
                replies.append(next(kept))
            else:
                replies.append([next(commands) for _ in range(size)])
        return replies


class _OncePerTurn:
    """Calls `count` once for the writes of both connections of a KeepingReadChannel made in the
    same turn of the event loop: they go out together and are awaited together, one round trip
    (the tests and the benchmark count round trips by writes)."""

    __slots__ = ("count", "counted")

    def __init__(self, count: Callable[[], None]) -> None:
        self.count = count
        self.counted = False

    def __call__(self) -> None:
        if self.counted:
            return
        self.counted = True
        self.count()
        asyncio.get_running_loop().call_soon(self._again)

    def _again(self) -> None:
        self.counted = False
