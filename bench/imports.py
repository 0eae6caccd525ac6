"""Bringing a graph over (#41): `followgraph import` of a CSV of EDGES follows (USERS users, a third of
the follows to POPULAR accounts, in random order) into an empty Redis of its own, timed as a whole
command, then of the same follows sorted by follower (as a table keyed by follower exports them);
beside it two references into another empty Redis: the raw one, the same follows' two ZADDs each
pipelined over one socket (bench/graph.py's loader, what `redis-cli --pipe` does: no rule, no event,
no user), and the least a script can do for them (FLOOR: a batch a call, each follow's own writes
as the import makes them and nothing else: its ZADD, the follow back's ZSCORE where the follow back
came before it and the mutual ZADDs, the fans' ZADD a followee); then `followgraph export` of the
imported follows. Each in turn, ROUNDS times; the medians, and each import's rate as a share of the
raw one. Last, the random file's import into a
3-master cluster (CLUSTER_MASTERS nodes sharing the single Redis' core, as in bench/cluster.py),
its 200,000 first follows in a full run, where each slot's follows go to an event on the slot's
own log.
"""

from __future__ import annotations

import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from bench.graph import open_pipe
from bench.processes import child_env, child_setup, free_port, pin
from bench.resp import pack
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer, find_redis_server
from followgraph.store import Keys
from followgraph.store.graph.imports import FOLLOW_PART, USER_KEYS
from followgraph.store.graph.scripts import NOW
from followgraph.store.graph.sources import included, source

if TYPE_CHECKING:
    from bench.suite import Bench

EDGES, QUICK_EDGES = 1_000_000, 200_000
USERS, QUICK_USERS = 200_000, 40_000
# Accounts that a third of the follows go to.
POPULAR = 200
ROUNDS, QUICK_ROUNDS = 2, 1
START_MS = 1_767_225_600_000
CLUSTER_MASTERS = 3
# Follows of the cluster's file: the random file's first ones (a cluster imports some 14,000 a
# second here, its nodes on one core).
CLUSTER_EDGES = 200_000


@dataclass
class ImportResults:
    edges: int = 0
    users: int = 0
    import_seconds: list[float] = field(default_factory=list)
    sorted_seconds: list[float] = field(default_factory=list)
    raw_seconds: list[float] = field(default_factory=list)
    floor_seconds: list[float] = field(default_factory=list)
    export_seconds: list[float] = field(default_factory=list)
    cluster_edges: int = 0
    cluster_seconds: list[float] = field(default_factory=list)

    def rate(self, seconds: list[float]) -> float:
        return self.edges / statistics.median(seconds) if seconds else 0.0


def _edges(edges: int, users: int) -> Iterator[tuple[int, int, int]]:
    rng = random.Random(20261205)
    seen: set[tuple[int, int]] = set()
    while len(seen) < edges:
        follower = rng.randrange(1, users + 1)
        followee = rng.randrange(1, POPULAR + 1) if rng.random() < 1 / 3 else rng.randrange(1, users + 1)
        if follower != followee and (follower, followee) not in seen:
            seen.add((follower, followee))
            yield follower, followee, START_MS + len(seen)


def _write_csv(path: Path, edges: list[tuple[int, int, int]]) -> None:
    with path.open("w") as out:
        out.write("follower,followee,followed_at\n")
        out.writelines(f"{a},{b},{at}\n" for a, b, at in edges)


