"""Two well-kept libraries against FollowGraph's hand-written transport, on the fans page.

- **Valkey GLIDE** against the read channel (store/redis/channel.py, cluster_channel.py, tracking.py):
  each client reads the page server A reads, with the same commands, in a process of its own
  (bench/client_pages.py) pinned to the server's CPU, CONCURRENCY pages at once, on one Redis and
  on a 3-master cluster. CPU per page is that process's CPU time (every thread's: GLIDE's Rust core
  has its own) over the pages it read: the figure that hardly moves with what else this 2-core
  machine runs, where pages a second do.
- **granian** against uvicorn with the protocol guards (transport/http_protocol.py): server A's
  application (server/app.py's app_from_env) under granian (1 worker, the ASGI interface, uvloop;
  its asyncio tasks and its Rust ones) and under `followgraph serve`, all pinned to the server's
  CPU, loaded with the same fans page by the run's load generator; server CPU per request over each
  round.

The contenders of each part take turns, ROUNDS rounds (A, B, A, B, ...), each warmed once before;
a row is the median round, with the rounds' spread and the round-by-round ratio to the part's
first row. The section runs on a Redis and a cluster of its own holding a celebrity with FANS fans.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from bench.client_pages import CLIENTS, Measured
from bench.graph import VIEWER, FanGraph, load_fan_graph, wait_until_indexed
from bench.loadgen import RequestSpec
from bench.model import Turns
from bench.processes import ROOT, Child, child_env, child_setup, free_port, pin, spawn, wait_http
from bench.queries import bearer, fans_query_body
from bench.redisstats import RedisWork, Snapshot, Stats
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer, find_redis_server

if TYPE_CHECKING:
    from bench.suite import Bench

FANS = 10_000
ROUNDS, QUICK_ROUNDS = 5, 3
# Seconds of a client's round (after a warm-up of WARMUP) and of a server's.
CLIENT_SECONDS, HTTP_SECONDS, QUICK_SECONDS = 2.0, 3.0, 1.5
WARMUP = 0.5
CONCURRENCY = 32
MASTERS = 3
# granian as its documentation runs an ASGI app, on the loop A runs on, HTTP/1.1 as uvicorn serves,
# the access lines left to the application as under uvicorn.
GRANIAN_OPTIONS = (
    "--interface", "asgi", "--workers", "1", "--loop", "uvloop", "--http", "1",
    "--no-access-log", "--log-level", "warning",
)  # fmt: skip
FACTORY = "followgraph.server.app:app_from_env"
# granian's rows: its asyncio tasks (the default) and its own task implementation in Rust.
GRANIAN_VARIANTS = {"A on granian": (), "A on granian, Rust tasks": ("--task-impl", "rust")}
# What the protocol guards do (transport/http_protocol.py) and what granian 2.8 does of it: its
# options (`granian --help`), checked on A under granian 2.8.9 with a 2 s header timeout.
GRANIAN_GUARDS = (
    "header deadline: --http1-header-read-timeout (at most 60 s) closes a connection whose headers "
    "do not arrive in time once a byte came, and an idle keep-alive connection; a connection that "
    "sends nothing at all stayed open (17 s and counting, where the guards give 5 s).",
    "body deadline: none. /graphql keeps its own (the application's 408 came after 10 s of a body "
    "trickled a byte a second); a route that answers without reading its body had its connection "
    "closed after the answer.",
    "header size: --http1-buffer-size (at least 8 kB) answers 431, as the guards' max header bytes.",
    "connection cap: --backpressure caps the connections a worker serves; those beyond it wait "
    "unanswered in the listen backlog, /healthz included (no answer in 8 s with the cap reached), "
    "where the guards answer 503 and keep room for the probes.",
    "slow clients: headers trickled a line a second were cut at the header deadline; a slow body "
    "only by the application's deadline (above).",
    "WebSockets: no option for a message's size limit, per-message deflate or the close code at "
    "shutdown, which `followgraph serve` sets on uvicorn (ws_max_size, no deflate, 1001).",
)


@dataclass(frozen=True, slots=True)
class Round:
    """One contender's round: CPU per page (or request), latency, rate, Redis commands a page."""

    cpu_us: float
    p50_ms: float
    p99_ms: float
    rate: float
    commands: float | None = None
    others_cpu: float | None = None


