"""One reader of the change log per server process, fanning its events out to local subscribers.

Every process tails the whole log, so whichever process made a change, each process sees it and
hands it to the subscribers it holds for the two users named by the event. The log, not pub/sub,
is the source: it is already written atomically with every change, it orders the events a reader
sees, a reader that stalls resumes from its position instead of losing messages, and a
subscriber that reconnects replays from the same log by id (catch-up), so live and replayed
events are one stream with one id space.

On one Redis the reader blocks on XREAD (an event reaches the subscribers within a round trip);
on a cluster, whose log is a stream per slot, it polls the streams that exist (EventLog.tail)
every `poll_seconds`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import RedisError

from followgraph.store.graph.events import Event
from followgraph.store.log.stream import EventLog

log = logging.getLogger(__name__)

# After a Redis error the reader waits this long before reading again, from where it was.
RETRY_SECONDS = 0.5


class FellBehindError(Exception):
    """A subscriber's buffer filled up: events were dropped, so its stream must end."""

    def __init__(self, buffer: int) -> None:
        super().__init__(
            f"This subscription fell behind: more than {buffer} events waited for it, so it was ended. "
            "Subscribe again with `after` set to the last eventId received to catch up."
        )
        self.buffer = buffer


@dataclass(eq=False, slots=True)
class Subscriber:
    """The events of one user for one subscription, in the order the reader saw them."""

    user_id: str
    queue: asyncio.Queue[Event]
    overflowed: bool = False
    # Called once when the buffer overflows (wakes a consumer that waits on something else).
    on_overflow: Callable[[], None] | None = field(default=None, repr=False)

    def offer(self, event: Event) -> None:
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.overflowed = True
            if self.on_overflow is not None:
                self.on_overflow()

    async def get(self) -> Event:
        """The next event; FellBehindError once the buffer has overflowed."""
        if self.overflowed:
            raise FellBehindError(self.queue.maxsize)
        event = await self.queue.get()
        if self.overflowed:
            raise FellBehindError(self.queue.maxsize)
        return event


class EventHub:
    """Tails the log in one task and dispatches relation events to subscribers by user id."""

    def __init__(
        self,
        events: EventLog,
        *,
        buffer: int = 1000,
        poll_seconds: float = 0.05,
        block_ms: int = 100,
        observe: Callable[[float], None] | None = None,
    ) -> None:
        self.events = events
        self.buffer = buffer
        self.poll_seconds = poll_seconds
        self.block_ms = block_ms
        self._by_user: dict[str, set[Subscriber]] = {}
        self._task: asyncio.Task[None] | None = None
        self._started = asyncio.Event()
        self._stopping = False
        # On a cluster: each slot stream's position (EventLog.tail's cursors).
        self._cursors: dict[str, str] | None = None
        # Called with the seconds from each event's append (its id's ms) to its dispatch here.
        self.observe = observe

    # -- subscribers ----------------------------------------------------------------------------

    def subscribe(self, user_id: str) -> Subscriber:
        """A subscriber that receives every relation event naming `user_id` from now on."""
        subscriber = Subscriber(user_id, asyncio.Queue(maxsize=self.buffer))
        self._by_user.setdefault(user_id, set()).add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        subscribers = self._by_user.get(subscriber.user_id)
        if subscribers is not None:
            subscribers.discard(subscriber)
            if not subscribers:
                del self._by_user[subscriber.user_id]

    @property
    def subscribers(self) -> int:
        return sum(len(s) for s in self._by_user.values())

    def dispatch(self, event: Event) -> None:
        if not event.kind.relation:
            return
        for user_id in {event.actor, event.target}:
            for subscriber in self._by_user.get(user_id or "", ()):
                subscriber.offer(event)
        if self.observe is not None:
            self.observe(max(0.0, time.time() - event.version[0] / 1000))

    # -- the reader -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the reader, if it is not running; returns once it has its position in the log
        (what comes next is seen). The first subscription starts it: a process nobody subscribes
        to does not read the log."""
        if self._task is None:
            self._stopping = False
            self._started.clear()
            self._task = asyncio.create_task(self._run(), name="followgraph-event-hub")
        await self._started.wait()

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop the reader after its current read. It is asked, not cancelled: redis-py (8.1) can
        hang cancelling a command that blocks, so each read blocks only briefly."""
        if self._task is None:
            return
        self._stopping = True
        try:
            async with asyncio.timeout(timeout):
                await self._task
        except TimeoutError:
            log.warning("event hub: the reader did not stop within %g s; cancelled", timeout)
        finally:
            self._task = None

    async def _run(self) -> None:
        after: str | None = None
        while not self._stopping:
            try:
                async for event in self._read(after):
                    after = event.id
                    self.dispatch(event)
            except (RedisError, OSError) as exc:
                log.warning("event hub: reading the change log failed (%s); retrying", exc)
                self._started.set()
                await asyncio.sleep(RETRY_SECONDS)

    def _read(self, after: str | None) -> AsyncIterator[Event]:
        if self.events.store.cluster:
            return self._poll(after)
        return self._block(after)

    async def _poll(self, after: str | None) -> AsyncIterator[Event]:
        # The streams' positions outlive a failed read: the next one goes on from them.
        if self._cursors is None:
            self._cursors = await self.events.positions()
        self._started.set()
        while not self._stopping:
            async for event in self.events.tail(follow=False, cursors=self._cursors):
                yield event
            await asyncio.sleep(self.poll_seconds)

    async def _block(self, after: str | None) -> AsyncIterator[Event]:
        [(stream, newest)] = (await self.events.positions()).items()
        redis = self.events.redis
        after = after or newest
        self._started.set()
        while not self._stopping:
            replies: Any = await redis.xread({stream: after}, count=1000, block=self.block_ms)
            for _name, entries in replies or []:
                for event_id, fields in entries:
                    after = str(event_id)
                    yield Event.of_entry(after, fields)