@contextlib.contextmanager
def _redis(bench: Bench, directory: Path) -> Iterator[RedisServer]:
    server = RedisServer(
        directory, port=free_port(), binary=bench.options.redis_binary or find_redis_server()
    )
    server.start()
    try:
        assert server.process is not None
        pin(server.process.pid, bench.layout.redis)
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def _cluster(bench: Bench, directory: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(
        directory=directory,
        masters=CLUSTER_MASTERS,
        binary=bench.options.redis_binary or find_redis_server(),
    )
    cluster.start()
    try:
        for node in cluster.nodes:
            assert node.process is not None
            pin(node.process.pid, bench.layout.redis)
        yield cluster
    finally:
        cluster.stop()


def _flush(server: RedisServer) -> None:
    client = redis.Redis(host="127.0.0.1", port=server.port)
    try:
        client.flushall()
    finally:
        client.close()


def _url(server: RedisServer) -> str:
    return f"redis://127.0.0.1:{server.port}/0"


def _command(args: list[str], url: str, data: Path, cpus: set[int] | None) -> float:
    """Seconds `followgraph ARGS` took against the Redis at `url`, as a process of its own on
    `cpus` (the core Redis does not have: the command and Redis work side by side)."""
    env = child_env({"FOLLOWGRAPH_REDIS_URL": url, "FOLLOWGRAPH_DATA_DIR": str(data)})
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "followgraph.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=child_setup(cpus),
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"followgraph {' '.join(args)} failed: {done.stderr[-2000:]}")
    return seconds


def _raw(server: RedisServer, edges: list[tuple[int, int, int]], keys: Keys) -> float:
    started = time.perf_counter()
    with open_pipe("127.0.0.1", server.port) as pipe:
        for a, b, at in edges:
            pipe.add(pack("ZADD", keys.following(str(a)), at, str(b)))
            pipe.add(pack("ZADD", keys.fans(str(b)), at, str(a)))
    return time.perf_counter() - started


# The least a script does for a batch of follows ('follower followee time' lines) that keeps the
# graph's sets as a follow leaves them: each follow's own writes as the import makes them
# (lua/parts/plain_follow.lua, written out in the loop as in the import's plain loop), and no
# user, rule or event; the follow back looked up only where it was written before (told by a letter
# a follow, '1'), which the bench knows exactly. ARGV: the key layout (10 values, as the import's),
# the lines, the letters.
FLOOR = (
    NOW
    + source("parts/import_users")
    + FOLLOW_PART
    + included(
        """
local i, byte, LETTERS = 0, string.byte, ARGV[12]
for a, b, t in string.gmatch(ARGV[11], FOLLOW_LINE) do
  i = i + 1
  local back = byte(LETTERS, i) == 49
  -- include: parts/plain_follow
end
write_fans(function(b) return key(b, FANS) end)
"""
    )
)
FLOOR_BATCH = 5_000


def _floor_batches(edges: list[tuple[int, int, int]]) -> Iterator[tuple[str, str]]:
    """Each batch's lines and letters (whether the follow back came before: the file has no
    follow twice)."""
    seen: set[tuple[int, int]] = set()
    for i in range(0, len(edges), FLOOR_BATCH):
        batch = edges[i : i + FLOOR_BATCH]
        lines = "".join([f"{a} {b} {at}\n" for a, b, at in batch])
        letters = []
        for a, b, _ in batch:
            letters.append("1" if (b, a) in seen else "0")
            seen.add((a, b))
        yield lines, "".join(letters)


def _floor(server: RedisServer, edges: list[tuple[int, int, int]], keys: Keys) -> float:
    client = redis.Redis(host="127.0.0.1", port=server.port)
    try:
        layout = keys.user_key_layout(USER_KEYS)
        sha = client.script_load(FLOOR)
        batches = list(_floor_batches(edges))
        started = time.perf_counter()
        for lines, letters in batches:
            client.evalsha(sha, 0, *layout, lines, letters)
        return time.perf_counter() - started
    finally:
        client.close()


