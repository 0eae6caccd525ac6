"""A consumer of the change log: reads through a consumer group, hands batches to a handler,
acknowledges them once the handler returns, and trims the log behind every group.

At least once: a batch is acknowledged only after its handler succeeded, so a consumer killed
mid-batch gets the batch again when it comes back under the same name (its pending events are
read first), and a consumer that never comes back loses its batch to the others after
`claim_idle_ms`. Handlers must therefore be idempotent, as the SQL copy is.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from redis.exceptions import RedisError

from followgraph.store.graph.events import Event
from followgraph.store.log.stream import Delivery, EventLog

log = logging.getLogger(__name__)

Handler = Callable[[list[Event]], Awaitable[None]]


class HandlerTimeoutError(Exception):
    """The handler did not finish a batch in time."""


@dataclass(frozen=True, slots=True)
class ConsumerOptions:
    group: str
    consumer: str
    batch: int = 500
    # How long one read waits for new events (one Redis), or the pause between polls (a cluster).
    wait_ms: int = 500
    # Events a consumer was given and left unacknowledged this long are taken over by another.
    claim_idle_ms: int = 60_000
    # How often the log is trimmed behind the groups, and idle streams looked for on a cluster.
    trim_seconds: float = 5.0
    # Acknowledged events younger than this are kept all the same (catch-up reads by id).
    keep_ms: int = 0
    # Pause after a failed batch (Redis or the handler), doubling up to ten times this.
    retry_seconds: float = 0.5
    # A handler that has not returned by then is given up on (a database that stopped answering
    # must not stall the consumer for good): the batch stays pending and is read again.
    handler_seconds: float = 30.0


class Consumer:
    def __init__(self, events: EventLog, handle: Handler, options: ConsumerOptions) -> None:
        self.log = events
        self.handle = handle
        self.options = options
        self.applied = 0
        self.batches = 0
        self._trimmed_at = time.monotonic()
        self._claimed_at = float("-inf")

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until `stop` is set; failures are logged and retried, never raised."""
        o = self.options
        delay = o.retry_seconds
        started = False
        while not stop.is_set():
            try:
                if not started:
                    await self.log.join(o.group)
                    await self._drain_pending()
                    started = True
                await self.step()
                delay = o.retry_seconds
            except (RedisError, OSError) as exc:
                log.warning(
                    "event consumer %s: redis unavailable (%s); retrying in %.1fs", o.consumer, exc, delay
                )
                started = False
                await _sleep(stop, delay)
                delay = min(delay * 2, o.retry_seconds * 10)
            except Exception:
                # The handler failed (a database down, say): its batch stays pending and is read
                # again, first thing, once the consumer starts over.
                log.exception("event consumer %s: a batch failed; retrying in %.1fs", o.consumer, delay)
                started = False
                await _sleep(stop, delay)
                delay = min(delay * 2, o.retry_seconds * 10)

    async def _drain_pending(self) -> None:
        o = self.options
        while True:
            delivery = await self.log.read_group(o.group, o.consumer, count=o.batch, block_ms=0, pending=True)
            if not delivery.events:
                return
            await self._apply(delivery)

    async def step(self) -> int:
        """One read (new events, and now and then events dead consumers left), applied and
        acknowledged; returns how many events it applied."""
        o = self.options
        applied = 0
        if time.monotonic() - self._claimed_at > o.claim_idle_ms / 1000 / 2:
            self._claimed_at = time.monotonic()
            claimed = await self.log.claim(o.group, o.consumer, min_idle_ms=o.claim_idle_ms, count=o.batch)
            applied += await self._apply(claimed)
        delivery = await self.log.read_group(o.group, o.consumer, count=o.batch, block_ms=o.wait_ms)
        applied += await self._apply(delivery)
        if time.monotonic() - self._trimmed_at > o.trim_seconds:
            self._trimmed_at = time.monotonic()
            await self.log.streams(fresh=True)
            await self.log.trim(keep_ms=o.keep_ms)
        if not applied and self.log.store.cluster:
            await asyncio.sleep(o.wait_ms / 1000)
        return applied

    async def _apply(self, delivery: Delivery) -> int:
        if not delivery.events:
            return 0
        try:
            async with asyncio.timeout(self.options.handler_seconds):
                await self.handle(delivery.events)
        except TimeoutError:
            # Not an OSError to the loop above: it is the handler's, not Redis's.
            raise HandlerTimeoutError(f"a batch took over {self.options.handler_seconds:g} s") from None
        await self.log.ack(self.options.group, delivery)
        self.applied += len(delivery.events)
        self.batches += 1
        return len(delivery.events)


async def _sleep(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        pass
