"""The SQL copy through faults: its consumer killed mid-batch, and Redis lost for good and rebuilt
from the copy, on PostgreSQL, MariaDB and SQLite."""

from __future__ import annotations

import asyncio
import functools
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from followgraph.server.redis_client import connect
from followgraph.server.sync import GROUP, SqlSync
from followgraph.store import FollowStore
from followgraph.store.graph.bulk import follow_many
from followgraph.store.graph.follows import Edge
from followgraph.store.log.stream import EventLog
from followgraph.store.redis.lua import Client
from followgraph.store.sql import mirror
from followgraph.store.sql.engine import create_engine
from followgraph.store.sql.snapshot import counts
from tests.faults.conftest import StartRedis
from tests.server.copies import caught_up, copied_between, differences, poll, random_changes, register

# -- a consumer killed mid-batch ----------------------------------------------------------------


def sync_process(redis_url: str, sql_url: str, data_dir: Path) -> subprocess.Popen[bytes]:
    """`followgraph sync` as its own process; what it prints goes to data_dir/sync.log."""
    env = {**os.environ, "FOLLOWGRAPH_SYNC_BATCH": "200", "FOLLOWGRAPH_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "followgraph.cli", "sync", "--consumer", "killed"]
    command += ["--redis-url", redis_url, "--database-url", sql_url, "--data-dir", str(data_dir)]
    with (data_dir / "sync.log").open("ab") as output:
        return subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)


async def test_a_consumer_killed_mid_batch_loses_and_doubles_nothing(
    start_redis: StartRedis, copy_url: str, tmp_path: Path
) -> None:
    server = start_redis()
    store = FollowStore(server_client(server.url))
    engine = create_engine(copy_url)
    try:
        users = [f"k{i}" for i in range(100)]
        await register(store, users)
        edges = [Edge(a, b) for a in users for b in users[:40] if a != b]
        for start in range(0, len(edges), 500):
            await follow_many(store, edges[start : start + 500])
        total = len(edges)

        # Killed as soon as it has copied more: most kills land mid-batch (a batch read, not yet
        # acknowledged); a few tries make sure one does.
        kills_mid_batch = 0
        for _ in range(5):
            before = (await counts(engine)).follows
            process = sync_process(server.url, copy_url, tmp_path)
            try:
                await poll(functools.partial(copied_between, engine, before + 1, total - 1))
            finally:
                process.send_signal(signal.SIGKILL)
                process.wait()
            pending = await store.redis.xpending(store.keys.log("k0"), GROUP)
            kills_mid_batch += pending["pending"] > 0
            if kills_mid_batch:
                break
        assert kills_mid_batch, "no kill landed mid-batch"
        assert 0 < (await counts(engine)).follows < total

        again = sync_process(server.url, copy_url, tmp_path)
        try:
            await poll(lambda: _lag_is(store, 0))
        finally:
            again.send_signal(signal.SIGTERM)
            assert again.wait(timeout=30) == 0, (tmp_path / "sync.log").read_text()
        assert (await counts(engine)).follows == total
        assert (await differences(store, engine)).total == 0
        assert (await store.redis.xpending(store.keys.log("k0"), GROUP))["pending"] == 0
    finally:
        await engine.dispose()
        await store.redis.aclose()


def server_client(url: str) -> Client:
    return connect(url, timeout=10.0)


async def _lag_is(store: FollowStore, events: int) -> bool:
    return (await EventLog(store).lag(GROUP)).events == events


# -- Redis lost, rebuilt from the copy ------------------------------------------------------------


async def test_redis_lost_and_rebuilt_from_the_copy(start_redis: StartRedis, copy_url: str) -> None:
    server = start_redis(appendonly=True)
    store = FollowStore(server_client(server.url))
    feeder = SqlSync(store, copy_url, consumer="rebuild", batch=100)
    stop = asyncio.Event()
    task = asyncio.create_task(feeder.run(stop))
    rng = random.Random(7)
    try:
        await register(store)
        await random_changes(store, rng, 300)
        await caught_up(feeder)
        copied = await mirror.read_redis(store)
        stop.set()
        await task

        # Changes the copy never sees: the lag says how many.
        await register(store, ["late", "later"])
        await store.follow(follower="late", followee="later")
        final = await mirror.read_redis(store)
        lag = await feeder.measure()
        assert lag.events == 3

        server.kill()
        for path in server.directory.iterdir():  # its data (AOF files or directory) is gone for good
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        server.start()
        await store.redis.aclose()
        store = FollowStore(server_client(server.url))
        assert await store.redis.dbsize() == 0

        engine = create_engine(copy_url)
        try:
            report = await mirror.rebuild(store, engine)
            assert report.refused == {}
        finally:
            await engine.dispose()
        rebuilt = await mirror.read_redis(store)
        assert rebuilt == copied
        # Only the changes the copy had not applied are missing, as many as the lag said.
        missing = mirror.compare(rebuilt, final)
        assert missing.counts == {"users only in Redis": 2, "follows only in Redis": 1}
    finally:
        stop.set()
        await feeder.aclose()
        await store.redis.aclose()
