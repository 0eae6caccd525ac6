"""`python -m bench.unlock`: unlocking an account with 100,000 pending follow requests.

On a Redis of its own (a unix socket; `--cluster` adds a 3-master Redis Cluster), each round loads
the requests (requests_in of the owner, requests_out of each requester, as a follow of a locked
account writes them), then unlocks the account as updateSettings(locked: false) does
(FollowStore.update_settings, then FollowStore.accept_all) while a reader in the same event loop pages a
100-entry list every millisecond. It reports how long the acceptance takes against the server's
request timeout, and the reader's latency during it against the same reads just before. Not a
test: it asserts no timings.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis.asyncio as aioredis
import uvloop

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore, ListKind
from followgraph.store.graph import controls as c
from followgraph.store.redis.channels import open_reads
from followgraph.store.redis.lua import AnyPipeline, Client, run_pipeline

OWNER, READER = "owner", "reader"
LOAD_CHUNK = 10_000
BASELINE_SECONDS = 2.0


@dataclass(frozen=True)
class Round:
    accepted: int
    seconds: float
    # Reader latency in ms: p50, p99, max, before the unlock and during it.
    before: tuple[float, float, float]
    during: tuple[float, float, float]


async def _load(store: FollowStore, requests: int) -> None:
    k = store.keys
    for user_id in (OWNER, READER):
        await store.upsert_user(user_id)
    await store.update_settings(OWNER, locked=True)
    for start in range(0, requests, LOAD_CHUNK):
        chunk = range(start, min(requests, start + LOAD_CHUNK))

        def fill(pipe: AnyPipeline, chunk: range = chunk) -> None:
            pipe.zadd(k.requests_in(OWNER), {f"r{i}": 1_000 + i for i in chunk})
            for i in chunk:
                pipe.zadd(k.requests_out(f"r{i}"), {OWNER: 1_000 + i})

        await run_pipeline(store.redis, fill)
    await store.redis.zadd(k.fans(READER), {f"f{i}": i for i in range(100)})


async def _read(store: FollowStore, stop: asyncio.Event, seconds: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await store.page(ListKind.FANS, READER, first=100)
        seconds.append(time.perf_counter() - started)
        await asyncio.sleep(0.001)


def _summary(seconds: list[float]) -> tuple[float, float, float]:
    ms = [s * 1000 for s in seconds]
    return statistics.median(ms), statistics.quantiles(ms, n=100, method="inclusive")[98], max(ms)


async def _round(client: Client, requests: int, batch: int | None) -> Round:
    await client.flushall()
    # With the read channel, as the server reads and accepts (server/app.py).
    reads = open_reads(client)
    try:
        return await _unlock(FollowStore(client, reads=reads), requests, batch)
    finally:
        if reads is not None:
            await reads.aclose()


async def _unlock(store: FollowStore, requests: int, batch: int | None) -> Round:
    await _load(store, requests)
    before: list[float] = []
    stop = asyncio.Event()
    reader = asyncio.create_task(_read(store, stop, before))
    await asyncio.sleep(BASELINE_SECONDS)
    stop.set()
    await reader
    during: list[float] = []
    stop = asyncio.Event()
    reader = asyncio.create_task(_read(store, stop, during))
    started = time.perf_counter()
    await store.update_settings(OWNER, locked=False)
    accepted = await store.accept_all(OWNER, batch=batch)
    seconds = time.perf_counter() - started
    stop.set()
    await reader
    if await store.pending_count(OWNER):
        raise SystemExit("Requests are still pending after the unlock.")
    return Round(accepted, seconds, _summary(before), _summary(during))


async def _rounds(client: Client, requests: int, rounds: int, batch: int | None) -> list[Round]:
    try:
        return [await _round(client, requests, batch) for _ in range(rounds)]
    finally:
        await client.aclose()


def _row(name: str, r: Round) -> str:
    b, d = r.before, r.during
    return (
        f"| {name} | {r.accepted:,} | {r.seconds:.2f} | {b[0]:.2f} / {b[1]:.2f} / {b[2]:.1f} "
        f"| {d[0]:.2f} / {d[1]:.2f} / {d[2]:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.unlock", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--batch",
        type=int,
        help=f"requests accepted per step (default: the store's, {c.ACCEPT_BATCH} on Redis, "
        f"{c.CLUSTER_ACCEPT_BATCH} on a cluster)",
    )
    parser.add_argument("--cluster", action="store_true", help="also on a 3-master Redis Cluster")
    args = parser.parse_args()
    timeout = Settings().request_timeout
    results: dict[str, list[Round]] = {}
    with tempfile.TemporaryDirectory() as root:
        with RedisServer(Path(root) / "redis") as server:
            client = aioredis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
            results["Redis"] = uvloop.run(_rounds(client, args.requests, args.rounds, args.batch))
        if args.cluster:
            with LocalCluster(directory=Path(root) / "cluster") as cluster:
                on_cluster = connect(cluster.url, timeout=10.0)
                results["Redis Cluster"] = uvloop.run(
                    _rounds(on_cluster, args.requests, args.rounds, args.batch)
                )
    print(
        f"Unlocking an account with {args.requests:,} pending requests (batches of "
        f"{args.batch or f'{c.ACCEPT_BATCH} on Redis, {c.CLUSTER_ACCEPT_BATCH} on the cluster'}; "
        f"request timeout {timeout:g} s), a 100-entry page read every ms meanwhile."
    )
    print("| backend | accepted | unlock s | read ms before: p50 / p99 / max | during: p50 / p99 / max |")
    print("| --- | --- | --- | --- | --- |")
    for name, rounds in results.items():
        for r in rounds:
            print(_row(name, r))


if __name__ == "__main__":
    main()
