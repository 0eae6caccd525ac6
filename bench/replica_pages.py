"""What FOLLOWGRAPH_READ_FROM_REPLICAS=1 buys the primary (#40): one hot celebrity's fans page.

The second part of bench/replicated.py, on the same primary, replica and Sentinels: a celebrity
with FANS fans is loaded into the primary (the replica gets it by replication), then two `followgraph
serve` processes (server A, one worker, pinned to the server's CPU) with FOLLOWGRAPH_WRITE_REPLICAS=1,
one with FOLLOWGRAPH_READ_FROM_REPLICAS=0 and one with =1, both alive throughout, are asked the
viewer's first page of the celebrity's fans at CONCURRENCY connections, 0 and 1 in turn. Each Redis
is measured on its own (INFO cpu and commandstats before and after each round): the figure that
matters is the primary's CPU a page. On a Sentinel URL the server has no read channel, so both read
through redis-py.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import redis

from bench.graph import FanGraph
from bench.loadgen import RequestSpec
from bench.model import Turns
from bench.processes import Child
from bench.queries import bearer, fans_query_body
from bench.redisstats import RedisWork, Snapshot

if TYPE_CHECKING:
    from bench.suite import Bench

# The celebrity of bench/clients.py: a page among 10,000 fans.
FANS = 10_000
FIRST = 20
CONCURRENCY = 32
SETTINGS = (0, 1)
# Seconds for the pages still in flight when a round's load stops to finish before the next round
# counts: else the last pages of 0 fall on the primary in 1's round.
SETTLE = 0.2
# With 1, the primary's EVALSHA a page (the page's scripts) must stay below this for the check.
STRAY_SCRIPTS = 0.01


def page_graph() -> FanGraph:
    """The celebrity, its fans and the viewer: written into the primary after the follow part."""
    return FanGraph(sizes=(FANS,), writers=())


def server_envs() -> dict[int, dict[str, str]]:
    """Server A's settings beyond the common ones, by FOLLOWGRAPH_READ_FROM_REPLICAS."""
    return {
        n: {"FOLLOWGRAPH_WRITE_REPLICAS": "1", "FOLLOWGRAPH_READ_FROM_REPLICAS": str(n)} for n in SETTINGS
    }


@dataclass(frozen=True, slots=True)
class PageRound:
    """One setting's round: the rate, the latency, the server's CPU, and each Redis's CPU and
    commands, a page."""

    rate: float
    p50_ms: float
    p99_ms: float
    cpu_us: float
    primary_cpu_us: float
    replica_cpu_us: float
    primary_commands: float
    replica_commands: float
    primary_scripts: float  # EVALSHA a page
    replica_scripts: float
    errors: int
    others_cpu: float

    @property
    def redis_cpu_us(self) -> float:
        return self.primary_cpu_us + self.replica_cpu_us


@dataclass
class PageSetting(Turns):
    """FOLLOWGRAPH_READ_FROM_REPLICAS=`reads`, round by round."""

    reads: int
    rounds: list[PageRound] = field(default_factory=list)


@dataclass
class PageResults:
    fans: int = FANS
    rounds: int = 0
    seconds: float = 0.0
    settings: list[PageSetting] = field(default_factory=list)
    # The primary's and the replica's EVALSHA a page with 1, and whether the primary's are (almost) none.
    check: str = ""

    def setting(self, reads: int) -> PageSetting:
        return next(s for s in self.settings if s.reads == reads)


def measure_pages(
    bench: Bench,
    results: PageResults,
    servers: dict[int, tuple[Child, int]],
    primary: redis.Redis,
    replica: redis.Redis,
) -> None:
    """Each server warmed once, then results.rounds rounds, 0 and 1 in turn."""
    results.settings = [PageSetting(n) for n in SETTINGS]
    owner = page_graph().celebrity(FANS).user_id
    request = RequestSpec("/graphql", fans_query_body(owner, FIRST), bearer(bench.viewer_token))
    for reads, (child, port) in servers.items():
        # Compiled plans, the replicas counted and a pool of connections before anything is measured.
        bench.measure(
            primary, f"READ_FROM_REPLICAS={reads} warm-up", child, port, request, None,
            concurrency=CONCURRENCY, duration=1.0, warmup=0.0,
        )  # fmt: skip
    bench.say(
        f"Reads from replicas: the fans page of {owner}, READ_FROM_REPLICAS=0 and 1 in turn, "
        f"{results.rounds} rounds of {results.seconds:g} s at {CONCURRENCY} connections..."
    )
    for number in range(1, results.rounds + 1):
        for setting in results.settings:
            child, port = servers[setting.reads]
            time.sleep(SETTLE)
            before = Snapshot.take(replica)
            row = bench.measure(
                primary, f"READ_FROM_REPLICAS={setting.reads} {number}/{results.rounds}", child, port,
                request, None, concurrency=CONCURRENCY, duration=results.seconds, warmup=0.0,
            )  # fmt: skip
            pages = row.load.total
            theirs = RedisWork.between(before, Snapshot.take(replica), pages)
            ours = row.work
            setting.rounds.append(
                PageRound(
                    row.load.rps,
                    row.load.p50_ms,
                    row.load.p99_ms,
                    1000 * (row.server_cpu_ms or 0.0),
                    ours.cpu_usec_per_request,
                    theirs.cpu_usec_per_request,
                    ours.commands_per_request,
                    theirs.commands_per_request,
                    ours.calls.get("evalsha", 0) / (pages or 1),
                    theirs.calls.get("evalsha", 0) / (pages or 1),
                    row.load.errors + row.load.connection_errors,
                    row.other_cpu or 0.0,
                )
            )
            bench.say(
                f"    Redis CPU/page: primary {ours.cpu_usec_per_request:6.1f} µs, replica "
                f"{theirs.cpu_usec_per_request:6.1f} µs; EVALSHA/page: primary "
                f"{ours.calls.get('evalsha', 0) / (pages or 1):.3f}, replica "
                f"{theirs.calls.get('evalsha', 0) / (pages or 1):.3f}"
            )
    results.check = _check(results)


