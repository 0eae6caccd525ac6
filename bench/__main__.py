"""`python -m bench` (`make bench`): FollowGraph's benchmark harness.

Starts its own Redis (TCP on 127.0.0.1, no persistence), bulk-loads celebrities with 1k / 100k /
1M fans and a viewer with mixed relationships, serves the real server (A) and its references (B:
the fastest plain-Python endpoint for the same reads, bench/plain.py; N: a Node peer, Fastify +
Mercurius with graphql-jit, bench/peers/node/, when Node is installed; C: the seed document's
temp-key algorithm; D: naive N+1), checks that they answer as A, drives load over loopback, and
reports throughput, latency, Redis commands, writes and round trips per request, ratios, and Redis
memory per edge. Then the change log's section (bench/eventlog.py, on a Redis of its own): the log's
cost on the write path and through A with the SQL consumer off and on (PostgreSQL), and the
consumer's drain rate into PostgreSQL, MariaDB and SQLite; `--eventlog-only` runs just that,
`--no-eventlog` skips it. Then the subscriptions' section (bench/subscriptions.py, on a Redis and a
server of its own): delivery latency of viewerEvents to 10,000 WebSocket subscribers at two rates of
follows, the server's memory per idle subscription and its collector's passes;
`--subscriptions-only` runs just that, `--no-subscriptions` skips it. Then a big account's deletion
(bench/lifecycle.py): its time and Redis CPU, other users' page p99 during it, and its resumption
after a SIGKILL; `--lifecycle-only` runs just that, `--no-lifecycle` skips it. Then `followgraph
import` and `export` of a CSV of follows beside the raw ZADDs (bench/imports.py): `--imports-only`
runs just that, `--no-imports` skips it. Then follows through A with FOLLOWGRAPH_WRITE_REPLICAS=1
against 0, on a primary and a replica of its own (bench/replicated.py), and a celebrity's page with
FOLLOWGRAPH_READ_FROM_REPLICAS=1 against 0 on them (bench/replica_pages.py): `--replicated-only`
runs just that, `--no-replicated` skips it. Then Valkey GLIDE against the read channel and granian
against uvicorn with the protocol guards, on the fans page (bench/clients.py): `--clients-only` runs
just that, `--no-clients` skips it. `--cluster-only` runs just the one Redis / cluster side-by-side
page. Not a test: it asserts no timings."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from rich.console import Console

from bench.model import Options

SCENARIOS = (
    "layers",
    "plain-clients",
    "executor",
    "sizes",
    "pages",
    "connections",
    "workers",
    "writes",
    "memory",
)


# The sections a run may skip (--no-NAME) or run alone (--NAME-only): name, what the section is, and
# what skipping it leaves out.
SECTIONS = (
    ("cluster", "the one Redis / cluster side-by-side page", "the 3-master Redis Cluster part"),
    ("eventlog", "the change log's section", "the change log's section (bench/eventlog.py)"),
    ("subscriptions", "the subscriptions' section", "the subscriptions' section (bench/subscriptions.py)"),
    ("lifecycle", "the big account's deletion", "the big account's deletion (bench/lifecycle.py)"),
    ("imports", "followgraph import and export", "followgraph import and export (bench/imports.py)"),
    (
        "replicated",
        "FOLLOWGRAPH_WRITE_REPLICAS and READ_FROM_REPLICAS",
        "FOLLOWGRAPH_WRITE_REPLICAS=1 against 0 on the follow path and READ_FROM_REPLICAS=1 against 0 on "
        "a page (bench/replicated.py)",
    ),
    (
        "clients",
        "GLIDE and granian against the read channel and uvicorn",
        "GLIDE and granian against the read channel and uvicorn (bench/clients.py)",
    ),
)


def parse(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small graphs (1k/10k/100k fans) and short runs")
    parser.add_argument("--duration", type=float, help="measured seconds per scenario (default 10; quick 3)")
    parser.add_argument("--warmup", type=float, help="warm-up seconds per scenario (default 2; quick 1)")
    parser.add_argument("--concurrency", type=int, default=32, help="connections (default 32)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleaved rounds of the side-by-side page, the median kept (default 3)",
    )
    parser.add_argument("--skip-1m", action="store_true", help="no celebrity with 1,000,000 fans")
    for name, what, skipped in SECTIONS:
        dashed = name.replace("_", "-")
        parser.add_argument(f"--no-{dashed}", action="store_true", help=f"skip {skipped}")
        parser.add_argument(
            f"--{dashed}-only",
            action="store_true",
            help=f"only {what} (its report goes beside its JSON, not to benchmarks.md)",
        )
    parser.add_argument("--no-pin", action="store_true", help="do not pin server, loader and Redis to CPUs")
    parser.add_argument(
        "--python-loader", action="store_true", help="use bench.loadgen even if wrk is on PATH"
    )
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="py-spy profile of server A under the fans-page load (default: on when py-spy is installed)",
    )
    parser.add_argument(
        "--redis-binary", help="redis-server to run (default: the project's, see RedisServer)"
    )
    parser.add_argument(
        "--memory-users", type=int, help="users of the memory graph (default 100000; quick 10000)"
    )
    parser.add_argument(
        "--scenarios",
        help="only these groups beside the side-by-side page, comma-separated: "
        + ", ".join(SCENARIOS)
        + " (default: all); a partial run writes its report beside its JSON",
    )
    args = parser.parse_args(argv)
    scenarios = tuple(s.strip() for s in (args.scenarios or "").split(",") if s.strip())
    if not set(scenarios) <= set(SCENARIOS):
        parser.error(f"--scenarios: choose among {', '.join(SCENARIOS)}")
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    for name, _, _ in SECTIONS:
        if getattr(args, f"no_{name}") and getattr(args, f"{name}_only"):
            dashed = name.replace("_", "-")
            parser.error(f"--no-{dashed} and --{dashed}-only exclude each other")
    quick: bool = args.quick
    return Options(
        quick=quick,
        warmup=args.warmup if args.warmup is not None else (1.0 if quick else 2.0),
        duration=args.duration if args.duration is not None else (3.0 if quick else 10.0),
        concurrency=args.concurrency,
        rounds=args.rounds,
        skip_1m=args.skip_1m,
        cluster=not args.no_cluster,
        eventlog=not args.no_eventlog,
        eventlog_only=args.eventlog_only,
        subscriptions=not args.no_subscriptions,
        subscriptions_only=args.subscriptions_only,
        lifecycle=not args.no_lifecycle,
        lifecycle_only=args.lifecycle_only,
        imports=not args.no_imports,
        imports_only=args.imports_only,
        replicated=not args.no_replicated,
        replicated_only=args.replicated_only,
        clients=not args.no_clients,
        clients_only=args.clients_only,
        cluster_only=args.cluster_only,
        pin=not args.no_pin,
        python_loader=args.python_loader,
        profile=args.profile,
        redis_binary=args.redis_binary,
        memory_users=args.memory_users or (10_000 if quick else 100_000),
        scenarios=scenarios,
    )


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    # Wide tables even when stdout is a file or a pipe (make bench | tee).
    console = Console(width=None if sys.stdout.isatty() else 160)
    # Imported here so that --help is instant.
    from bench.report import write
    from bench.run import run_all
    from bench.suite import Bench

    signal.signal(signal.SIGTERM, _terminate)
    started = time.perf_counter()
    bench = Bench(options, lambda text: console.print(text, markup=False, highlight=False))
    console.print(f"Load generator: {bench.loader.description}", highlight=False)
    console.print(f"CPU pinning: {bench.layout.describe()}", highlight=False)
    try:
        results = run_all(bench)
    except KeyboardInterrupt:
        console.print("Interrupted: every process the harness started has been stopped.")
        return 130
    wall = time.perf_counter() - started
    json_path, md_path = write(results, wall, console)
    console.print(f"Wall time {wall:.0f}s. Results: {json_path}, report: {md_path}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