@dataclass
class Contender(Turns):
    part: str  # "one Redis", "cluster", "HTTP"
    name: str
    rounds: list[Round] = field(default_factory=list)


@dataclass
class ClientsResults:
    fans: int = FANS
    rounds: int = 0
    glide: str = ""
    granian: str = ""
    contenders: list[Contender] = field(default_factory=list)
    # Each client's digest of the page it read, by part and client: all of a part's must be equal.
    digests: dict[str, str] = field(default_factory=dict)

    def part(self, part: str) -> list[Contender]:
        return [c for c in self.contenders if c.part == part]


def run_clients(bench: Bench) -> None:
    """The section; results go to bench.results.clients."""
    quick = bench.options.quick
    results = bench.results.clients = ClientsResults(
        rounds=QUICK_ROUNDS if quick else ROUNDS, glide=version("valkey-glide"), granian=version("granian")
    )
    graph = FanGraph(sizes=(FANS,), writers=())
    owner = graph.celebrity(FANS).user_id
    binary = bench.options.redis_binary or find_redis_server()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="followgraph-bench-clients-")))
        one = RedisServer(tmp / "redis", port=free_port(), binary=binary)
        one.start()
        stack.callback(one.stop)
        cluster = LocalCluster(directory=tmp / "cluster", masters=MASTERS, binary=binary)
        cluster.start()
        stack.callback(cluster.stop)
        pids = [p.pid for p in (one.process, *(n.process for n in cluster.nodes)) if p is not None]
        for pid in pids:
            pin(pid, bench.layout.redis)
        host, port = cluster.startup_nodes[0]
        bench.say(f"Clients: a celebrity with {FANS:,} fans into one Redis and a {MASTERS}-master cluster...")
        load_fan_graph(graph, "127.0.0.1", one.port)
        load_fan_graph(graph, host, port, cluster=True)
        stats = redis.Redis(host="127.0.0.1", port=one.port, decode_responses=True)
        stack.callback(stats.close)
        nodes = [redis.Redis(host=h, port=p, decode_responses=True) for h, p in cluster.startup_nodes]
        for node in nodes:
            stack.callback(node.close)
        with bench.redis_of_its_own(*pids):
            _clients(bench, results, "one Redis", one.port, stats, owner, cluster=False)
            _clients(bench, results, "cluster", port, nodes, owner, cluster=True)
            _servers(bench, results, one, stats, owner, tmp)
    for part in ("one Redis", "cluster"):
        seen = {results.digests[f"{part}: {name}"] for name in CLIENTS}
        bench.results.checks[f"clients: every client read the same page ({part})"] = len(seen) == 1


def _clients(
    bench: Bench, results: ClientsResults, part: str, port: int, stats: Stats, owner: str, *, cluster: bool
) -> None:
    seconds = QUICK_SECONDS if bench.options.quick else CLIENT_SECONDS
    contenders = [Contender(part, name) for name in CLIENTS]
    results.contenders += contenders
    bench.say(f"Clients on {part}: {', '.join(CLIENTS)} in turn, {results.rounds} rounds of {seconds:g} s...")
    for number in range(1, results.rounds + 1):
        for contender in contenders:
            before = Snapshot.take(stats)
            measured = _read_pages(bench, contender.name, port, owner, cluster=cluster, seconds=seconds)
            work = RedisWork.between(before, Snapshot.take(stats), measured.all_pages)
            results.digests[f"{part}: {contender.name}"] = measured.digest
            contender.rounds.append(
                Round(
                    measured.cpu_us_per_page,
                    measured.p50_ms,
                    measured.p99_ms,
                    measured.pages / measured.wall_seconds,
                    work.commands_per_request,
                )
            )
            bench.say(
                f"  {contender.name:<14} {number}/{results.rounds}"
                f"  {measured.cpu_us_per_page:7.1f} µs CPU/page"
                f"  p50 {measured.p50_ms:6.2f} ms  p99 {measured.p99_ms:6.2f} ms"
                f"  {measured.pages / measured.wall_seconds:8,.0f} pages/s"
                f"  {work.commands_per_request:.1f} cmds/page"
            )


