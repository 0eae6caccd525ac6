"""Reading the change log: plain reads, consumer groups, lag, and trimming behind the consumers.

The scripts append (store/graph/scripts.py, LOG); this module only reads and trims. On one Redis the log
is one stream; on a cluster a stream per slot, of which only those that ever got an event exist:
`streams()` finds them (SCAN on every primary) and readers go over them in one pipeline.

A consumer group reads each event once per group, shared among the group's consumers, and an
event stays pending until acknowledged: a consumer that dies mid-batch leaves its events pending,
and they are delivered again (to itself on restart, under the same name, or to another consumer
once they have been idle long enough). Delivery is at least once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import ResponseError

from followgraph.store.graph.events import Event, parse_id
from followgraph.store.graph.store import FollowStore
from followgraph.store.redis.lua import AnyPipeline, run_pipeline

log = logging.getLogger(__name__)

# Undelivered events are counted up to this many per stream where Redis (6.2) does not count them.
LAG_COUNT_LIMIT = 100_000
# Streams found on a cluster are remembered this long before SCANning again.
DISCOVERY_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Lag:
    """How far a group is behind the log: events not yet acknowledged (undelivered or pending),
    how old the oldest of them is, and events it lost (trimmed by the cap before it read them)."""

    events: int
    seconds: float
    lost: int


@dataclass(slots=True)
class Delivery:
    """Events read through a group, with the streams they came from (to acknowledge them)."""

    events: list[Event] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)

    def add(self, stream: str, entries: Sequence[Any]) -> None:
        """The events of `stream`'s entries, as read (XRANGE, XREADGROUP, XAUTOCLAIM)."""
        for event_id, fields in entries:
            if fields is None:  # an entry trimmed while pending: nothing to apply
                continue
            self.events.append(Event.of_entry(event_id, fields))
            self.streams.append(stream)


