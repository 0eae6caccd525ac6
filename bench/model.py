"""The harness' options and results, as plain data (written to bench/results/*.json as is)."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.loadgen import LoadResult
from bench.redisstats import RedisWork

FULL_SIZES = (1_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)


class Turns:
    """The rounds of one contender that took turns with others': a figure's median, and its ratio
    to another contender's round taken beside each (round by round, as the machine's load was)."""

    rounds: Sequence[Any]

    def median(self, attribute: str) -> float:
        """The median of `attribute` over the rounds (a figure a round lacks counts as 0)."""
        return statistics.median(float(getattr(r, attribute) or 0.0) for r in self.rounds)

    def ratios_to(self, reference: Turns, attribute: str) -> list[float]:
        """`attribute` of each round over the reference's round taken beside it."""
        return [
            float(getattr(r, attribute)) / float(getattr(ref, attribute))
            for r, ref in zip(self.rounds, reference.rounds, strict=True)
        ]


@dataclass(frozen=True, slots=True)
class Options:
    quick: bool = False
    warmup: float = 2.0
    duration: float = 10.0
    concurrency: int = 32
    # Interleaved rounds of the side-by-side page (A, B, the Node peer, then again), each of
    # duration / rounds seconds; each contender's median round is its row.
    rounds: int = 3
    skip_1m: bool = False
    pin: bool = True
    python_loader: bool = False
    profile: bool = False
    redis_binary: str | None = None
    memory_users: int = 100_000
    page_sizes: tuple[int, ...] = (1, 20, 100)
    cluster: bool = True
    # The change log's section (bench/eventlog.py); with eventlog_only, nothing else runs.
    eventlog: bool = True
    eventlog_only: bool = False
    # The subscriptions' section (bench/subscriptions.py); with subscriptions_only, nothing else runs.
    subscriptions: bool = True
    subscriptions_only: bool = False
    lifecycle: bool = True
    lifecycle_only: bool = False
    # Bringing a graph over (bench/imports.py): followgraph import and export beside raw ZADDs and
    # the least script.
    imports: bool = True
    imports_only: bool = False
    # Well-kept libraries against FollowGraph's transport (bench/clients.py): GLIDE, granian.
    clients: bool = True
    clients_only: bool = False
    # Writes that wait for a replica (bench/replicated.py): FOLLOWGRAPH_WRITE_REPLICAS=1 against 0.
    replicated: bool = True
    replicated_only: bool = False
    # Only the one Redis / cluster side-by-side page (bench/cluster.py), memory left out.
    cluster_only: bool = False
    # The single Redis' scenario groups (and "memory") to run beside the side-by-side page; all
    # when empty.
    scenarios: tuple[str, ...] = ()

    def runs(self, group: str) -> bool:
        """Whether this run measures the scenario group `group`."""
        return not self.scenarios or group in self.scenarios

    @property
    def sizes(self) -> tuple[int, ...]:
        sizes = QUICK_SIZES if self.quick else FULL_SIZES
        return tuple(n for n in sizes if not (self.skip_1m and n >= 1_000_000))

    @property
    def middle_size(self) -> int:
        """The celebrity of the side-by-side comparison (c100k in a full run)."""
        return 100_000 if 100_000 in self.sizes and not self.quick else self.sizes[len(self.sizes) // 2]


@dataclass(frozen=True, slots=True)
class CpuLayout:
    app: set[int] | None
    loader: set[int] | None
    redis: set[int] | None

    @classmethod
    def choose(cls, pin: bool) -> CpuLayout:
        cpus = sorted(os.sched_getaffinity(0))
        if not pin or len(cpus) < 2:
            return cls(None, None, None)
        if len(cpus) < 4:
            # Two cores: the server under test gets one to itself; the load generator and Redis
            # (a few microseconds per request) share the other.
            return cls({cpus[0]}, {cpus[1]}, {cpus[1]})
        return cls({cpus[0]}, set(cpus[2:]), {cpus[1]})

    def describe(self) -> str:
        if self.app is None:
            return "not pinned"

        def show(cpus: set[int] | None) -> str:
            return ",".join(map(str, sorted(cpus or ())))

        return (
            f"server under test on CPU {show(self.app)}; load generator on {show(self.loader)}; "
            f"Redis on {show(self.redis)}"
        )


@dataclass
class Row:
    """One scenario's figures."""

    name: str
    load: LoadResult
    work: RedisWork
    round_trips: float | None
    note: str = ""
    other_cpu: float | None = None  # % of one core used by processes outside the harness
    server_cpu_ms: float | None = None  # CPU time of the process under test per request
    # Instructions the server spends on a request in process, counted under callgrind
    # (bench/page_instructions.py); None where not counted.
    instructions: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "load": asdict(self.load),
            "redis": {
                "requests": self.work.requests,
                "commands_per_request": self.work.commands_per_request,
                "write_commands_per_request": self.work.write_commands_per_request,
                "changes_per_request": self.work.changes_per_request,
                "usec_per_request": self.work.usec_per_request,
                "cpu_usec_per_request": self.work.cpu_usec_per_request,
                "calls": self.work.calls,
                "mix": self.work.mix(),
            },
            "round_trips_per_request": self.round_trips,
            "other_processes_cpu_percent": self.other_cpu,
            "server_cpu_ms_per_request": self.server_cpu_ms,
            "instructions_per_request": self.instructions,
            "note": self.note,
        }


@dataclass
class Group:
    key: str
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Each row's rounds, by the row's name, where the rows took turns (a row is its median round).
    rounds: dict[str, list[Row]] = field(default_factory=dict)

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.name == name)


@dataclass(frozen=True, slots=True)
class Ratio:
    name: str
    value: float
    detail: str


@dataclass(frozen=True, slots=True)
class MemoryRow:
    redis: str
    users: int
    edges: int
    mutual_pairs: int
    following: int
    fans: int
    mutual: int
    profiles: int
    seconds: float

    @property
    def sets(self) -> int:
        return self.following + self.fans + self.mutual

    def per_edge(self, value: int) -> float:
        return value / self.edges if self.edges else 0.0

    @classmethod
    def of_load(
        cls, redis: str, users: int, edges: int, pairs: int, growth: dict[str, int], seconds: float
    ) -> MemoryRow:
        """A row from load_typical_graph's result: growth of used_memory per stage."""
        stages = (growth["following"], growth["fans"], growth["mutual"], growth["profiles"])
        return cls(redis, users, edges, pairs, *stages, seconds)
