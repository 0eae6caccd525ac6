"""The SQL copy's feeder: a consumer of the change log (group `sql`) applying events to the
database, inside `serve` (each server process is one consumer of the group) or alone as
`followgraph sync`. Its lag is a metric and part of /readyz's body.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.server.private import private_directory
from followgraph.store import FollowStore
from followgraph.store.graph.events import Event
from followgraph.store.log.consumer import Consumer, ConsumerOptions
from followgraph.store.log.stream import EventLog, Lag
from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.engine import create_engine
from followgraph.store.sql.migrate import migrate
from followgraph.store.sql.urls import UnsupportedDatabaseError, hidden_url, sqlite_path
from followgraph.transport.tracing import Tracing

log = logging.getLogger(__name__)

GROUP = "sql"
# How often the lag is measured (the metric and /readyz read the last measure).
LAG_SECONDS = 2.0
# A consumer this far behind is reported in the log (the cap is what it may not pass).
LAG_WARNING_SHARE = 0.5


def consumer_name() -> str:
    """This process's name in the group: a restart under the same name (same host and pid, or
    `followgraph sync --consumer NAME`) picks up what the last run left pending."""
    return f"{socket.gethostname()}-{os.getpid()}"


class SyncMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.lag_events = Gauge(
            "followgraph_sync_lag_events",
            "Events of the change log the SQL copy has not applied yet.",
            registry=registry,
            multiprocess_mode="max",
        )
        self.lag_seconds = Gauge(
            "followgraph_sync_lag_seconds",
            "Age of the oldest event the SQL copy has not applied yet.",
            registry=registry,
            multiprocess_mode="max",
        )
        self.lost = Gauge(
            "followgraph_event_log_lost_events",
            "Events trimmed by the log's cap before the SQL copy read them (reconcile --repair-sql).",
            registry=registry,
            multiprocess_mode="max",
        )
        self.applied = Counter(
            "followgraph_sync_events", "Events applied to the SQL copy by this process.", registry=registry
        )


@dataclass
class SyncState:
    """What /readyz reports of the SQL copy."""

    lag: Lag | None = None
    measured_at: float = 0.0
    error: str | None = None

    def body(self) -> dict[str, object]:
        if self.lag is None:
            return {"status": "starting" if self.error is None else "failing", "error": self.error}
        out: dict[str, object] = {
            "status": "ok" if self.error is None else "failing",
            "lag_events": self.lag.events,
            "lag_seconds": round(self.lag.seconds, 3),
        }
        if self.lag.lost:
            out["lost_events"] = self.lag.lost
        if self.error is not None:
            out["error"] = self.error
        return out


class SqlSync:
    """Feeds the SQL copy at `url` from `store`'s change log until stopped."""

    def __init__(
        self,
        store: FollowStore,
        url: str,
        *,
        registry: CollectorRegistry | None = None,
        consumer: str | None = None,
        batch: int = 500,
        claim_idle_ms: int = 60_000,
        keep_seconds: float = 0.0,
        events: EventLog | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.store = store
        self.url = url
        # A process's readers of the log may share one (it keeps the list of a cluster's streams).
        self.log = events or EventLog(store)
        self.metrics = SyncMetrics(registry) if registry is not None else None
        self.state = SyncState()
        self.options = ConsumerOptions(
            group=GROUP,
            consumer=consumer or consumer_name(),
            batch=batch,
            claim_idle_ms=claim_idle_ms,
            keep_ms=int(keep_seconds * 1000),
        )
        self.engine: AsyncEngine | None = None
        self._warned_lost = 0
        # Each batch applied in a span, when tracing is on (transport/tracing.py).
        self.tracing = tracing

    async def start(self) -> AsyncEngine:
        """Bring the database's tables up to date (Alembic) and connect. A SQLite file's directory
        is created if need be (the data directory of a first start), private (server/private.py)."""
        path = sqlite_path(self.url)
        if path is not None:
            private_directory(path.parent)
        await migrate(self.url)
        self.engine = create_engine(self.url)
        return self.engine

    async def _apply(self, events: list[Event]) -> None:
        assert self.engine is not None
        if self.tracing is None:
            await apply_events(self.engine, events)
        else:
            with self.tracing.sql_batch(self.engine.dialect.name, len(events)):
                await apply_events(self.engine, events)
        if self.metrics is not None:
            self.metrics.applied.inc(len(events))

    async def run(self, stop: asyncio.Event) -> None:
        """Apply events until `stop` is set, measuring the lag as it goes. A database that is down
        at the start is retried like one that goes away later."""
        delay = 0.5
        while self.engine is None and not stop.is_set():
            try:
                await self.start()
            except (UnsupportedDatabaseError, ArgumentError) as exc:  # no retry mends the URL
                self.state.error = f"database URL unusable: {exc}"
                log.error("SQL copy off: %s", exc)
                return
            except Exception as exc:
                self.state.error = f"database unavailable: {type(exc).__name__}"
                log.warning(
                    "SQL copy at %s unavailable (%s); retrying in %.1fs", hidden_url(self.url), exc, delay
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=delay)
                delay = min(delay * 2, 10.0)
        if self.engine is None:
            return
        self.state.error = None
        consumer = Consumer(self.log, self._apply, self.options)
        log.info(
            "SQL copy at %s: consuming the change log as %s", hidden_url(self.url), self.options.consumer
        )
        async with asyncio.TaskGroup() as group:
            group.create_task(consumer.run(stop))
            group.create_task(self._measure(stop))

    async def _measure(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.measure()
            except Exception as exc:  # Redis away: the consumer says so; keep the last measure
                log.debug("sync lag not measured: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=LAG_SECONDS)

    async def measure(self) -> Lag:
        lag = await self.log.lag(GROUP)
        self.state.lag, self.state.measured_at = lag, time.monotonic()
        if self.metrics is not None:
            self.metrics.lag_events.set(lag.events)
            self.metrics.lag_seconds.set(lag.seconds)
            self.metrics.lost.set(lag.lost)
        if lag.lost > self._warned_lost:
            self._warned_lost = lag.lost
            log.error(
                "the change log's cap dropped %d events the SQL copy had not read: run "
                "`followgraph reconcile --repair-sql`, or raise FOLLOWGRAPH_EVENT_LOG_MAX",
                lag.lost,
            )
        elif lag.events > self.store.keys.log_cap * LAG_WARNING_SHARE:
            log.warning(
                "the SQL copy is %d events behind (the log keeps about %d)",
                lag.events,
                self.store.keys.log_cap,
            )
        return lag

    async def aclose(self) -> None:
        if self.engine is not None:
            await self.engine.dispose()
