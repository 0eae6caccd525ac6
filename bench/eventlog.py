"""The change log's cost (#13), measured side by side in one run on a Redis of its own:

1. the FOLLOW/UNFOLLOW scripts in a tight loop with the log, and the same sources with the body of
   `log_event` made a no-op (built here by replacing store.scripts.LOG in their sources), in
   alternating phases of one loop;
2. follow mutations through A with the in-process SQL consumer off (FOLLOWGRAPH_SYNC=0, the log
   still written) and on, feeding PostgreSQL, and through A with the no-log scripts
   (bench/nolog_server.py), in turns; the consumer's lag under the load, when it stops and how
   long it takes to catch up; with --profile and py-spy installed, a profile of the server with
   the consumer on;
3. the consumer alone: a log pre-filled with follows drained into PostgreSQL, MariaDB and SQLite
   (store.consumer.Consumer + store.sql.apply_events, what server.sync.SqlSync runs), events/s.

Databases: a database of its own on each server for the run (dropped after), a SQLite file in a
temporary directory. FOLLOWGRAPH_BENCH_POSTGRES / FOLLOWGRAPH_BENCH_MYSQL point at other servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import redis
import uvloop
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.cpu import meter, own_seconds, process_seconds
from bench.eventlog_results import BATCH, CatchUp, Drain, EventLogResults
from bench.graph import fan_id, open_pipe, profile_command
from bench.loadgen import FollowCycle, LoadSpec, RequestSpec, summarize
from bench.model import Group, Row
from bench.processes import Child, child_env, free_port, pin, spawn, wait_http
from bench.profile import profile_under_load, py_spy
from bench.queries import FOLLOW_MUTATION, UNFOLLOW_MUTATION
from bench.redisstats import RedisWork, Snapshot
from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer, find_redis_server
from followgraph.server.sync import GROUP
from followgraph.store import FollowStore, Keys
from followgraph.store.graph import scripts
from followgraph.store.graph.bulk import Edge, EdgeStatus, follow_many
from followgraph.store.graph.events import Event
from followgraph.store.log.consumer import Consumer, ConsumerOptions
from followgraph.store.log.stream import LAG_COUNT_LIMIT, EventLog
from followgraph.store.redis.lua import LuaScript
from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.databases import private_database
from followgraph.store.sql.engine import create_engine
from followgraph.store.sql.migrate import migrate
from followgraph.store.sql.snapshot import counts
from followgraph.store.sql.urls import hidden_url

if TYPE_CHECKING:
    from bench.suite import Bench

SERVERS = {
    "PostgreSQL": os.environ.get("FOLLOWGRAPH_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432"),
    "MariaDB": os.environ.get("FOLLOWGRAPH_BENCH_MYSQL", "mysql://root@127.0.0.1:3306"),
}
# Targets of each write loop: the script loop and the mutations each walk their own slice.
TARGETS = 10_000
# The pre-filled log: FOLLOWERS users following the next FOLLOWS_EACH users each (no pair twice,
# no follow back).
FOLLOWERS, FOLLOWS_EACH, QUICK_FOLLOWERS = 10_000, 5, 2_000
# Databases of the Redis, a log each: the script loop; the mutations with no log, with the consumer
# off, with it on; the pre-filled log.
DB_LOOP, DB_NO_LOG, DB_OFF, DB_ON, DB_DRAIN = 0, 1, 2, 3, 4
# Follows made after the mutation load, before the copy is compared with Redis.
COPY_CHECK = 1000
# Longest wait for a consumer to catch up or drain, in seconds.
DRAIN_TIMEOUT = 120.0

# store.scripts.LOG with `log_event` doing nothing: no fields gathered, no XADD.
NO_LOG = """
local ME = ARGV[#ARGV - 1]
local function log_event(kind, actor, target, at, extra) end
"""


def without_log(source: str) -> str:
    """`source` (a writing script) with the body of `log_event` removed."""
    if source.count(scripts.LOG) != 1:
        raise RuntimeError("the script's source does not hold store.scripts.LOG once")
    return source.replace(scripts.LOG, NO_LOG)


@contextlib.contextmanager
def scripts_without_log() -> Iterator[None]:
    """FollowStore.follow / unfollow (single Redis) run the no-log sources while inside."""
    saved = scripts.FOLLOW_SCRIPT, scripts.UNFOLLOW_SCRIPT
    scripts.FOLLOW_SCRIPT = LuaScript(without_log(scripts.FOLLOW))
    scripts.UNFOLLOW_SCRIPT = LuaScript(without_log(scripts.UNFOLLOW))
    try:
        yield
    finally:
        scripts.FOLLOW_SCRIPT, scripts.UNFOLLOW_SCRIPT = saved


# The rows of the section's groups: a name per variant, a row per round (", round N").
SCRIPT_WITH = "script loop with the log"
SCRIPT_WITHOUT = "script loop, log_event a no-op"
API_NO_LOG = "A mutations, no log"
API_OFF = "A mutations, consumer off"
API_ON = "A mutations, consumer on (PostgreSQL)"
ROUNDS = 3
# Warm-up of each round of mutations (the servers are warm after their first).
ROUND_WARMUP = 1.0
# Seconds of unmeasured load each server serves before the rounds.
SETTLE = 2.0


def run_eventlog(bench: Bench) -> None:
    """The section's three parts on a Redis of its own; groups and results go to bench.results."""
    results = bench.results.eventlog = EventLogResults(rounds=ROUNDS)
    saved_options = bench.options
    with tempfile.TemporaryDirectory(prefix="followgraph-bench-eventlog-") as name:
        tmp = Path(name)
        server = RedisServer(
            directory=tmp / "redis",
            port=free_port(),
            binary=bench.options.redis_binary or find_redis_server(),
        )
        server.start()
        try:
            assert server.process is not None
            pin(server.process.pid, bench.layout.redis)
            stats = redis.Redis(host="127.0.0.1", port=server.port, decode_responses=True)
            with bench.redis_of_its_own(server.process.pid), contextlib.closing(stats):
                if not bench.results.redis_version:
                    info: dict[str, Any] = stats.info("server")
                    bench.results.redis_version = str(info["redis_version"])
                    bench.results.redis_allocator = str(stats.info("memory").get("mem_allocator", "?"))
                _script_loop(bench, server.port, stats)
                # The mutations run each variant ROUNDS times, in turns (A B C, C B A, A B C), for
                # this share of a scenario's duration each: drift of a shared machine falls on all.
                bench.options = dataclasses.replace(
                    bench.options,
                    warmup=min(ROUND_WARMUP, bench.options.warmup),
                    duration=bench.options.duration / ROUNDS,
                )
                _mutations(bench, results, server.port, stats, tmp)
                bench.options = saved_options
                _drains(bench, results, server.port, tmp)
        finally:
            server.stop()
            bench.options = saved_options


def _turns(variants: int, rounds: int) -> list[tuple[int, int]]:
    """(variant, round) in turns, every other pass backwards: 0 1 2, 2 1 0, 0 1 2, ..."""
    order: list[int] = []
    for r in range(rounds):
        forward = list(range(variants))
        order += forward if r % 2 == 0 else forward[::-1]
    seen: dict[int, int] = {}
    out = []
    for v in order:
        seen[v] = seen.get(v, 0) + 1
        out.append((v, seen[v]))
    return out


# -- 1. the script loop, with and without the log ---------------------------------------------------


def _script_loop(bench: Bench, port: int, stats: redis.Redis) -> None:
    writers = bench.graph.writers
    _register(port, DB_LOOP, [*writers, *(fan_id(i) for i in range(TARGETS + 1, 2 * TARGETS + 1))])
    bench.say("Event log: the FOLLOW/UNFOLLOW script loop with the log vs log_event a no-op...")
    group = bench._group(
        "eventlog-script", "Event log on the write path: FOLLOW/UNFOLLOW script loop, with vs without the log"
    )
    url = f"redis://127.0.0.1:{port}/{DB_LOOP}"
    affinity = os.sched_getaffinity(0)
    if bench.layout.app is not None:
        os.sched_setaffinity(0, bench.layout.app)
    try:
        cpu = meter(bench._our_pids)
        phases = uvloop.run(_alternating(bench, stats, url, TARGETS + 1, TARGETS))
        others = cpu().others_percent
    finally:
        os.sched_setaffinity(0, affinity)
    for variant, name in enumerate((SCRIPT_WITH, SCRIPT_WITHOUT)):
        tally = phases[variant]
        load = summarize("in-process asyncio loop", tally.latencies, tally.seconds, 0, tally.ops, 0)
        work = RedisWork(tally.ops, dict(tally.calls), tally.usec, tally.dirty)
        own_ms = 1000 * tally.cpu / tally.ops if tally.ops else None
        row = Row(name, load, work, 1, "", others, own_ms)
        group.rows.append(row)
        bench.say(
            f"  {name:<34} {load.rps:>9,.0f} ops/s  p50 {load.p50_ms:6.2f} ms  p99 {load.p99_ms:6.2f} ms"
            f"  {work.usec_per_request:.1f} Redis µs/op  {own_ms or 0:.3f} harness CPU ms/op"
        )
    group.notes.append(
        "Both rows come from one loop of FollowStore.follow/unfollow (one EVALSHA each) in the harness "
        "process, pinned to the server's CPU, with the same concurrency, writers and targets, switching "
        f"every {PHASE_SECONDS:g} s between the scripts as they are and the same FOLLOW and UNFOLLOW "
        "sources with store.scripts.LOG replaced by a `log_event` that does nothing (no fields "
        "gathered, no XADD); each row adds up its own phases (an operation counts for the variant it "
        "started in), so whatever else the machine does falls on both alike. The rate is bound by the "
        "harness' Python as much as by Redis; Redis µs/req is what the log costs Redis itself. "
        "server CPU ms/req here: the harness' CPU time per operation in its variant's phases; others' "
        "CPU %: over the whole loop."
    )
    bench.results.checks["event log: XADD per script call (with the log / no-op)"] = _xadds(group)


# The script loop switches variant this often; each variant gets `duration` seconds in all.
PHASE_SECONDS = 0.5


@dataclass
class _Tally:
    """One variant's share of the alternating loop."""

    ops: int = 0
    seconds: float = 0.0
    cpu: float = 0.0
    latencies: list[int] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    usec: int = 0
    dirty: int = 0

    def add(self, work: RedisWork) -> None:
        self.calls.update(work.calls)
        self.usec += work.usec
        self.dirty += work.dirty


async def _alternating(bench: Bench, stats: redis.Redis, url: str, first: int, targets: int) -> list[_Tally]:
    """FOLLOW/UNFOLLOW pairs from `concurrency` tasks, the scripts switched every PHASE_SECONDS
    between the store's own (variant 0) and the no-log sources (variant 1)."""
    opts = bench.options
    writers = bench.graph.writers
    variants = [
        (scripts.FOLLOW_SCRIPT, scripts.UNFOLLOW_SCRIPT),
        (LuaScript(without_log(scripts.FOLLOW)), LuaScript(without_log(scripts.UNFOLLOW))),
    ]
    tallies = [_Tally(), _Tally()]
    state = {"variant": 0, "recording": False, "stopping": False}
    span = max(1, targets // opts.concurrency)
    client = connect(url)
    store = FollowStore(client)

    async def worker(c: int) -> None:
        step = 0
        while not state["stopping"]:
            pair = step // 2
            me = writers[(c + pair * opts.concurrency) % len(writers)]
            target = fan_id(first + c * span + pair % span)
            variant = int(state["variant"])
            started = time.perf_counter_ns()
            if step % 2 == 0:
                await store.follow(follower=me, followee=target)
            else:
                await store.unfollow(follower=me, followee=target)
            if state["recording"]:
                tallies[variant].ops += 1
                tallies[variant].latencies.append(time.perf_counter_ns() - started)
            step += 1

    def switch(variant: int) -> None:
        state["variant"] = variant
        scripts.FOLLOW_SCRIPT, scripts.UNFOLLOW_SCRIPT = variants[variant]

    saved = variants[0]
    try:
        tasks = [asyncio.create_task(worker(c)) for c in range(opts.concurrency)]
        # Warm-up, alternating too: both variants' scripts are loaded before the clock starts.
        warm_until = time.perf_counter() + opts.warmup
        phase = 0
        while time.perf_counter() < warm_until:
            switch(phase % 2)
            await asyncio.sleep(min(PHASE_SECONDS, opts.warmup))
            phase += 1
        phases = 2 * max(1, round(opts.duration / PHASE_SECONDS))
        for phase in range(phases):
            variant = phase % 2
            switch(variant)
            before, cpu, started = Snapshot.take(stats), own_seconds(), time.perf_counter()
            state["recording"] = True
            await asyncio.sleep(PHASE_SECONDS)
            state["recording"] = False
            tally = tallies[variant]
            tally.seconds += time.perf_counter() - started
            tally.cpu += own_seconds() - cpu
            tally.add(RedisWork.between(before, Snapshot.take(stats), 0))
        state["stopping"] = True
        await asyncio.gather(*tasks)
    finally:
        scripts.FOLLOW_SCRIPT, scripts.UNFOLLOW_SCRIPT = saved
        await client.aclose()
    return tallies


def _xadds(group: Group) -> str:
    return ", ".join(
        f"{row.name}: {row.work.calls.get('xadd', 0) / max(1, row.work.requests):.2f}" for row in group.rows
    )


def _register(port: int, db: int, user_ids: Iterable[str]) -> None:
    keys = Keys()
    with open_pipe("127.0.0.1", port, db=db) as pipe:
        for user_id in user_ids:
            pipe.add(profile_command(keys, user_id, f"User {user_id}"))
        pipe.flush()


# -- 2. mutations through A: no log, the consumer off, the consumer on ------------------------------


def _mutations(bench: Bench, results: EventLogResults, port: int, stats: redis.Redis, tmp: Path) -> None:
    people = [*bench.graph.writers, *(fan_id(i) for i in range(1, TARGETS + 1))]
    for db in (DB_NO_LOG, DB_OFF, DB_ON):
        _register(port, db, people)
    bench.say("Event log: follow mutations through A, no log vs the SQL consumer off vs on (PostgreSQL)...")
    group = bench._group(
        "eventlog-api",
        "Event log: follow/unfollow mutations through A: no log, SQL consumer off, consumer on (PostgreSQL)",
    )
    cycle = FollowCycle(bench.writer_tokens, "f", 1, TARGETS, FOLLOW_MUTATION, UNFOLLOW_MUTATION)
    request = RequestSpec("/graphql", "", {}, follow_cycle=cycle)
    base = {"FOLLOWGRAPH_JWT_SECRET": bench.secret, "FOLLOWGRAPH_WORKERS": "1"}

    with contextlib.ExitStack() as stack:
        database_url, problem = stack.enter_context(_database("PostgreSQL"))
        servers: list[tuple[str, Child, int, str]] = []
        env = child_env({**base, "FOLLOWGRAPH_DATA_DIR": str(tmp / "data-nolog"), "FOLLOWGRAPH_SYNC": "0"})
        url = f"redis://127.0.0.1:{port}/{DB_NO_LOG}"
        server, server_port = stack.enter_context(
            _served(bench, "server A, no log", url, env, tmp, no_log=True)
        )
        note = "bench.nolog_server: FOLLOW and UNFOLLOW without `log_event`'s body; FOLLOWGRAPH_SYNC=0"
        servers.append((API_NO_LOG, server, server_port, note))
        env = child_env({**base, "FOLLOWGRAPH_DATA_DIR": str(tmp / "data-off"), "FOLLOWGRAPH_SYNC": "0"})
        url = f"redis://127.0.0.1:{port}/{DB_OFF}"
        server, server_port = stack.enter_context(_served(bench, "server A, SQL consumer off", url, env, tmp))
        servers.append(
            (API_OFF, server, server_port, "FOLLOWGRAPH_SYNC=0: every mutation still appends its event")
        )
        on_url = f"redis://127.0.0.1:{port}/{DB_ON}"
        if database_url is None:
            results.on_database = f"not measured: {problem}"
            bench.say(f"  consumer on: {results.on_database}")
        else:
            results.on_database = hidden_url(database_url)
            env = child_env(
                {
                    **base,
                    "FOLLOWGRAPH_DATA_DIR": str(tmp / "data-on"),
                    "FOLLOWGRAPH_DATABASE_URL": database_url,
                    "FOLLOWGRAPH_SYNC": "1",
                }
            )
            server, server_port = stack.enter_context(
                _served(bench, "server A, SQL consumer on", on_url, env, tmp)
            )
            _wait_sync_ready(server, server_port)
            note = f"the server's own SqlSync applies the log to PostgreSQL as it serves (batch {BATCH})"
            servers.append((API_ON, server, server_port, note))
        # Each server first serves the load unmeasured (the first round of a run came out slower
        # whichever server had it); the consumer catches up before anything is measured.
        for _, _, server_port, _ in servers:
            bench.loader.run(
                LoadSpec("127.0.0.1", server_port, bench.options.concurrency, 1.0, SETTLE, request)
            )
        if database_url is not None:
            uvloop.run(_settled(on_url))
        for variant, n in _turns(len(servers), ROUNDS):
            name, server, server_port, note = servers[variant]
            if name != API_ON:
                group.rows.append(
                    bench.measure(stats, f"{name}, round {n}", server, server_port, request, None, note)
                )
                continue
            sampler = LagSampler(port, DB_ON)
            with sampler:
                row = bench.measure(stats, f"{name}, round {n}", server, server_port, request, None, note)
            group.rows.append(row)
            counted = (row.work.calls.get("xadd", 0), row.work.calls.get("xack", 0))
            results.catch_ups.append(
                uvloop.run(_catch_up(bench, n, on_url, server, sampler.max_events, counted))
            )
        if database_url is not None and bench.options.profile and py_spy() is not None:
            _, server, server_port, _ = servers[-1]
            bench.say("  profiling the server with the consumer on with py-spy under the same load...")
            spec = LoadSpec(
                "127.0.0.1", server_port, bench.options.concurrency, 1.0, bench.options.duration, request
            )
            results.profile = profile_under_load(server.pid, bench.loader, spec)
        if database_url is not None:
            bench.results.checks["event log: SQL copy after the catch-up vs Redis"] = uvloop.run(
                _compare_copy(on_url, bench.graph.writers, database_url)
            )
    bench.results.checks["event log: XADD per mutation (no log / off / on rows)"] = _xadds(group)
    group.notes += [
        "Same load (the harness' follow/unfollow cycle, as in the Writes table), users and targets; "
        "each server on a Redis database of its own on the same Redis, all three running, measured "
        f"in turns (no log, off, on; on, off, no log; ...), {ROUNDS} rounds each of 1/{ROUNDS} of a "
        f"scenario's duration after a {ROUND_WARMUP:g} s warm-up, once each had served the load "
        f"unmeasured for {ROUND_WARMUP + SETTLE:g} s; the ratios add the rounds up. The "
        "consumer runs inside the server process, so it shares the server's CPU; PostgreSQL runs on "
        "this machine, and its CPU time counts in others' CPU %. Consumer on / no log is the whole "
        "cost of the log and its consumer; on / off the consumer's alone. The server is CPU-bound "
        "(server CPU ms/req times req/s is about one core), so its CPU time per mutation is the steadier "
        "figure when others' CPU % is high: req/s then also moves with what else the machine runs.",
    ]


@contextlib.contextmanager
def _served(
    bench: Bench, name: str, url: str, env: dict[str, str], tmp: Path, *, no_log: bool = False
) -> Iterator[tuple[Child, int]]:
    port = free_port()
    if no_log:
        args = [sys.executable, "-m", "bench.nolog_server", "serve", "--port", str(port), "--redis-url", url]
        args += ["--production", "--log-level", "warning"]
        server = spawn(name, args, env=env, log_path=tmp / f"server-{port}.log", cpus=bench.layout.app)
    else:
        server = bench.spawn_server(name, port, url, env, tmp)
    bench.children.append(server)
    try:
        wait_http(server, port)
        yield server, port
    finally:
        server.stop()
        bench.children.remove(server)


def _wait_sync_ready(server: Child, port: int, timeout: float = 60.0) -> None:
    """Until /readyz says the SQL copy is consuming (its tables migrated)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            body = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2.0).json()
            if body.get("sync", {}).get("status") == "ok":
                return
        time.sleep(0.1)
    raise RuntimeError(f"{server.name}: no SQL copy ready within {timeout:.0f}s:\n{server.log_tail()}")


class LagSampler:
    """The consumer's lag (unacknowledged events of group `sql`), sampled every SAMPLE_SECONDS from
    a thread while the load runs; keeps the largest."""

    SAMPLE_SECONDS = 0.25

    def __init__(self, port: int, db: int) -> None:
        self.client = redis.Redis(host="127.0.0.1", port=port, db=db, decode_responses=True)
        self.stream = Keys().log("")
        self.max_events = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.client.close()

    def _run(self) -> None:
        while not self._done.wait(self.SAMPLE_SECONDS):
            with contextlib.suppress(redis.RedisError):
                self.max_events = max(self.max_events, _lag_now(self.client, self.stream))


def _lag_now(client: redis.Redis, stream: str) -> int:
    groups: list[dict[str, Any]] = [g for g in client.xinfo_groups(stream) if g["name"] == GROUP]
    if not groups:
        return 0
    undelivered = client.xrange(stream, f"({groups[0]['last-delivered-id']}", "+", count=LAG_COUNT_LIMIT)
    return int(groups[0]["pending"]) + len(undelivered or [])


async def _settled(url: str) -> None:
    client = connect(url)
    try:
        started = time.perf_counter()
        while not await _caught_up(client, Keys().log("")) and time.perf_counter() - started < DRAIN_TIMEOUT:
            await asyncio.sleep(0.01)
    finally:
        await client.aclose()


async def _caught_up(client: Any, stream: str) -> bool:
    """Whether group `sql` has acknowledged everything in `stream` (XINFO only: cheap to poll)."""
    info = await client.xinfo_stream(stream)
    groups = [g for g in await client.xinfo_groups(stream) if g["name"] == GROUP]
    if not groups:
        return False
    last = info.get("last-generated-id")
    return bool(groups[0]["pending"] == 0 and groups[0]["last-delivered-id"] == last)


async def _catch_up(
    bench: Bench, n: int, url: str, server: Child, max_lag: int, counted: tuple[int, int]
) -> CatchUp:
    """The lag when the load stopped, then the time until the consumer has applied everything."""
    client = connect(url)
    store = FollowStore(client)
    try:
        cpu = process_seconds(server.pid)
        started = time.perf_counter()
        lag = await EventLog(store).lag(GROUP)
        stream = store.keys.log("")
        caught_up: float | None = None
        while caught_up is None and time.perf_counter() - started < DRAIN_TIMEOUT:
            if await _caught_up(client, stream):
                caught_up = time.perf_counter() - started
            else:
                await asyncio.sleep(0.01)
        catch_up = CatchUp(
            n,
            *counted,
            max(max_lag, lag.events),
            lag.events,
            lag.seconds,
            caught_up,
            None if caught_up is None else process_seconds(server.pid) - cpu,
        )
        done = "not caught up" if caught_up is None else f"caught up in {caught_up:.2f}s"
        bench.say(
            f"  round {n}: lag up to {catch_up.max_lag_events:,} events under load, {lag.events:,} "
            f"({lag.seconds:.2f}s old) when it stopped; {done}"
        )
        return catch_up
    finally:
        await client.aclose()


async def _compare_copy(url: str, writers: tuple[str, ...], database_url: str) -> str:
    """COPY_CHECK follows made after the load (the writers following targets they do not follow),
    then, once the consumer has caught up, follows in Redis (the writers' following sets) against
    current follows in the copy."""
    client = connect(url)
    store = FollowStore(client)
    try:
        edges = [Edge(writers[i % len(writers)], fan_id(1 + i)) for i in range(COPY_CHECK)]
        await follow_many(store, edges)
        started = time.perf_counter()
        while not await _caught_up(client, store.keys.log("")):
            if time.perf_counter() - started > DRAIN_TIMEOUT:
                return f"the consumer had not caught up {DRAIN_TIMEOUT:.0f}s after {COPY_CHECK} more follows"
            await asyncio.sleep(0.01)
        pipe = client.pipeline(transaction=False)
        for writer in writers:
            pipe.zcard(store.keys.following(writer))
        in_redis = sum(await pipe.execute())
    finally:
        await client.aclose()
    engine = create_engine(database_url)
    try:
        in_copy = (await counts(engine)).follows
    finally:
        await engine.dispose()
    verdict = "same" if in_copy == in_redis else "DIFFERENT"
    after = f"{COPY_CHECK} made after the load"
    return f"{verdict}: {in_redis:,} follows in Redis, {in_copy:,} in the copy ({after})"


# -- 3. the consumer alone, into each database ------------------------------------------------------


@contextlib.contextmanager
def _database(kind: str, directory: Path | None = None) -> Iterator[tuple[str | None, str]]:
    """A fresh database of `kind` for the run: (its URL, "") or (None, why there is none)."""
    if kind == "SQLite":
        assert directory is not None
        yield f"sqlite:///{directory / 'copy.sqlite3'}", ""
        return
    server = SERVERS[kind]
    database = contextlib.ExitStack()
    try:
        url = database.enter_context(private_database(server, "fgbench"))
    except Exception as exc:  # a server that is not there: the figure is reported missing
        yield None, f"{hidden_url(server)} unavailable ({type(exc).__name__}: {exc})"
        return
    with database:
        yield url, ""


def _prefill_edges(followers: int) -> list[Edge]:
    return [
        Edge(fan_id(i), fan_id((i + j - 1) % followers + 1))
        for i in range(1, followers + 1)
        for j in range(1, FOLLOWS_EACH + 1)
    ]


def _drains(bench: Bench, results: EventLogResults, port: int, tmp: Path) -> None:
    followers = QUICK_FOLLOWERS if bench.options.quick else FOLLOWERS
    _register(port, DB_DRAIN, [fan_id(i) for i in range(1, followers + 1)])
    edges = _prefill_edges(followers)
    bench.say(f"Event log: pre-filling the log with {len(edges):,} follows (store.bulk.follow_many)...")
    uvloop.run(_prefill(results, port, edges))
    bench.say(f"Event log: the consumer draining {results.prefilled:,} events (batch {BATCH}) into...")
    affinity = os.sched_getaffinity(0)
    if bench.layout.app is not None:
        os.sched_setaffinity(0, bench.layout.app)
    try:
        for kind in KINDS:
            with _database(kind, tmp) as (url, problem):
                if url is None:
                    drain = Drain(kind, note=f"not measured: {problem}")
                else:
                    drain = uvloop.run(_drain(kind, url, port, results.prefilled))
            results.drains.append(drain)
            if not drain.seconds:
                bench.say(f"  {kind:<11} {drain.note}")
                continue
            bench.say(
                f"  {kind:<11} {drain.events_per_second:>9,.0f} events/s  ({drain.events:,} in "
                f"{drain.seconds:.2f}s, {drain.batches} batches){'  ' + drain.note if drain.note else ''}"
            )
    finally:
        os.sched_setaffinity(0, affinity)


KINDS = ("PostgreSQL", "MariaDB", "SQLite")


async def _prefill(results: EventLogResults, port: int, edges: list[Edge]) -> None:
    client = connect(f"redis://127.0.0.1:{port}/{DB_DRAIN}")
    store = FollowStore(client)
    try:
        started = time.perf_counter()
        added = 0
        for start in range(0, len(edges), 1000):
            statuses = await follow_many(store, edges[start : start + 1000])
            added += sum(1 for s in statuses if s is EdgeStatus.ADDED)
        results.prefill_seconds = time.perf_counter() - started
        log = EventLog(store)
        results.prefilled = await log.length()
        if added != len(edges) or results.prefilled != len(edges):
            raise RuntimeError(
                f"pre-fill: {added} follows added, {results.prefilled} events for {len(edges)}"
            )
        # Every database's group exists before any drains, so trimming behind the groups keeps
        # the events the later ones have not read.
        for kind in KINDS:
            await log.join(_group_name(kind))
    finally:
        await client.aclose()


def _group_name(kind: str) -> str:
    return f"bench-{kind.lower()}"


async def _drain(kind: str, url: str, port: int, events: int) -> Drain:
    await migrate(url)
    engine = create_engine(url)
    client = connect(f"redis://127.0.0.1:{port}/{DB_DRAIN}")
    drain = Drain(kind)
    try:

        async def handle(batch: list[Event]) -> None:
            await apply_events(engine, batch)

        options = ConsumerOptions(group=_group_name(kind), consumer="bench", batch=BATCH)
        consumer = Consumer(EventLog(FollowStore(client)), handle, options)
        await _warm(engine)
        stop = asyncio.Event()
        cpu = os.times()
        started = time.perf_counter()
        task = asyncio.create_task(consumer.run(stop))
        try:
            while consumer.applied < events and not task.done():
                if time.perf_counter() - started > DRAIN_TIMEOUT:
                    drain.note = f"stopped after {DRAIN_TIMEOUT:.0f}s"
                    break
                await asyncio.sleep(0.002)
            drain.seconds = time.perf_counter() - started
            done = os.times()
            drain.harness_cpu_seconds = done.user + done.system - cpu.user - cpu.system
        finally:
            stop.set()
            await task
        drain.events, drain.batches = consumer.applied, consumer.batches
        drain.follows_in_copy = (await counts(engine)).follows
        if drain.follows_in_copy != events:
            drain.note = f"the copy holds {drain.follows_in_copy:,} follows of {events:,}"
    finally:
        await client.aclose()
        await engine.dispose()
    return drain


async def _warm(engine: AsyncEngine) -> None:
    """Open the pool's connection before the clock starts."""
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))


# -- the report ---------------------------------------------------------------------------------------


CATCH_UP_HEADERS = [
    "on-run round",
    "events written",
    "events per batch",
    "max lag under load (events)",
    "lag when the load stopped (events)",
    "its oldest (s)",
    "catch-up (s)",
    "server CPU in the catch-up (s)",
]


def catch_up_rows(results: EventLogResults) -> list[list[str]]:
    def opt(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    return [
        [
            f"round {c.round}",
            f"{c.events_written:,}",
            f"{c.events_written / c.batches:.1f}" if c.batches else "-",
            f"{c.max_lag_events:,}",
            f"{c.lag_events:,}",
            f"{c.lag_seconds:.2f}",
            opt(c.catch_up_seconds),
            opt(c.catch_up_server_cpu_seconds),
        ]
        for c in results.catch_ups
    ]


def drain_rows(results: EventLogResults) -> list[list[str]]:
    rows = []
    for d in results.drains:
        measured = bool(d.seconds)
        rows.append(
            [
                d.database,
                f"{d.events:,}" if measured else "-",
                f"{d.seconds:.2f}" if measured else "-",
                f"{d.events_per_second:,.0f}" if measured else "-",
                f"{d.batches:,}" if measured else "-",
                f"{1000 * d.seconds / d.batches:.1f}" if measured and d.batches else "-",
                f"{100 * d.harness_cpu_seconds / d.seconds:.0f}" if measured else "-",
                d.note,
            ]
        )
    return rows


DRAIN_HEADERS = [
    "database",
    "events",
    "seconds",
    "events/s",
    "batches",
    "ms/batch",
    "consumer CPU %",
    "note",
]

NOTES = [
    "What the event log's figures measure, and why each reference is fair. Script loop: the log's "
    "cost on the raw write path; the reference is the same FOLLOW/UNFOLLOW source with the same "
    "keys and arguments and only `log_event`'s body removed, run in the same loop in alternating "
    "phases, so the difference is the event's fields and its XADD (MAXLEN ~ trimming included) and "
    "nothing else. Mutations: what the log and the in-process consumer cost a server's follow "
    "throughput; the references are the same server, load, users and targets with only "
    "FOLLOWGRAPH_SYNC=0 (the log still written: the consumer's share) and that server with the "
    "no-log scripts (the log's and the consumer's share together), measured in turns. The Writes "
    "table's server A runs with the defaults, so its consumer feeds SQLite in its data directory. "
    "Drains: how fast one consumer works through a backlog into each database, as server.sync.SqlSync "
    "runs it (store.consumer.Consumer reading batches through a group, store.sql.apply_events in "
    "one transaction each, then XACK), from its start until it has applied every event; the "
    "migrations and the first connection come before the clock, and every database gets the same "
    "events at the default batch size.",
    "All three databases run on this 2-core machine beside the harness and Redis; the consumer is "
    "pinned to the server's CPU. consumer CPU %: the harness process' CPU time during the drain, "
    "in % of the drain's wall time (the rest is waiting for Redis and the database).",
]
