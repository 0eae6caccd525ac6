"""The search index's feeder: a consumer of the change log (group `search`) that keeps the index of
store/graph/search_index.py in step with the users, inside `serve` (each server process is one
consumer of the group).

The first time, before anything is indexed, one process builds the index from every registered
user (the others go on consuming); the events that come meanwhile are read by the group after
the build, so nothing falls between the two. A new or renamed user is found about as soon as the
consumer reads the event: within the read's wait on one Redis, within a poll (half a second) on a
cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from followgraph.server.sync import consumer_name
from followgraph.store import FollowStore
from followgraph.store.graph.events import Event
from followgraph.store.graph.search_index import touched
from followgraph.store.log.consumer import Consumer, ConsumerOptions
from followgraph.store.log.stream import EventLog

log = logging.getLogger(__name__)

GROUP = "search"
# How long the process building the index holds the right to: renewed at every batch.
BUILD_LEASE_SECONDS = 60


async def build_index(store: FollowStore, *, progress: Callable[[int], Awaitable[None]] | None = None) -> int:
    """Index every registered user; how many there were. `progress` is told each batch's size."""
    users = 0
    async for batch in store.scan_user_ids():
        await store.index_users(batch)
        users += len(batch)
        if progress is not None:
            await progress(len(batch))
    await store.redis.set(store.keys.search_built(), str(int(time.time() * 1000)))
    return users


class SearchIndexer:
    """Feeds `store`'s search index from its change log until stopped."""

    def __init__(
        self,
        store: FollowStore,
        *,
        consumer: str | None = None,
        batch: int = 500,
        keep_seconds: float = 0.0,
        events: EventLog | None = None,
    ) -> None:
        self.store = store
        self.log = events or EventLog(store)
        self.options = ConsumerOptions(
            group=GROUP,
            consumer=consumer or consumer_name(),
            batch=batch,
            keep_ms=int(keep_seconds * 1000),
        )

    async def _apply(self, events: list[Event]) -> None:
        await self.store.index_users(touched(events))

    async def run(self, stop: asyncio.Event) -> None:
        """Build the index if it never was, then apply events until `stop` is set."""
        delay = 0.5
        while not stop.is_set():
            try:
                await self.log.join(GROUP)
                await self._build_once()
                break
            except Exception as exc:
                log.warning("search index: not built yet (%s); retrying in %.1fs", exc, delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=delay)
                delay = min(delay * 2, 10.0)
        await Consumer(self.log, self._apply, self.options).run(stop)

    async def _build_once(self) -> None:
        """Build the index unless it was built, or another process is building it."""
        k, redis = self.store.keys, self.store.redis
        if await redis.exists(k.search_built()):
            return
        lease = k.search_lease()
        me = self.options.consumer
        if not await redis.set(lease, me, nx=True, ex=BUILD_LEASE_SECONDS):
            return

        async def renew(_: int) -> None:
            await redis.set(lease, me, ex=BUILD_LEASE_SECONDS)

        started = time.monotonic()
        users = await build_index(self.store, progress=renew)
        await redis.delete(lease)
        log.info("search index built: %d users in %.1fs", users, time.monotonic() - started)

    async def aclose(self) -> None:
        """Nothing to release: the consumer stops with `run`."""
