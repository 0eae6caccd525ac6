"""What FOLLOWGRAPH_WRITE_REPLICAS=1 costs a follow (#40), on a primary and a replica of its own.

server/redis_sentinel.py's LocalSentinel starts a primary, one replica (`replicaof`) and its three
Sentinels from the project's binary. Two `followgraph serve` processes (server A, one worker, pinned
to the server's CPU) run against it through the Sentinels' URL, one with FOLLOWGRAPH_WRITE_REPLICAS=0
and one with =1, both started once and both alive throughout. Each is warmed once; then the run's
load generator sends the writes group's follow/unfollow mutations (bench/rawfollow.py: WRITERS
viewers, each follow X followed by unfollow X, the follow rate limit at its default and never
reached) to one and then the other, ROUNDS times, for SECONDS each, at every number of connections
of CONCURRENCIES (a lone client, whose latency shows the replica's round trip, and the writes
group's 32, where the server's CPU is the limit). Neither server reads the change log
(FOLLOWGRAPH_SYNC=0, FOLLOWGRAPH_SEARCH_INDEX=0): with both alive, a reader in the idle one would take
its share of the other's events, and its CPU. The replica is checked against the primary at the end.

Then the reads' part (bench/replica_pages.py): FOLLOWGRAPH_READ_FROM_REPLICAS=0 against 1 on a
celebrity's fans page, on the same Redis, once the writes' servers have stopped.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench.graph import FanGraph, fan_id, load_fan_graph
from bench.loadgen import FollowCycle, RequestSpec
from bench.model import Turns
from bench.processes import Child, child_env, free_port, pin, wait_http
from bench.queries import FOLLOW_MUTATION, UNFOLLOW_MUTATION
from bench.replica_pages import PageResults, measure_pages, page_graph, server_envs
from followgraph.server.redis_sentinel import SENTINELS, LocalSentinel
from followgraph.server.redis_server import find_redis_server
from followgraph.store import Keys

if TYPE_CHECKING:
    from bench.suite import Bench

# Users followed and unfollowed (f1..fTARGETS).
TARGETS = 2_000
ROUNDS, QUICK_ROUNDS = 5, 3
SECONDS, QUICK_SECONDS = 1.0, 1.0
CONCURRENCIES = (1, 32)
SETTINGS = (0, 1)
# Seconds given to the replica to catch up once the load stops, before it is compared.
CATCH_UP = 10.0


@dataclass(frozen=True, slots=True)
class Round:
    """One setting's round: the rate, the latency, the server's CPU and the primary's commands."""

    rate: float
    p50_ms: float
    p99_ms: float
    cpu_us: float
    commands: float
    waits: float  # WAIT commands a mutation
    errors: int
    others_cpu: float
    # Each command's calls a mutation on the primary.
    calls: dict[str, float] = field(default_factory=dict)


@dataclass
class Setting(Turns):
    """FOLLOWGRAPH_WRITE_REPLICAS=`replicas` at `concurrency` connections, round by round."""

    replicas: int
    concurrency: int
    rounds: list[Round] = field(default_factory=list)


@dataclass
class ReplicatedResults:
    redis: str = ""
    rounds: int = 0
    seconds: float = 0.0
    settings: list[Setting] = field(default_factory=list)
    # The replica against the primary once the load stopped.
    replica: str = ""
    # FOLLOWGRAPH_READ_FROM_REPLICAS=0 against 1 on a celebrity's page.
    pages: PageResults = field(default_factory=PageResults)

    def setting(self, replicas: int, concurrency: int) -> Setting:
        return next(s for s in self.settings if (s.replicas, s.concurrency) == (replicas, concurrency))