def _read_pages(
    bench: Bench, client: str, port: int, owner: str, *, cluster: bool, seconds: float
) -> Measured:
    args = [
        sys.executable, "-m", "bench.client_pages", "--client", client, "--port", str(port),
        "--owner", owner, "--viewer", VIEWER, "--concurrency", str(CONCURRENCY),
        "--warmup", str(WARMUP), "--seconds", str(seconds), *(["--cluster"] if cluster else []),
    ]  # fmt: skip
    done = subprocess.run(
        args,
        capture_output=True,
        env=child_env(),
        cwd=ROOT,
        timeout=seconds + WARMUP + 60,
        preexec_fn=child_setup(bench.layout.app),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench.client_pages --client {client} failed:\n{done.stderr.decode()[-3000:]}")
    return Measured(**json.loads(done.stdout.decode().strip().splitlines()[-1]))


# -- granian and uvicorn ---------------------------------------------------------------------------


def _servers(
    bench: Bench, results: ClientsResults, one: RedisServer, stats: redis.Redis, owner: str, tmp: Path
) -> None:
    url = f"redis://127.0.0.1:{one.port}/0"
    seconds = QUICK_SECONDS if bench.options.quick else HTTP_SECONDS
    request = RequestSpec("/graphql", fans_query_body(owner, 20), bearer(bench.viewer_token))
    with _server_pair(bench, url, tmp) as servers:
        waited = wait_until_indexed("127.0.0.1", one.port)
        bench.say(f"HTTP servers: A under uvicorn and granian ({waited:.1f} s for the search indexes)...")
        contenders = [Contender("HTTP", name) for name, _, _ in servers]
        results.contenders += contenders
        for name, server, port in servers:
            bench.measure(stats, f"{name} warm-up", server, port, request, None, duration=seconds, warmup=0.0)
        for number in range(1, results.rounds + 1):
            for contender, (name, server, port) in zip(contenders, servers, strict=True):
                row = bench.measure(
                    stats, f"{name} {number}/{results.rounds}", server, port, request, None,
                    duration=seconds, warmup=0.0,
                )  # fmt: skip
                cpu_us = 1000 * (row.server_cpu_ms or 0.0)
                contender.rounds.append(
                    Round(
                        cpu_us,
                        row.load.p50_ms,
                        row.load.p99_ms,
                        row.load.rps,
                        row.work.commands_per_request,
                        row.other_cpu,
                    )
                )


@contextlib.contextmanager
def _server_pair(bench: Bench, url: str, tmp: Path) -> Iterator[list[tuple[str, Child, int]]]:
    """Server A under uvicorn (`followgraph serve`, as the harness runs it) and under granian's
    GRANIAN_VARIANTS."""
    started: list[tuple[str, Child, int]] = []
    try:
        port = free_port()
        env = child_env({"FOLLOWGRAPH_JWT_SECRET": bench.secret, "FOLLOWGRAPH_DATA_DIR": str(tmp / "data-u")})
        started.append(("A on uvicorn", bench.spawn_server("server A (uvicorn)", port, url, env, tmp), port))
        granian_env = {
            "FOLLOWGRAPH_JWT_SECRET": bench.secret,
            "FOLLOWGRAPH_REDIS_URL": url,
            "FOLLOWGRAPH_PRODUCTION": "1",
        }
        for name, options in GRANIAN_VARIANTS.items():
            port = free_port()
            address = ("--host", "127.0.0.1", "--port", str(port))
            granian = spawn(
                f"server A ({name})",
                [sys.executable, "-m", "granian", *GRANIAN_OPTIONS, *options, *address, "--factory", FACTORY],
                env=child_env({**granian_env, "FOLLOWGRAPH_DATA_DIR": str(tmp / f"data-g{port}")}),
                log_path=tmp / f"granian-{port}.log",
                cpus=bench.layout.app,
            )
            started.append((name, granian, port))
        for _, child, child_port in started:
            bench.children.append(child)
            wait_http(child, child_port)
        yield started
    finally:
        for _, child, _ in started:
            child.stop()
            with contextlib.suppress(ValueError):
                bench.children.remove(child)


# -- the report --------------------------------------------------------------------------------------

HEADERS = [
    "part",
    "contender",
    "CPU µs a page (median)",
    "rounds' range",
    "of the part's first, by round",
    "p50 ms",
    "p99 ms",
    "pages/s",
    "Redis cmds a page",
]


def client_rows(results: ClientsResults) -> list[list[str]]:
    rows = []
    for part in ("one Redis", "cluster", "HTTP"):
        contenders = results.part(part)
        for contender in contenders:
            cpu = [r.cpu_us for r in contender.rounds]
            ratios = contender.ratios_to(contenders[0], "cpu_us")
            name = CLIENTS.get(contender.name, contender.name)
            rows.append(
                [
                    part,
                    name,
                    f"{contender.median('cpu_us'):.1f}",
                    f"{min(cpu):.1f} to {max(cpu):.1f}",
                    f"{statistics.median(ratios):.2f} ({min(ratios):.2f} to {max(ratios):.2f})",
                    f"{contender.median('p50_ms'):.2f}",
                    f"{contender.median('p99_ms'):.2f}",
                    f"{contender.median('rate'):,.0f}",
                    f"{contender.median('commands'):.1f}",
                ]
            )
    return rows


def same_commands(results: ClientsResults, part: str) -> str:
    """GLIDE's batch against the channel sending the same commands, round by round."""
    by_name = {c.name: c for c in results.part(part)}
    ratios = by_name["glide-batch"].ratios_to(by_name["channel-hmget"], "cpu_us")
    where = "the cluster" if part == "cluster" else part
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f} to {max(ratios):.2f}) on {where}"


