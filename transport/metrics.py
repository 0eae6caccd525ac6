"""Prometheus metrics: requests by operation and outcome, latency, Redis errors, batch sizes, open
WebSocket connections and subscriptions, and the profiles kept on a cluster.

With several worker processes, PROMETHEUS_MULTIPROC_DIR makes every process write its values to
that directory and /metrics adds them up (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from bisect import bisect_left
from collections.abc import Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    start_wsgi_server,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from followgraph.store.redis.tracking import CacheStats

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# profile_cache's events, and the CacheStats field each counts.
_CACHE_EVENTS = (
    ("kept", "hits"),
    ("read", "misses"),
    ("invalidation", "invalidations"),
    ("changed", "changed"),
)
_OPERATION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# Operation names come from clients: past this many distinct names, the rest count as "other".
MAX_OPERATION_NAMES = 200
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_BOUNDS = [*map(floatToGoString, LATENCY_BUCKETS), "+Inf"]
REQUESTS_HELP = "GraphQL requests by operation name and outcome."
LATENCY_HELP = "Time to answer a GraphQL request."


class RequestCounts:
    """followgraph_requests and followgraph_request_duration_seconds of one process, counted in
    plain lists and handed to the registry when it collects.

    prometheus-client's Counter.inc and Histogram.observe take three locks and some ten Python
    calls a request: 2.5% of the fans page's instructions in process (callgrind: 20k of 790k),
    against 0.7% here, where a request is a dictionary lookup, a bisect and two additions.

    A scrape from the metrics port's thread reads the lists while the event loop adds to them: a
    request counted meanwhile may show in the next scrape's sum rather than this one's, never
    twice or in a wrong bucket.
    (With several worker processes, each writes its values where the others can add them up:
    Metrics then counts through prometheus-client instead.)"""

    def __init__(self) -> None:
        # (operation, outcome) -> when it was first counted, and its requests by latency bucket
        # (the last for +Inf) followed by the sum of their latencies.
        self._series: dict[tuple[str, str], tuple[float, list[float]]] = {}

    def observe(self, operation: str, outcome: str, seconds: float) -> None:
        series = self._series.get((operation, outcome))
        if series is None:
            series = self._series[operation, outcome] = (time.time(), [0.0] * (len(LATENCY_BUCKETS) + 2))
        row = series[1]
        row[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        row[-1] += seconds

    def describe(self) -> Iterator[Metric]:
        return iter(_request_families())

    def collect(self) -> Iterator[Metric]:
        requests, latency = _request_families()
        by_operation: dict[str, list[float]] = {}
        for (operation, outcome), (created, row) in list(self._series.items()):  # one C call
            values = row[:]
            requests.add_metric([operation, outcome], sum(values[:-1]), created=created)
            merged = by_operation.setdefault(operation, [0.0] * len(values))
            for i, value in enumerate(values):
                merged[i] += value
        for operation, values in sorted(by_operation.items()):
            buckets, seen = [], 0.0
            for bound, count in zip(_BOUNDS, values[:-1], strict=True):
                seen += count
                buckets.append((bound, seen))
            latency.add_metric([operation], buckets, sum_value=values[-1])
        yield requests
        yield latency


def _request_families() -> tuple[CounterMetricFamily, HistogramMetricFamily]:
    return (
        CounterMetricFamily("followgraph_requests", REQUESTS_HELP, labels=["operation", "outcome"]),
        HistogramMetricFamily("followgraph_request_duration_seconds", LATENCY_HELP, labels=["operation"]),
    )


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        # In one process, plain counts; with several, prometheus-client's shared values.
        self._counts: RequestCounts | None = None
        if os.environ.get(MULTIPROC_ENV):
            self.requests = Counter(
                "followgraph_requests", REQUESTS_HELP, ["operation", "outcome"], registry=self.registry
            )
            self.latency = Histogram(
                "followgraph_request_duration_seconds",
                LATENCY_HELP,
                ["operation"],
                buckets=LATENCY_BUCKETS,
                registry=self.registry,
            )
        else:
            self._counts = RequestCounts()
            self.registry.register(self._counts)
        self.redis_errors = Counter(
            "followgraph_redis_errors",
            "Requests that failed on a Redis error, by error type.",
            ["error"],
            registry=self.registry,
        )
        self.batch_size = Histogram(
            "followgraph_dataloader_batch_size",
            "Keys per DataLoader batch (one Redis round trip each).",
            ["loader"],
            buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000),
            registry=self.registry,
        )
        # livesum: with several worker processes, the live processes' values are added up.
        self.ws_connections = Gauge(
            "followgraph_ws_connections",
            "Open WebSocket connections (graphql-transport-ws).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.subscriptions = Gauge(
            "followgraph_subscriptions",
            "Operations running over WebSocket connections (viewerEvents subscriptions).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.dispatch_delay = Histogram(
            "followgraph_event_dispatch_delay_seconds",
            "From a change's append to the log to its dispatch to this process's subscribers "
            "(across hosts, as far as their clocks agree).",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.profile_cache = Counter(
            "followgraph_profile_cache",
            "Users' profiles the read channel wanted, by where they came from (kept: "
            "this process's copy; read: Redis), the invalidations Redis sent for the kept ones "
            "(invalidation), and the reads that found a kept one changed and read again (changed).",
            ["event"],
            registry=self.registry,
        )
        self.account_changes = Gauge(
            "followgraph_account_change_users_left",
            "Users that the deactivations, reactivations and deletions in batches this process runs "
            "(big accounts, a cluster) have still to visit; 0 when none runs.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self._left: dict[str, int] = {}
        # The read channel's counts (store/redis/tracking.py), added to profile_cache by export_cache().
        self._cache: tuple[CacheStats, CacheStats] | None = None
        self._names: set[str] = set()
        # The labelled series of each (operation, outcome) seen: labels() costs some 2 µs a call.
        self._series: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def operation(self, name: str | None) -> str:
        """A bounded label for a client-chosen operation name: "unnamed" when the document names
        none, "other" past MAX_OPERATION_NAMES or for a name that is not a GraphQL name."""
        if not name:
            return "unnamed"
        if not _OPERATION_NAME.fullmatch(name):
            return "other"
        if name not in self._names:
            if len(self._names) >= MAX_OPERATION_NAMES:
                return "other"
            self._names.add(name)
        return name

    def observe_request(self, operation: str, outcome: str, seconds: float) -> None:
        counts = self._counts
        if counts is not None:
            counts.observe(operation, outcome, seconds)
            return
        series = self._series.get((operation, outcome))
        if series is None:
            series = self._series[operation, outcome] = (
                self.requests.labels(operation, outcome),
                self.latency.labels(operation),
            )
        count, latency = series
        count.inc()
        latency.observe(seconds)

    def account_change(self, user_id: str, left: int) -> None:
        """A change in batches of `user_id`'s account has `left` users to visit (0: it ended)."""
        if left:
            self._left[user_id] = left
        else:
            self._left.pop(user_id, None)
        self.account_changes.set(sum(self._left.values()))

    def observe_batch(self, loader: str, size: int) -> None:
        self.batch_size.labels(loader).observe(size)

    def watch_cache(self, stats: CacheStats) -> None:
        """Count `stats` (the read channel's) in profile_cache, from now on."""
        self._cache = (stats, dataclasses.replace(stats))

    def export_cache(self) -> None:
        """Add what the read channel counted since the last call to profile_cache: its counts are
        plain integers, cheaper on the read path than a metric each."""
        if self._cache is None:
            return
        stats, exported = self._cache
        for event, name in _CACHE_EVENTS:
            delta = getattr(stats, name) - getattr(exported, name)
            if delta:
                self.profile_cache.labels(event).inc(delta)
                setattr(exported, name, getattr(stats, name))

    def render(self) -> bytes:
        self.export_cache()
        if os.environ.get(MULTIPROC_ENV):
            return generate_latest(workers_registry())
        return generate_latest(self.registry)


def workers_registry() -> CollectorRegistry:
    """A registry that adds up the values every worker process writes to PROMETHEUS_MULTIPROC_DIR."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return registry


def serve_metrics(host: str, port: int, registry: CollectorRegistry) -> WSGIServer:
    """Serve `registry` at /metrics on its own port, from a thread; shutdown() stops it."""
    server, _thread = start_wsgi_server(port, addr=host, registry=registry)
    return server
