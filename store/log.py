"""Reading the change log: plain reads, consumer groups, lag, and trimming behind the consumers.

The scripts append (store/scripts.py, LOG); this module only reads and trims. On one Redis the log
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
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import ResponseError

from followgraph.store.events import Event, parse_id
from followgraph.store.graph import FollowStore
from followgraph.store.lua import AnyPipeline, run_pipeline

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

    events: list[Event]
    streams: list[str]


def _events(stream: str, entries: Sequence[Any]) -> tuple[list[Event], list[str]]:
    events: list[Event] = []
    for event_id, fields in entries:
        if fields is None:  # an entry trimmed while pending: nothing to apply
            continue
        events.append(Event.of_entry(event_id, fields))
    return events, [stream] * len(events)


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
            pattern = f"{_escape(keys.prefix)}{{e*}}:log"
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

        replies = await run_pipeline(self.redis, fill) if streams else []
        events = [
            e for stream, entries in zip(streams, replies, strict=True) for e in _events(stream, entries)[0]
        ]
        events.sort(key=lambda e: e.version)
        return events[:count] if len(streams) > 1 else events

    async def tail(
        self,
        after: str | None = None,
        *,
        follow: bool = True,
        poll_seconds: float = 0.2,
        batch: int = 1000,
        cursors: dict[str, str] | None = None,
    ) -> AsyncIterator[Event]:
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
            found: list[Event] = []
            for stream, entries in zip(streams, replies, strict=True):
                if entries:
                    cursors[stream] = entries[-1][0]
                    found += _events(stream, entries)[0]
            for event in sorted(found, key=lambda e: e.version):
                yield event
            if not found:
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
        streams = await self.streams(fresh=True)
        for stream in streams:
            await self._create(stream, group, start)

    async def _create(self, stream: str, group: str, start: str = "0") -> None:
        try:
            await self.redis.xgroup_create(stream, group, id=start, mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

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
            entries = replies[0][1] if replies else []
            events, sources = _events(streams[0], entries)
            return Delivery(events, sources)

        def fill(pipe: AnyPipeline) -> None:
            for stream in streams:
                pipe.xreadgroup(group, consumer, {stream: cursor}, count=count)

        replies = await self._with_groups(group, streams, fill)
        delivery = Delivery([], [])
        for stream, reply in zip(streams, replies, strict=True):
            for _, entries in reply or []:
                events, sources = _events(stream, entries)
                delivery.events += events
                delivery.streams += sources
        return delivery

    async def _xreadgroup(
        self, group: str, consumer: str, streams: dict[str, str], count: int, block_ms: int | None
    ) -> Any:
        try:
            return await self.redis.xreadgroup(group, consumer, streams, count=count, block=block_ms)  # type: ignore[arg-type]
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            for stream in streams:
                await self._create(stream, group)
            return await self.redis.xreadgroup(group, consumer, streams, count=count, block=block_ms)  # type: ignore[arg-type]

    async def _with_groups(self, group: str, streams: list[str], fill: Any) -> list[Any]:
        """Run a pipeline of group reads; streams without the group get it, and the reads run again."""
        for attempt in range(2):
            pipe = self.redis.pipeline(transaction=False)
            fill(pipe)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
            missing = [
                s
                for s, r in zip(streams, replies, strict=True)
                if isinstance(r, ResponseError) and "NOGROUP" in str(r)
            ]
            if missing and attempt == 0:
                for stream in missing:
                    await self._create(stream, group)
                continue
            for reply in replies:
                if isinstance(reply, Exception):
                    raise reply
            return replies
        raise AssertionError("unreachable")

    async def claim(self, group: str, consumer: str, *, min_idle_ms: int, count: int) -> Delivery:
        """Take over events other consumers of `group` were given and left unacknowledged for
        `min_idle_ms` (consumers that died and did not come back under their name)."""
        streams = await self.streams()

        def fill(pipe: AnyPipeline) -> None:
            for stream in streams:
                pipe.xautoclaim(stream, group, consumer, min_idle_ms, start_id="0-0", count=count)

        replies = await self._with_groups(group, streams, fill)
        delivery = Delivery([], [])
        for stream, reply in zip(streams, replies, strict=True):
            events, sources = _events(stream, reply[1])
            delivery.events += events
            delivery.streams += sources
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
        """How far `group` is behind, over every stream (two round trips)."""
        streams = await self.streams()
        if not streams:
            return Lag(0, 0.0, 0)

        def infos(pipe: AnyPipeline) -> None:
            for stream in streams:
                pipe.execute_command("XINFO", "STREAM", stream)
                pipe.execute_command("XINFO", "GROUPS", stream)

        replies = await _tolerant(self.redis, infos)
        events = lost = 0
        oldest: int | None = None
        now_ms = time.time() * 1000
        for i, stream in enumerate(streams):
            info, groups = replies[2 * i], replies[2 * i + 1]
            if isinstance(info, Exception) or isinstance(groups, Exception):
                continue  # a stream that does not exist yet
            stream_info = _pairs(info)
            mine = [g for g in (_pairs(x) for x in groups) if g.get("name") == group]
            state = mine[0] if mine else None
            pending = int(state.get("pending") or 0) if state else 0
            undelivered = await self._undelivered(stream, state)
            # Redis 7 counts what a group has read of all ever added: the difference beyond what
            # is still in the stream was trimmed before the group read it. Redis 6.2 cannot tell.
            if state is not None and "entries-added" in stream_info and state.get("entries-read") is not None:
                behind = int(stream_info["entries-added"]) - int(state["entries-read"])
                lost += max(0, behind - undelivered)
            events += undelivered + pending
            if undelivered + pending:
                first = await self._oldest_unacked(stream, group, state)
                if first is not None:
                    oldest = first if oldest is None else min(oldest, first)
        seconds = 0.0 if oldest is None else max(0.0, (now_ms - oldest) / 1000)
        return Lag(events, seconds, lost)

    async def _undelivered(self, stream: str, state: dict[str, Any] | None) -> int:
        """Events of `stream` not yet delivered to the group: Redis 7's own figure when it has one,
        else counted (up to LAG_COUNT_LIMIT)."""
        if state is not None and state.get("lag") is not None:
            return int(state["lag"])
        start = "-" if state is None else f"({state.get('last-delivered-id') or '0-0'}"
        return len(await self.redis.xrange(stream, start, "+", count=LAG_COUNT_LIMIT) or [])

    async def _oldest_unacked(self, stream: str, group: str, info: dict[str, Any] | None) -> int | None:
        """The time (ms of its id) of the oldest event of `stream` the group has not acknowledged."""
        if info is not None and int(info.get("pending") or 0):
            summary = await self.redis.xpending(stream, group)
            if summary and summary.get("min"):
                return parse_id(summary["min"])[0]
        start = "-" if info is None else f"({info.get('last-delivered-id') or '0-0'}"
        entries = await self.redis.xrange(stream, start, "+", count=1)
        return parse_id(str(entries[0][0]))[0] if entries else None

    async def trim(self, *, keep_ms: int = 0) -> int:
        """Drop the events every group has acknowledged and that are older than `keep_ms` (kept
        for readers that catch up by id, as a reconnecting subscriber does); returns how many went.
        A stream without groups is left to the cap."""
        removed = 0
        kept_since = (int(time.time() * 1000) - keep_ms, 0)
        for stream in await self.streams():
            try:
                groups = [_pairs(g) for g in await self.redis.execute_command("XINFO", "GROUPS", stream)]
            except ResponseError:
                continue
            if not groups:
                continue
            floor: tuple[int, int] | None = None
            for group in groups:
                mark = parse_id(group.get("last-delivered-id") or "0-0")
                if int(group.get("pending") or 0):
                    summary = await self.redis.xpending(stream, group["name"])
                    if summary and summary.get("min"):
                        mark = min(mark, parse_id(summary["min"]))
                else:
                    mark = (mark[0], mark[1] + 1)  # everything up to the last delivered is acknowledged
                floor = mark if floor is None else min(floor, mark)
            if floor is not None:
                floor = min(floor, kept_since)
            if floor is not None and floor > (0, 0):
                minid = f"{floor[0]}-{floor[1]}"
                removed += int(await self.redis.xtrim(stream, minid=minid, approximate=False))
        return removed


def _pairs(reply: Any) -> dict[str, Any]:
    """An XINFO reply (a flat list, or a dict already) as a dict."""
    if isinstance(reply, dict):
        return {str(k): v for k, v in reply.items()}
    items = list(reply)
    return {str(items[i]): items[i + 1] for i in range(0, len(items), 2)}


async def _tolerant(redis: Any, fill: Any) -> list[Any]:
    pipe = redis.pipeline(transaction=False)
    fill(pipe)
    replies: list[Any] = await pipe.execute(raise_on_error=False)
    return replies


def _escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