def run_replicated(bench: Bench) -> None:
    """The section; results go to bench.results.replicated."""
    quick = bench.options.quick
    results = bench.results.replicated = ReplicatedResults(
        rounds=QUICK_ROUNDS if quick else ROUNDS, seconds=QUICK_SECONDS if quick else SECONDS
    )
    results.settings = [Setting(n, c) for c in CONCURRENCIES for n in SETTINGS]
    results.pages = PageResults(rounds=results.rounds, seconds=results.seconds)
    graph = FanGraph(sizes=(TARGETS,), writers=bench.graph.writers)
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="followgraph-bench-replicated-")))
        bench.say("Replicated writes: a primary, a replica and three Sentinels...")
        ha = LocalSentinel(
            tmp / "redis",
            ports=tuple(free_port() for _ in range(2 + SENTINELS)),
            binary=bench.options.redis_binary or find_redis_server(),
        )
        ha.start()
        stack.callback(ha.stop)
        pids = [p.pid for p in (s.process for s in [*ha.servers, *ha.sentinels]) if p is not None]
        for pid in pids:
            pin(pid, bench.layout.redis)
        primary, replica = (s.port for s in ha.servers)
        load_fan_graph(graph, "127.0.0.1", primary)
        stats = redis.Redis(host="127.0.0.1", port=primary, decode_responses=True)
        stack.callback(stats.close)
        info: dict[str, Any] = stats.info("server")
        results.redis = str(info.get("valkey_version") or info["redis_version"])
        if not bench.results.redis_version:
            bench.results.redis_version = str(info["redis_version"])
            bench.results.redis_allocator = str(stats.info("memory").get("mem_allocator", "?"))
        mirror = redis.Redis(host="127.0.0.1", port=replica, decode_responses=True)
        stack.callback(mirror.close)
        envs = {n: {"FOLLOWGRAPH_WRITE_REPLICAS": str(n)} for n in SETTINGS}
        with bench.redis_of_its_own(*pids), _servers(bench, ha.url, tmp, "WRITE_REPLICAS", envs) as servers:
            _measure(bench, results, servers, stats)
        results.replica = _compare(stats, mirror, graph)
        bench.say(f"Reads from replicas: a celebrity with {results.pages.fans:,} fans into the primary...")
        load_fan_graph(page_graph(), "127.0.0.1", primary)
        _caught_up(stats, mirror)
        reading = _servers(bench, ha.url, tmp, "READ_FROM_REPLICAS", server_envs())
        with bench.redis_of_its_own(*pids), reading as servers:
            measure_pages(bench, results.pages, servers, stats, mirror)
    bench.results.checks["replicated: the replica holds the primary's graph after the load"] = results.replica
    bench.results.checks["replicated: with READ_FROM_REPLICAS=1 the primary ran no page reads"] = (
        results.pages.check
    )


@contextlib.contextmanager
def _servers(
    bench: Bench, url: str, tmp: Path, setting: str, envs: dict[int, dict[str, str]]
) -> Iterator[dict[int, tuple[Child, int]]]:
    """Server A with `envs[n]` for each n (FOLLOWGRAPH_`setting`=n), by n, neither reading the log."""
    started: dict[int, tuple[Child, int]] = {}
    try:
        for n, extra in envs.items():
            port = free_port()
            env = child_env(
                {
                    "FOLLOWGRAPH_JWT_SECRET": bench.secret,
                    "FOLLOWGRAPH_DATA_DIR": str(tmp / f"data-{port}"),
                    "FOLLOWGRAPH_SYNC": "0",
                    "FOLLOWGRAPH_SEARCH_INDEX": "0",
                    **extra,
                }
            )
            child = bench.spawn_server(f"server A ({setting}={n})", port, url, env, tmp)
            bench.children.append(child)
            started[n] = (child, port)
        for child, port in started.values():
            wait_http(child, port)
        yield started
    finally:
        for child, _ in started.values():
            child.stop()
            with contextlib.suppress(ValueError):
                bench.children.remove(child)