def run_imports(bench: Bench) -> None:
    """The section; results go to bench.results.imports."""
    quick = bench.options.quick
    results = bench.results.imports = ImportResults(
        edges=QUICK_EDGES if quick else EDGES, users=QUICK_USERS if quick else USERS
    )
    results.cluster_edges = min(results.edges, CLUSTER_EDGES)
    keys = Keys()
    cpus = bench.layout.app
    with tempfile.TemporaryDirectory(prefix="followgraph-bench-imports-") as name:
        tmp = Path(name)
        bench.say(f"  import: writing a CSV of {results.edges:,} follows among {results.users:,} users...")
        edges = list(_edges(results.edges, results.users))
        csv, by_follower = tmp / "follows.csv", tmp / "follows-by-follower.csv"
        _write_csv(csv, edges)
        _write_csv(by_follower, sorted(edges))
        for_cluster = tmp / "follows-cluster.csv"
        _write_csv(for_cluster, edges[: results.cluster_edges])
        with (
            _redis(bench, tmp / "imported") as imported,
            _redis(bench, tmp / "raw") as raw,
            _cluster(bench, tmp / "cluster") as cluster,
        ):
            for round_ in range(QUICK_ROUNDS if quick else ROUNDS):
                bench.say(
                    f"  import: round {round_ + 1}: followgraph import (random order, by follower), "
                    "the raw ZADDs, the least script, followgraph export, the import into a cluster..."
                )
                _flush(imported)
                results.import_seconds.append(
                    _command(["import", str(csv)], _url(imported), tmp / "data", cpus)
                )
                _flush(imported)
                results.sorted_seconds.append(
                    _command(["import", str(by_follower)], _url(imported), tmp / "data", cpus)
                )
                _flush(raw)
                results.raw_seconds.append(_raw(raw, edges, keys))
                _flush(raw)
                results.floor_seconds.append(_floor(raw, edges, keys))
                out = tmp / "export.csv"
                results.export_seconds.append(
                    _command(["export", str(out), "--kind", "edges"], _url(imported), tmp / "data", cpus)
                )
                cluster.flushall()
                results.cluster_seconds.append(
                    _command(["import", str(for_cluster)], cluster.url, tmp / "data", cpus)
                )


def import_rows(results: ImportResults) -> list[list[str]]:
    raw = results.rate(results.raw_seconds)
    rows = []
    cluster = (
        results.cluster_edges / statistics.median(results.cluster_seconds) if results.cluster_seconds else 0
    )
    for what, seconds in (
        ("followgraph import (rules, mutual sets, users registered, change log)", results.import_seconds),
        ("followgraph import, the file sorted by follower", results.sorted_seconds),
        ("raw ZADD pairs, pipelined (redis-cli --pipe's way)", results.raw_seconds),
        ("the least script: a follow's own commands, a batch a call", results.floor_seconds),
        ("followgraph export", results.export_seconds),
    ):
        rate = results.rate(seconds)
        rows.append(
            [
                what,
                f"{statistics.median(seconds):.1f}",
                f"{rate:,.0f}",
                f"{rate / raw:.2f}" if raw and not what.startswith(("raw", "followgraph export")) else "",
            ]
        )
    if results.cluster_seconds:
        cluster = results.cluster_edges / statistics.median(results.cluster_seconds)
        rows.append(
            [
                f"followgraph import into a {CLUSTER_MASTERS}-master cluster, the first "
                f"{results.cluster_edges:,} follows",
                f"{statistics.median(results.cluster_seconds):.1f}",
                f"{cluster:,.0f}",
                f"{cluster / raw:.2f}" if raw else "",
            ]
        )
    return rows


def import_notes(results: ImportResults) -> list[str]:
    return [
        f"{results.edges:,} follows among {results.users:,} users, a third of them to {POPULAR} accounts, "
        "in random order, then sorted by follower; each into an emptied Redis of its own (no "
        "persistence), medians of "
        f"{len(results.import_seconds)} round(s) taken in turn; the import and the export as whole "
        "commands, start-up included. The cluster's "
        f"{CLUSTER_MASTERS} nodes share the single Redis' core: each slot's follows go to an event on "
        "the slot's own log (about one a follow in random order), and its rate is of follows a second "
        "beside the raw rate of one Redis."
    ]
