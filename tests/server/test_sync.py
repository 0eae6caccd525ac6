"""The SQL copy fed from the change log, on PostgreSQL, MariaDB and SQLite, from one Redis and from
the cluster: random changes copied exactly, a consumer killed mid-batch, Redis lost and rebuilt
from the copy, and the commands that go with it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from followgraph.server.settings import Settings
from followgraph.server.sync import SqlSync
from followgraph.store import FollowStore
from followgraph.store.redis.lua import Client
from followgraph.store.sql import mirror
from followgraph.store.sql.engine import create_engine
from followgraph.store.sql.snapshot import counts
from followgraph.transport.tracing import Tracing
from tests.conftest import TEST_SECRET
from tests.served import serve
from tests.server.copies import USERS, caught_up, copied_between, differences, poll, random_changes, register


@pytest.fixture
async def running_sync(store_on: FollowStore, copy_url: str) -> AsyncIterator[SqlSync]:
    feeder = SqlSync(store_on, copy_url, consumer="test", batch=50)
    stop = asyncio.Event()
    task = asyncio.create_task(feeder.run(stop))
    yield feeder
    stop.set()
    await task
    await feeder.aclose()


@pytest.fixture
async def store_on(served_redis: Client) -> FollowStore:
    """A store on a clean real Redis or the real cluster."""
    return FollowStore(served_redis)


async def test_random_changes_are_copied_exactly(
    store_on: FollowStore, running_sync: SqlSync, copy_url: str
) -> None:
    await register(store_on)
    await random_changes(store_on, random.Random(13), 400)
    await caught_up(running_sync)
    engine = create_engine(copy_url)
    try:
        found = await differences(store_on, engine)
        assert found.total == 0, found.examples
        total = await counts(engine)
        redis_side = await mirror.read_redis(store_on)
        assert (total.users, total.follows, total.blocks, total.mutes, total.pending_requests) == (
            len(redis_side.users),
            len(redis_side.follows),
            len(redis_side.blocks),
            len(redis_side.mutes),
            len(redis_side.requests),
        )
        assert total.follows > 10 and total.blocks > 0
    finally:
        await engine.dispose()


async def test_reconcile_finds_and_repairs_a_diverged_copy(
    store_on: FollowStore, running_sync: SqlSync, copy_url: str
) -> None:
    await register(store_on, USERS[:4])
    await store_on.follow(follower="u0", followee="u1")
    await store_on.follow(follower="u1", followee="u2")
    await caught_up(running_sync)
    engine = create_engine(copy_url)
    try:
        # Changes that bypass the log (a hand edit of Redis, say) make the two differ.
        await store_on.redis.zrem(store_on.keys.following("u0"), "u1")
        await store_on.redis.zadd(store_on.keys.following("u3"), {"u0": 5})
        found = await differences(store_on, engine)
        assert found.counts == {"follows only in SQL": 1, "follows only in Redis": 1}
        assert found.examples["follows only in Redis"] == ["u3 -> u0"]

        now = await mirror.redis_now_ms(store_on)
        sql_side, redis_side = await mirror.read_sql(engine), await mirror.read_redis(store_on)
        assert await mirror.repair_sql(engine, sql_side, redis_side, now) == 2
        assert (await differences(store_on, engine)).total == 0
    finally:
        await engine.dispose()


# -- inside serve ---------------------------------------------------------------------------------


async def test_serve_feeds_the_copy_and_reports_its_lag(
    served_redis: Client, copy_url: str, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, jwt_secret=TEST_SECRET, database_url=copy_url)
    store = FollowStore(served_redis)
    await register(store, ["ann", "bob"])
    engine = create_engine(copy_url)
    try:
        async with serve(settings, served_redis) as served:
            await store.follow(follower="ann", followee="bob")
            await poll(lambda: copied_between(engine, 1, 1))
            await poll(lambda: _ready_lag(served.client, 0))
            metrics = (await served.client.get("/metrics")).text
            assert "followgraph_sync_lag_events 0.0" in metrics
            assert "followgraph_sync_events_total" in metrics
    finally:
        await engine.dispose()


async def _ready_lag(client: httpx.AsyncClient, events: int) -> bool:
    sync: dict[str, object] = (await client.get("/readyz")).json()["sync"]
    return sync.get("status") == "ok" and sync.get("lag_events") == events


@pytest.mark.parametrize("url", ["oracle://u:p@h/db", "postgresql+psycopg2://u@h/db"])
async def test_an_unusable_database_url_stops_the_copy_without_retrying(
    store_on: FollowStore, url: str
) -> None:
    feeder = SqlSync(store_on, url, consumer="test")
    async with asyncio.timeout(5):  # a retry loop would wait on `stop`, never set here
        await feeder.run(asyncio.Event())
    assert feeder.engine is None
    assert feeder.state.error is not None and feeder.state.error.startswith("database URL unusable")


async def test_each_batch_applied_is_a_span_when_tracing_is_on(
    real_redis: aioredis.Redis, tmp_path: Path
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = FollowStore(real_redis)
    await register(store, ["ann", "bob", "cat"])
    feeder = SqlSync(store, f"sqlite:///{tmp_path / 'copy.db'}", consumer="test", tracing=Tracing(provider))
    stop = asyncio.Event()
    task = asyncio.create_task(feeder.run(stop))
    try:
        await store.follow(follower="ann", followee="bob")
        await store.follow(follower="cat", followee="bob")
        await caught_up(feeder)
    finally:
        stop.set()
        await task
        await feeder.aclose()
    batches = [s for s in exporter.get_finished_spans() if s.name == "sql batch"]
    assert batches
    assert all((s.attributes or {})["db.system.name"] == "sqlite" for s in batches)
    # Three users registered and two follows: five events, in however many batches.
    sizes = [(s.attributes or {})["followgraph.sql.events"] for s in batches]
    assert sum(size for size in sizes if isinstance(size, int)) == 5
    # A batch is a trace of its own: the consumer's reads of the log around it made no span.
    assert all(s.parent is None for s in exporter.get_finished_spans())