def _measure(
    bench: Bench, results: ReplicatedResults, servers: dict[int, tuple[Child, int]], stats: redis.Redis
) -> None:
    cycle = FollowCycle(bench.writer_tokens, "f", 1, TARGETS, FOLLOW_MUTATION, UNFOLLOW_MUTATION)
    request = RequestSpec("/graphql", "", {}, follow_cycle=cycle)
    for replicas, (child, port) in servers.items():
        # Compiled plans, scripts loaded and a pool of connections before anything is measured.
        name = f"WRITE_REPLICAS={replicas} warm-up"
        bench.measure(
            stats, name, child, port, request, None, concurrency=max(CONCURRENCIES), duration=1.0, warmup=0.0
        )
    bench.say(
        f"Replicated writes: WRITE_REPLICAS={' and '.join(map(str, SETTINGS))} in turn, {results.rounds} "
        f"rounds of {results.seconds:g} s at {' and '.join(map(str, CONCURRENCIES))} connection(s)..."
    )
    for number in range(1, results.rounds + 1):
        for setting in results.settings:
            child, port = servers[setting.replicas]
            row = bench.measure(
                stats,
                f"WRITE_REPLICAS={setting.replicas} c{setting.concurrency} {number}/{results.rounds}",
                child,
                port,
                request,
                None,
                concurrency=setting.concurrency,
                duration=results.seconds,
                warmup=0.0,
            )
            mutations = row.work.requests or 1
            calls = {name: n / mutations for name, n in row.work.calls.items()}
            setting.rounds.append(
                Round(
                    row.load.rps,
                    row.load.p50_ms,
                    row.load.p99_ms,
                    1000 * (row.server_cpu_ms or 0.0),
                    row.work.commands_per_request,
                    calls.get("wait", 0.0),
                    row.load.errors + row.load.connection_errors,
                    row.other_cpu or 0.0,
                    calls,
                )
            )


def _offsets(primary: redis.Redis, replica: redis.Redis) -> tuple[int, int]:
    ours: dict[str, Any] = primary.info("replication")
    theirs: dict[str, Any] = replica.info("replication")
    return int(ours["master_repl_offset"]), int(theirs["slave_repl_offset"])


def _caught_up(primary: redis.Redis, replica: redis.Redis) -> tuple[int, int]:
    """The primary's and the replica's replication offsets once the replica has caught up (or
    CATCH_UP seconds have passed)."""
    deadline = time.monotonic() + CATCH_UP
    offsets = _offsets(primary, replica)
    while offsets[1] < offsets[0] and time.monotonic() < deadline:
        time.sleep(0.05)
        offsets = _offsets(primary, replica)
    return offsets


def _compare(primary: redis.Redis, replica: redis.Redis, graph: FanGraph) -> str:
    """The replica's offset caught up with the primary's, the same number of keys, and every
    writer's following set and every target's fans set the same on both."""
    offsets = _caught_up(primary, replica)
    keys = Keys()
    names = [keys.following(w) for w in graph.writers]
    names += [keys.fans(fan_id(i)) for i in range(1, TARGETS + 1)]
    sets = []
    for client in (primary, replica):
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.zrange(name, 0, -1, withscores=True)
        sets.append(pipe.execute())
    sizes = [int(client.dbsize()) for client in (primary, replica)]
    follows = sum(len(members) for members in sets[0][: len(graph.writers)])
    same = offsets[0] == offsets[1] and sizes[0] == sizes[1] and sets[0] == sets[1]
    return (
        f"{'yes' if same else 'NO'}: replication offset {offsets[1]:,} of the primary's {offsets[0]:,}; "
        f"{sizes[1]:,} keys of {sizes[0]:,}; {sum(a == b for a, b in zip(*sets, strict=True)):,} of "
        f"{len(names):,} sets equal (the writers' following sets, {follows:,} follows left, and the "
        "targets' fans sets)"
    )


# -- the report --------------------------------------------------------------------------------------

HEADERS = [
    "connections",
    "WRITE_REPLICAS",
    "mutations/s",
    "rounds' range",
    "p50 ms",
    "p99 ms",
    "server CPU µs a mutation",
    "Redis cmds a mutation",
    "WAIT a mutation",
    "errors",
    "others' CPU %",
]
RATIO_HEADERS = ["connections", "mutations/s", "p50", "p99", "server CPU a mutation", "Redis cmds a mutation"]