class EventLog:
    """The change log of one store."""

    def __init__(self, store: FollowStore) -> None:
        self.store = store
        self.redis = store.redis
        self._found: list[str] = []
        self._found_at = float("-inf")

    async def streams(self, *, fresh: bool = False) -> list[str]:
        """The streams of the log that exist (on one Redis, its one stream, existing or not)."""
        keys = self.store.keys
        if not self.store.cluster:
            return keys.logs()
        if fresh or time.monotonic() - self._found_at > DISCOVERY_SECONDS:
            pattern = keys.log_pattern()
            found = {key async for key in self.redis.scan_iter(match=pattern, count=1000, _type="stream")}
            self._found = sorted(found)
            self._found_at = time.monotonic()
        return self._found

    # -- plain reads --------------------------------------------------------------------------

    async def read(self, after: str | None = None, count: int = 1000) -> list[Event]:
        """Up to `count` events after id `after` (from the start without one), oldest first. On a
        cluster, `count` from each stream, merged by id."""
        start = "-" if after is None else f"({after}"
        streams = await self.streams()

        def fill(pipe: AnyPipeline) -> None:
            for stream in streams:
                pipe.xrange(stream, start, "+", count=count)

        read = Delivery()
        for stream, entries in zip(
            streams, await run_pipeline(self.redis, fill) if streams else [], strict=True
        ):
            read.add(stream, entries)
        return sorted(read.events, key=lambda e: e.version)[:count]

    async def tail(
        self,
        after: str | None = None,
        *,
        follow: bool = True,
        poll_seconds: float = 0.2,
        batch: int = 1000,
        cursors: dict[str, str] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Events after id `after` (without one: only those appended from now on), oldest first,
        then, with `follow`, new ones as they come. Each stream keeps its own position, so an event
        a slower node appends with a smaller id is not skipped. `cursors` (stream -> last id read,
        from `positions()` or an earlier call), when given, are the positions to go on from and
        are kept up to date; a stream missing from them is read from its start."""
        if cursors is None:
            cursors = {} if after is not None else await self.positions()
        while True:
            streams = await self.streams()
            for stream in streams:
                cursors.setdefault(stream, after or "0-0")

            def fill(pipe: AnyPipeline, streams: list[str] = streams) -> None:
                for stream in streams:
                    pipe.xrange(stream, f"({cursors[stream]}", "+", count=batch)

            replies = await run_pipeline(self.redis, fill) if streams else []
            found = Delivery()
            for stream, entries in zip(streams, replies, strict=True):
                if entries:
                    cursors[stream] = entries[-1][0]
                    found.add(stream, entries)
            for event in sorted(found.events, key=lambda e: e.version):
                yield event
            if not found.events:
                if not follow:
                    return
                await asyncio.sleep(poll_seconds)

    async def positions(self) -> dict[str, str]:
        """Each existing stream's newest id: where a reader of only what comes next starts."""
        streams = await self.streams(fresh=True)
        newest = await self._newest()
        return {stream: last or "0-0" for stream, last in zip(streams, newest, strict=True)}

    async def _newest(self) -> list[str | None]:
        """The newest id of each stream of `streams()`, None for an empty one."""
        streams = await self.streams()

        def fill(pipe: AnyPipeline) -> None:
            for stream in streams:
                pipe.xrevrange(stream, "+", "-", count=1)

        replies = await run_pipeline(self.redis, fill) if streams else []
        return [str(entries[0][0]) if entries else None for entries in replies]

    async def last_id(self) -> str | None:
        """The newest event's id (on a cluster, the newest of all streams), None for an empty log."""
        ids = [i for i in await self._newest() if i is not None]
        return max(ids, key=parse_id) if ids else None

    async def length(self) -> int:
        streams = await self.streams()

        def fill(pipe: AnyPipeline) -> None:
            for stream in streams:
                pipe.xlen(stream)

        return sum(await run_pipeline(self.redis, fill)) if streams else 0

    # -- consumer groups ----------------------------------------------------------------------

    async def join(self, group: str, *, start: str = "0") -> None:
        """Create `group` on every stream that has none (reading from `start`: the beginning, or
        "$" for only what comes next). On a cluster, streams that appear later get the group when
        they are first read (`read_group`)."""
        await self._create(await self.streams(fresh=True), group, start)

    async def _create(self, streams: list[str], group: str, start: str = "0") -> None:
        """`group` on each of `streams` (in one round trip), where it is not there yet."""
        created = await self._each([("EVAL", _CREATE_GROUP, 1, s, group, start) for s in streams])
        for reply in created:
            if isinstance(reply, Exception) and "BUSYGROUP" not in str(reply):
                raise reply

    async def read_group(
        self, group: str, consumer: str, *, count: int, block_ms: int, pending: bool = False
    ) -> Delivery:
        """Up to `count` events for `consumer` of `group`: new ones, or with `pending` those already
        delivered to it and not acknowledged (what it had when it died). On one Redis the read
        blocks up to `block_ms` for new events; on a cluster it polls every stream once."""
        cursor = "0" if pending else ">"
        streams = await self.streams()
        if not self.store.cluster:
            replies = await self._xreadgroup(
                group, consumer, {streams[0]: cursor}, count, None if pending else block_ms
            )
            delivery = Delivery()
            delivery.add(streams[0], replies[0][1] if replies else [])
            return delivery

        def queue(pipe: AnyPipeline, stream: str) -> None:
            pipe.xreadgroup(group, consumer, {stream: cursor}, count=count)

        delivery = Delivery()
        for stream, reply in zip(streams, await self._with_groups(group, streams, queue), strict=True):
            for _, entries in reply or []:
                delivery.add(stream, entries)
        return delivery

    async def _xreadgroup(
        self, group: str, consumer: str, streams: dict[str, str], count: int, block_ms: int | None
    ) -> Any:
        try:
            return await self.redis.xreadgroup(group, consumer, streams, count=count, block=block_ms)  # type: ignore[arg-type]
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            await self._create(list(streams), group)
            return await self.redis.xreadgroup(group, consumer, streams, count=count, block=block_ms)  # type: ignore[arg-type]

    async def _with_groups(
        self, group: str, streams: list[str], queue: Callable[[AnyPipeline, str], None]
    ) -> list[Any]:
        """The replies of a group read of each stream (`queue` puts one in a pipeline). Streams
        without the group get it and are read again; only they: the others' reads have delivered
        their entries already, and a second read would leave those pending, unseen."""
        replies = await self._pipeline(streams, queue)
        missing = [i for i, r in enumerate(replies) if isinstance(r, ResponseError) and "NOGROUP" in str(r)]
        if missing:
            await self._create([streams[i] for i in missing], group)
            again = await self._pipeline([streams[i] for i in missing], queue)
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    async def _pipeline(self, streams: list[str], queue: Callable[[AnyPipeline, str], None]) -> list[Any]:
        pipe = self.redis.pipeline(transaction=False)
        for stream in streams:
            queue(pipe, stream)
        replies: list[Any] = await pipe.execute(raise_on_error=False)
        return replies

    async def claim(self, group: str, consumer: str, *, min_idle_ms: int, count: int) -> Delivery:
        """Take over events other consumers of `group` were given and left unacknowledged for
        `min_idle_ms` (consumers that died and did not come back under their name)."""
        streams = await self.streams()

        def queue(pipe: AnyPipeline, stream: str) -> None:
            pipe.xautoclaim(stream, group, consumer, min_idle_ms, start_id="0-0", count=count)

        delivery = Delivery()
        for stream, reply in zip(streams, await self._with_groups(group, streams, queue), strict=True):
            delivery.add(stream, reply[1])
        return delivery

    async def ack(self, group: str, delivery: Delivery) -> None:
        by_stream: dict[str, list[str]] = {}
        for event, stream in zip(delivery.events, delivery.streams, strict=True):
            by_stream.setdefault(stream, []).append(event.id)
        if not by_stream:
            return

        def fill(pipe: AnyPipeline) -> None:
            for stream, ids in by_stream.items():
                pipe.xack(stream, group, *ids)

        await run_pipeline(self.redis, fill)

    async def lag(self, group: str) -> Lag:
        """How far `group` is behind, over every stream, in two round trips however many
        streams there are."""
        streams = await self.streams()
        infos = await self._each(
            [("XINFO", kind, stream) for stream in streams for kind in ("STREAM", "GROUPS")]
        )
        # Each existing stream with the group's state there (None: the group has not read it yet).
        states: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        for i, stream in enumerate(streams):
            info, groups = infos[2 * i], infos[2 * i + 1]
            if isinstance(info, Exception) or isinstance(groups, Exception):
                continue  # a stream that does not exist yet
            mine = [g for g in (_pairs(x) for x in groups) if g.get("name") == group]
            states.append((stream, _pairs(info), mine[0] if mine else None))
        # Per stream: the oldest pending event, and the undelivered ones (counted where Redis 6.2
        # does not count them; else just the first, for its age).
        commands: list[tuple[Any, ...]] = []
        for stream, _, state in states:
            known = state is not None and state.get("lag") is not None
            start = "-" if state is None else f"({state.get('last-delivered-id') or '0-0'}"
            commands.append(("XPENDING", stream, group))
            commands.append(("XRANGE", stream, start, "+", "COUNT", 1 if known else LAG_COUNT_LIMIT))
        found = await self._each(commands)
        events = lost = 0
        oldest: list[int] = []
        for (_, info, state), pending, after in zip(states, found[::2], found[1::2], strict=True):
            waiting = int(state.get("pending") or 0) if state else 0
            entries = [] if isinstance(after, Exception) else after or []
            undelivered = len(entries)
            if state is not None and state.get("lag") is not None:
                # Redis 7 and Valkey count what the group has not read of all ever added; beyond
                # what the stream still holds, the cap trimmed it before the group read it (and all
                # the stream holds is then unread). Redis 6.2 cannot tell.
                behind = int(state["lag"])
                undelivered = min(behind, int(info.get("length", behind)))
                lost += behind - undelivered
            events += undelivered + waiting
            if waiting and isinstance(pending, dict) and pending.get("min"):
                oldest.append(parse_id(pending["min"])[0])
            if entries:
                oldest.append(parse_id(str(entries[0][0]))[0])
        seconds = max(0.0, time.time() - min(oldest) / 1000) if oldest else 0.0
        return Lag(events, seconds, lost)

    async def trim(self, *, keep_ms: int = 0) -> int:
        """Drop the events every group has acknowledged and that are older than `keep_ms` (kept
        for readers that catch up by id, as a reconnecting subscriber does); returns how many went.
        A stream without groups is left to the cap. Three round trips however many streams."""
        kept_since = (int(time.time() * 1000) - keep_ms, 0)
        streams = await self.streams()
        infos = await self._each([("XINFO", "GROUPS", stream) for stream in streams])
        # (stream, group) of every group, and the mark below which it has acknowledged all.
        marks: list[tuple[str, dict[str, Any], tuple[int, int]]] = []
        for stream, groups in zip(streams, infos, strict=True):
            for group in [] if isinstance(groups, Exception) else [_pairs(g) for g in groups]:
                last = parse_id(group.get("last-delivered-id") or "0-0")
                marks.append((stream, group, (last[0], last[1] + 1)))
        waiting = [(i, m) for i, m in enumerate(marks) if int(m[1].get("pending") or 0)]
        summaries = await self._each(
            [("XPENDING", stream, group["name"]) for _, (stream, group, _) in waiting]
        )
        for (i, (stream, group, mark)), summary in zip(waiting, summaries, strict=True):
            if isinstance(summary, dict) and summary.get("min"):
                marks[i] = (stream, group, min(mark, parse_id(summary["min"])))
        floors: dict[str, tuple[int, int]] = {}
        for stream, _, mark in marks:
            floors[stream] = min(floors.get(stream, mark), mark, kept_since)
        trims = [("XTRIM", s, "MINID", f"{f[0]}-{f[1]}") for s, f in floors.items() if f > (0, 0)]
        return sum(int(n) for n in await self._each(trims) if not isinstance(n, Exception))

    async def _each(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """The replies of `commands` in one pipeline (one per node on a cluster), an error in the
        place of a command that failed (a stream that does not exist, say)."""
        if not commands:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        replies: list[Any] = await pipe.execute(raise_on_error=False)
        return replies


# XGROUP CREATE, and for a group that starts at the end ("$") on Redis 7 or Valkey, the number of
# events it has "read" set to all the stream ever had, in the same atomic call: without it, Redis
# leaves that count unknown until the group's first read, and lag() could not count the events the
# cap trimmed before the group read them.
_CREATE_GROUP = """
redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM')
if ARGV[2] == '$' then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then
      pcall(redis.call, 'XGROUP', 'SETID', KEYS[1], ARGV[1], '$', 'ENTRIESREAD', info[i + 1])
    end
  end
end
return 1
"""


def _pairs(reply: Any) -> dict[str, Any]:
    """An XINFO reply (a flat list, or a dict already) as a dict."""
    if isinstance(reply, dict):
        return {str(k): v for k, v in reply.items()}
    items = list(reply)
    return {str(items[i]): items[i + 1] for i in range(0, len(items), 2)}
