"""The write scenarios' reference: FollowStore.follow/unfollow in a loop in the harness process,
with no HTTP and no GraphQL."""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING

import uvloop

from bench.cpu import meter, own_seconds
from bench.graph import fan_id
from bench.loadgen import FollowCycle, LoadResult, RequestSpec, summarize
from bench.model import Row
from bench.queries import FOLLOW_MUTATION, UNFOLLOW_MUTATION
from bench.redisstats import RedisWork, Snapshot, Stats
from followgraph.server.redis_client import connect
from followgraph.server.settings import Settings
from followgraph.store import FollowStore

if TYPE_CHECKING:
    from bench.suite import Bench


def raw_follow(bench: Bench, stats: Stats, url: str, first: int, targets: int, round_trips: float) -> Row:
    writers = bench.graph.writers
    concurrency, warmup, duration = bench.options.concurrency, bench.options.warmup, bench.options.duration

    async def loop() -> LoadResult:
        client = connect(url)
        store = FollowStore(client)
        limit = Settings().follow_limit  # the server's default, counted as A counts it
        state = {"recording": False, "stopping": False}
        latencies: list[int] = []
        total = [0]
        span = max(1, targets // concurrency)

        async def worker(c: int) -> None:
            step = 0
            while not state["stopping"]:
                pair = step // 2
                me = writers[(c + pair * concurrency) % len(writers)]
                target = fan_id(first + c * span + pair % span)
                started = time.perf_counter_ns()
                if step % 2 == 0:
                    await store.follow(follower=me, followee=target, limit=limit)
                else:
                    await store.unfollow(follower=me, followee=target)
                total[0] += 1
                if state["recording"]:
                    latencies.append(time.perf_counter_ns() - started)
                step += 1

        try:
            tasks = [asyncio.create_task(worker(c)) for c in range(concurrency)]
            await asyncio.sleep(warmup)
            state["recording"] = True
            started = time.perf_counter()
            await asyncio.sleep(duration)
            state["recording"] = False
            seconds = time.perf_counter() - started
            state["stopping"] = True
            await asyncio.gather(*tasks)
        finally:
            await client.aclose()
        return summarize("in-process asyncio loop", latencies, seconds, 0, total[0], 0)

    affinity = os.sched_getaffinity(0)
    if bench.layout.app is not None:
        os.sched_setaffinity(0, bench.layout.app)
    try:
        before = Snapshot.take(stats)
        cpu = meter(bench._our_pids)
        own = own_seconds()
        load = uvloop.run(loop())
        own = own_seconds() - own
        others = cpu().others_percent
        after = Snapshot.take(stats)
    finally:
        os.sched_setaffinity(0, affinity)
    work = RedisWork.between(before, after, load.total)
    bench.say(
        f"  {'FOLLOW script (FollowStore) loop':<34} {load.rps:>9,.0f} ops/s  p50 {load.p50_ms:6.2f} ms"
        f"  p99 {load.p99_ms:6.2f} ms  {work.commands_per_request:.1f} cmds/op  others' CPU {others:.0f}%"
    )
    own_ms = 1000 * own / load.total if load.total else None
    return Row("FOLLOW/UNFOLLOW script loop", load, work, round_trips, "no HTTP, no GraphQL", others, own_ms)


def writes(bench: Bench, stats: Stats, counts: dict[str, float], url: str) -> None:
    """A's follow/unfollow mutations beside the FOLLOW script alone, in the harness process."""
    writes = bench._group("writes", "Writes: follow/unfollow mutations through A vs the FOLLOW script alone")
    half = bench.graph.population // 2
    cycle = FollowCycle(bench.writer_tokens, "f", 1, half, FOLLOW_MUTATION, UNFOLLOW_MUTATION)
    writes.rows.append(
        bench.measure(
            stats,
            "A follow/unfollow mutations",
            bench._a,
            bench.port_a,
            RequestSpec("/graphql", "", {}, follow_cycle=cycle),
            counts["A:mutation"],
            f"{len(bench.writer_tokens)} viewer tokens, alternating follow X / unfollow X",
        )
    )
    writes.rows.append(raw_follow(bench, stats, url, half + 1, half, counts["raw:follow"]))
    writes.notes += [
        "The script loop runs FollowStore.follow/unfollow in the harness process (pinned to the "
        "server's CPU), with the same concurrency, on the server's client settings "
        "(server.redis_client), with the server's follow rate limit (400/day) counted in the "
        "script as A counts it.",
        "A's mutations run from their compiled plans (executor/mutation_plan.py) after each document's "
        "first request; A's in-process SQL consumer (FOLLOWGRAPH_SYNC, on by default) copies every "
        "follow to SQLite in the same process meanwhile.",
    ]