def client_notes(results: ClientsResults) -> list[str]:
    return [
        f"valkey-glide {results.glide}, granian {results.granian}; a celebrity with {results.fans:,} fans, "
        f"its first page of 20 seen by a viewer following some of them; {results.rounds} rounds taken in "
        "turn, each contender warmed once before; the medians of the rounds.",
        f"Clients: the page's reads in a process of their own (bench/client_pages.py), {CONCURRENCY} pages "
        "at once, pinned to the server's CPU; CPU a page is the process' CPU time, every thread's, over "
        "the pages it read. The PAGE script, then the page's 21 profiles and the viewer's 2 ZMSCOREs in "
        "one round trip: FollowGraph's channel keeps the profiles until Redis says they changed (a "
        "PING in their place); its HMGET row and GLIDE's batch and together rows send an HMGET a "
        "profile. GLIDE's client-side cache (2.6) serves GET, MGET, HGETALL and SMEMBERS one command "
        "at a time (not HMGET, not within a batch): its row reads each profile by HGETALL, kept until "
        "CLIENT TRACKING's BCAST mode (every key's changes, to every client) invalidates it; no read "
        "waits for the invalidations sent before it, so another process' write may not be seen by a "
        "read begun after it returned, where the channel's PING makes sure it is. GLIDE's batch "
        "against the channel sending the same commands, CPU a page by round: "
        + ", ".join(same_commands(results, part) for part in ("one Redis", "cluster"))
        + ".",
        "HTTP: server A (server/app.py) under `followgraph serve` (uvicorn, uvloop, httptools through "
        "transport/http_protocol.py) and under granian " + " ".join(GRANIAN_OPTIONS) + " (and "
        "--task-impl rust); pages/s is "
        "requests a second, CPU the server's (all its processes) a request, p50 and p99 the load "
        "generator's, Redis cmds a request.",
        "granian's guards, beside FollowGraph's protocol: " + " ".join(GRANIAN_GUARDS),
    ]
