"""Suggestions (friends of friends) timed in process on the loaded typical graph: the latency of
one call and its round trips, for viewers drawn at random."""

from __future__ import annotations

import random
import statistics
import time

import redis.asyncio as aioredis
import uvloop

from bench.graph import TypicalGraph
from followgraph.store import FollowStore
from tests.roundtrips import RoundTripCounter

VIEWERS = 300


class _CountingConnection(RoundTripCounter, aioredis.Connection):
    """A counting TCP connection."""


def measure_suggestions(graph: TypicalGraph, port: int) -> str:
    """'p50 / p99 ms, round trips per call, suggestions per call' over VIEWERS random viewers."""
    return uvloop.run(_measure(graph, port))


async def _measure(graph: TypicalGraph, port: int) -> str:
    pool = aioredis.ConnectionPool(
        connection_class=_CountingConnection, host="127.0.0.1", port=port, decode_responses=True
    )
    client = aioredis.Redis(connection_pool=pool)
    store = FollowStore(client)
    rng = random.Random(7)
    viewers = [graph.user_id(rng.randrange(graph.users)) for _ in range(VIEWERS)]
    await store.suggestions(viewers[0], first=10)  # the scripts loaded once
    seconds: list[float] = []
    found = 0
    _CountingConnection.sent = 0
    try:
        for viewer in viewers:
            started = time.perf_counter()
            found += len(await store.suggestions(viewer, first=10))
            seconds.append(time.perf_counter() - started)
    finally:
        await client.aclose()
        await pool.disconnect()
    p50 = statistics.median(seconds) * 1000
    p99 = statistics.quantiles(seconds, n=100)[98] * 1000
    trips = _CountingConnection.sent / len(viewers)
    per_call = found / len(viewers)
    return f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, {trips:g} round trips, {per_call:.1f} found per call"