def replicated_rows(results: ReplicatedResults) -> list[list[str]]:
    rows = []
    for s in results.settings:
        rates = [r.rate for r in s.rounds]
        rows.append(
            [
                str(s.concurrency),
                str(s.replicas),
                f"{s.median('rate'):,.0f}",
                f"{min(rates):,.0f} to {max(rates):,.0f}",
                f"{s.median('p50_ms'):.2f}",
                f"{s.median('p99_ms'):.2f}",
                f"{s.median('cpu_us'):.0f}",
                f"{s.median('commands'):.1f}",
                f"{s.median('waits'):.2f}",
                str(sum(r.errors for r in s.rounds)),
                f"{s.median('others_cpu'):.0f}",
            ]
        )
    return rows


def ratio(values: list[float]) -> str:
    """The median of round-by-round ratios, and their range."""
    return f"{statistics.median(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def replicated_ratio_rows(results: ReplicatedResults) -> list[list[str]]:
    rows = []
    for concurrency in CONCURRENCIES:
        without, waiting = (results.setting(n, concurrency) for n in SETTINGS)
        rows.append(
            [
                str(concurrency),
                *(
                    ratio(waiting.ratios_to(without, attribute))
                    for attribute in ("rate", "p50_ms", "p99_ms", "cpu_us", "commands")
                ),
            ]
        )
    return rows


def added_commands(results: ReplicatedResults, concurrency: int) -> str:
    """The commands a mutation sends the primary with 1 beyond those with 0 (medians of the rounds),
    those that changed by 0.05 or more."""
    without, waiting = (results.setting(n, concurrency) for n in SETTINGS)
    names = sorted({name for s in (without, waiting) for r in s.rounds for name in r.calls})

    def median(setting: Setting, name: str) -> float:
        return statistics.median(r.calls.get(name, 0.0) for r in setting.rounds)

    added = {name: median(waiting, name) - median(without, name) for name in names}
    shown = sorted((item for item in added.items() if abs(item[1]) >= 0.05), key=lambda item: -item[1])
    return ", ".join(f"{name} {n:+.2f}" for name, n in shown) or "none"


def replicated_notes(results: ReplicatedResults) -> list[str]:
    return [
        f"{results.redis}: a primary, one replica (replicaof) and three Sentinels on this machine "
        "(server/redis_sentinel.py), pinned beside the load generator; two server A processes (one "
        "worker each, on the server's CPU) against the Sentinels' URL, FOLLOWGRAPH_WRITE_REPLICAS=0 "
        "and =1, both alive throughout, neither reading the change log (FOLLOWGRAPH_SYNC=0, "
        "FOLLOWGRAPH_SEARCH_INDEX=0). Follow X then unfollow X by the writes group's viewers, through "
        f"HTTP; each server warmed once, then {results.rounds} rounds of {results.seconds:g} s, 0 and 1 "
        "in turn at each number of connections; the medians of the rounds.",
        "Server CPU a mutation: the server process's CPU time over the mutations of the round. Redis "
        "cmds a mutation: INFO commandstats of the primary (its Sentinels' and the replica's few "
        "included), a script's commands counted beside its EVALSHA; with 1 each writing script call "
        "also sends the barrier SET and WAIT (store/redis/replicas.py), and the replica acknowledges "
        "(REPLCONF ACK) when the primary asks it, once for every WAIT that came in the same turn of "
        "its loop. A mutation's commands with 1 beyond those with 0: "
        + "; ".join(f"{added_commands(results, c)} at {c} connection(s)" for c in CONCURRENCIES)
        + ".",
        f"The replica at the end: {results.replica}.",
    ]


def replicated_ratio_notes() -> list[str]:
    return [
        "Each round of WRITE_REPLICAS=1 over the round of 0 taken just before it: the median of the "
        "rounds' ratios and their range."
    ]