def _check(results: PageResults) -> str:
    without, with_replicas = (results.setting(n) for n in SETTINGS)
    stray = max(r.primary_scripts for r in with_replicas.rounds)
    moved = min(r.replica_scripts for r in with_replicas.rounds)
    ok = stray < STRAY_SCRIPTS and moved >= without.median("primary_scripts") - STRAY_SCRIPTS
    return (
        f"{'yes' if ok else 'NO'}: with 1, EVALSHA a page at most {stray:.3f} on the primary and at least "
        f"{moved:.2f} on the replica (with 0, {without.median('primary_scripts'):.2f} on the primary)"
    )


# -- the report --------------------------------------------------------------------------------------

HEADERS = [
    "READ_FROM_REPLICAS",
    "pages/s",
    "rounds' range",
    "p50 ms",
    "p99 ms",
    "server CPU µs a page",
    "primary's Redis CPU µs a page",
    "replica's Redis CPU µs a page",
    "primary's cmds a page",
    "replica's cmds a page",
    "errors",
    "others' CPU %",
]
RATIO_HEADERS = [
    "connections",
    "pages/s",
    "p50",
    "p99",
    "server CPU a page",
    "primary's Redis CPU a page",
    "both Redis' CPU a page",
]


def page_rows(results: PageResults) -> list[list[str]]:
    rows = []
    for s in results.settings:
        rates = [r.rate for r in s.rounds]
        rows.append(
            [
                str(s.reads),
                f"{s.median('rate'):,.0f}",
                f"{min(rates):,.0f} to {max(rates):,.0f}",
                f"{s.median('p50_ms'):.2f}",
                f"{s.median('p99_ms'):.2f}",
                f"{s.median('cpu_us'):.0f}",
                f"{s.median('primary_cpu_us'):.1f}",
                f"{s.median('replica_cpu_us'):.1f}",
                f"{s.median('primary_commands'):.2f}",
                f"{s.median('replica_commands'):.2f}",
                str(sum(r.errors for r in s.rounds)),
                f"{s.median('others_cpu'):.0f}",
            ]
        )
    return rows


def _ratio(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def page_ratio_rows(results: PageResults) -> list[list[str]]:
    without, with_replicas = (results.setting(n) for n in SETTINGS)
    attributes = ("rate", "p50_ms", "p99_ms", "cpu_us", "primary_cpu_us", "redis_cpu_us")
    return [[str(CONCURRENCY), *(_ratio(with_replicas.ratios_to(without, a)) for a in attributes)]]


def page_notes(results: PageResults) -> list[str]:
    return [
        f"The same primary, replica and Sentinels; a celebrity with {results.fans:,} fans loaded into "
        "the primary after the follows (the replica caught up before the pages). Two server A processes "
        "(one worker each, on the server's CPU) against the Sentinels' URL, both with "
        "FOLLOWGRAPH_WRITE_REPLICAS=1, one with FOLLOWGRAPH_READ_FROM_REPLICAS=0 and one with =1, both "
        f"alive throughout; the viewer's first page of the celebrity's fans (first: {FIRST}, signed in, "
        f"with each fan's relationship to the viewer) at {CONCURRENCY} connections, through HTTP; each "
        f"server warmed once, then {results.rounds} rounds of {results.seconds:g} s, 0 and 1 in turn; "
        "the medians of the rounds.",
        "On a Sentinel URL the server has no read channel (store/redis/channel.py): both settings read "
        "through redis-py's pooled connections, to the primary with 0 and to the replica with 1.",
        "Redis CPU a page: INFO cpu (used_cpu_user + used_cpu_sys) of each Redis process over the "
        "round, over the pages; its own idle work (its timers, the Sentinels' pings, the replication "
        "link) is in it. Cmds a page: INFO commandstats of each, a script's commands counted beside "
        "its EVALSHA, the Sentinels' and the replication's few included.",
        f"The primary's page reads with 1: {results.check}.",
    ]


def page_ratio_notes() -> list[str]:
    return [
        "Each round of READ_FROM_REPLICAS=1 over the round of 0 taken just before it: the median of the "
        "rounds' ratios and their range. Both Redis' CPU: the primary's and the replica's together."
    ]
