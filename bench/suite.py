"""The benchmark run: its Redis, the graph, the servers, the scenarios and the ratios."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
import uvloop

from bench.cluster import run_cluster
from bench.cpu import meter, own_seconds, process_seconds
from bench.graph import VIEWER, FanGraph, LoadReport, TypicalGraph, fan_id, load_fan_graph, load_typical_graph
from bench.loaders import Loader, pick_loader
from bench.loadgen import FollowCycle, LoadResult, LoadSpec, RequestSpec, summarize
from bench.model import CpuLayout, Group, MemoryRow, Options, Ratio, Row
from bench.processes import Child, child_env, free_port, pin, spawn, wait_http
from bench.queries import FOLLOW_MUTATION, UNFOLLOW_MUTATION, bearer, fans_query_body, raw_body
from bench.redisstats import RedisWork, Snapshot, Stats, used_memory
from bench.roundtrips import InProcess
from bench.verify import raw_loader_matches_store
from followgraph.server.auth import AuthConfig, mint_token
from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer, find_redis_server
from followgraph.store import FollowStore

SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuvwxyz"
Say = Callable[[str], None]
# Viewers of the write scenarios. The server limits follows per user (FOLLOWGRAPH_FOLLOW_RATE_LIMIT,
# 400/day by default); the writes are spread over enough users to stay far below it.
WRITERS = 512


@dataclass
class Results:
    options: Options
    layout: CpuLayout
    loader: str = ""
    redis_version: str = ""
    redis_allocator: str = ""
    load: LoadReport | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    ratios: list[Ratio] = field(default_factory=list)
    memory: list[MemoryRow] = field(default_factory=list)
    profile: list[str] = field(default_factory=list)
    loadavg_start: str = ""


class Bench:
    def __init__(self, options: Options, say: Say) -> None:
        self.options = options
        self.say = say
        self.layout = CpuLayout.choose(options.pin)
        self.loader: Loader = pick_loader(self.layout.loader, force_python=options.python_loader)
        self.results = Results(options, self.layout, loader=self.loader.description)
        self.graph = FanGraph(sizes=options.sizes, writers=tuple(f"w{i}" for i in range(1, WRITERS + 1)))
        auth = AuthConfig("HS256", secret=SECRET.encode())
        self.viewer_token = mint_token(auth, VIEWER, ttl_seconds=6 * 3600)
        self.writer_tokens = [mint_token(auth, w, ttl_seconds=6 * 3600) for w in self.graph.writers]
        self.redis_port = 0
        self.port_a = 0
        self.port_b = 0
        self.server_a: Child | None = None
        self.server_g: Child | None = None
        self.port_g = 0
        self.bench_app: Child | None = None
        self.children: list[Child] = []
        self.redis_pids: list[int] = []
        self.secret = SECRET

    # -- the whole run ----------------------------------------------------------------------------

    def run(self) -> Results:
        with open("/proc/loadavg") as f:
            self.results.loadavg_start = " ".join(f.read().split()[:3])
        with contextlib.ExitStack() as stack:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="followgraph-bench-")))
            server = RedisServer(
                directory=tmp / "redis",
                port=free_port(),
                binary=self.options.redis_binary or find_redis_server(),
            )
            server.start()
            stack.callback(server.stop)
            assert server.process is not None
            pin(server.process.pid, self.layout.redis)
            self.redis_pids = [server.process.pid]
            self.redis_port = server.port
            stats = redis.Redis(host="127.0.0.1", port=server.port, decode_responses=True)
            stack.callback(stats.close)
            info: dict[str, Any] = stats.info("server")
            memory_info: dict[str, Any] = stats.info("memory")
            self.results.redis_version = str(info["redis_version"])
            self.results.redis_allocator = str(memory_info.get("mem_allocator", "?"))

            self.say("Checking the raw bulk loader against the store's own writes (small graph)...")
            self.results.checks["raw bulk loader writes what the store writes"] = uvloop.run(
                raw_loader_matches_store("127.0.0.1", server.port)
            )
            labels = ", ".join(c.label for c in self.graph.celebrities)
            self.say(f"Loading the graph (celebrities with {labels} fans)...")
            self.results.load = load_fan_graph(
                self.graph, "127.0.0.1", server.port, progress=lambda step: self.say(f"  {step}")
            )
            load = self.results.load
            self.say(
                f"  {load.edges:,} edges, {load.users:,} users in {load.seconds:.1f}s "
                f"({load.edges_per_second:,.0f} edges/s)"
            )

            self.port_a, self.port_b = free_port(), free_port()
            url = f"redis://127.0.0.1:{server.port}/0"
            env = child_env({"FOLLOWGRAPH_JWT_SECRET": SECRET, "FOLLOWGRAPH_DATA_DIR": str(tmp / "data")})
            self.server_a = self.spawn_server("server A (followgraph serve)", self.port_a, url, env, tmp)
            stack.callback(self.server_a.stop)
            self.port_g = free_port()
            general_env = {**env, "FOLLOWGRAPH_COMPILED_QUERIES": "0"}
            self.server_g = self.spawn_server(
                "server A, general executor", self.port_g, url, general_env, tmp
            )
            stack.callback(self.server_g.stop)
            self.bench_app = bench_app = spawn(
                "bench app (B/C/D)",
                [sys.executable, "-m", "bench.rawapp", "--port", str(self.port_b), "--redis-url", url],
                env=child_env({"BENCH_JWT_SECRET": SECRET}),
                log_path=tmp / "bench-app.log",
                cpus=self.layout.app,
            )
            stack.callback(bench_app.stop)
            self.children = [self.server_a, self.server_g, bench_app]
            wait_http(self.server_a, self.port_a)
            wait_http(self.server_g, self.port_g)
            wait_http(bench_app, self.port_b)

            self.say("Round trips and answers, in-process...")
            counts = uvloop.run(self._in_process(tmp / "data-inproc"))
            mid = self.graph.celebrity(self.options.middle_size).user_id
            self.results.checks["C (seed) under concurrency"] = uvloop.run(self._race_c(mid))
            single = self._scenarios(stats, counts, url)
            self.server_a.stop()
            self.server_g.stop()
            bench_app.stop()
        binaries = self._redis_binaries()
        self._memory(binaries)
        if self.options.cluster:
            run_cluster(self, single, binaries)
        self.results.ratios = self._ratios()
        return self.results

    # -- in-process: round trips and the answers compared ------------------------------------------

    async def _in_process(self, data_dir: Path) -> dict[str, float]:
        mid = self.graph.celebrity(self.options.middle_size).user_id
        counts: dict[str, float] = {}
        checks = self.results.checks
        async with InProcess.open(self.redis_port, SECRET, data_dir) as app:
            # First calls load the Lua scripts; nothing below counts a SCRIPT LOAD.
            await app.fans_page("A", self.viewer_token, mid, 20)
            await app.fans_page("B", self.viewer_token, mid, 20)
            answers: dict[str, Any] = {}
            for route in "ABCD":
                counts[f"{route}:{mid}:20"], answers[route] = await app.fans_page(
                    route, self.viewer_token, mid, 20
                )
            for celebrity in self.graph.celebrities:
                counts[f"A:{celebrity.user_id}:20"], _ = await app.fans_page(
                    "A", self.viewer_token, celebrity.user_id, 20
                )
            for size in self.options.page_sizes:
                counts[f"A:{mid}:{size}"], _ = await app.fans_page("A", self.viewer_token, mid, size)
            checks.update(self._compare(answers))
            target = fan_id(self.graph.population)
            follow, reply = await app.mutation(self.writer_tokens[0], target, follow=True)
            unfollow, reply2 = await app.mutation(self.writer_tokens[0], target, follow=False)
            checks["mutation changed (follow, unfollow)"] = (
                reply["data"]["follow"]["changed"],
                reply2["data"]["unfollow"]["changed"],
            )
            counts["A:mutation"] = (follow + unfollow) / 2
            checks["round trips of one follow / unfollow mutation through A"] = f"{follow} / {unfollow}"
            raw1, _ = await app.raw_follow(self.graph.writers[0], target, follow=True)
            raw2, _ = await app.raw_follow(self.graph.writers[0], target, follow=False)
            counts["raw:follow"] = (raw1 + raw2) / 2
        return counts

    def _compare(self, answers: dict[str, Any]) -> dict[str, Any]:
        def edges(route: str) -> list[dict[str, Any]]:
            result: list[dict[str, Any]] = answers[route]["data"]["user"]["fans"]["edges"]
            return result

        def without_cursor(route: str) -> list[dict[str, Any]]:
            return [{k: v for k, v in e.items() if k != "cursor"} for e in edges(route)]

        expected = [self.graph.expected_relationship(int(e["node"]["userId"][1:])) for e in edges("A")]
        relationships = [e["relationship"] for e in edges("A")]
        mix = {r: relationships.count(r) for r in sorted(set(relationships))}
        return {
            "A relationships as loaded": relationships == expected,
            "first page relationships": mix,
            "B answers exactly as A": answers["B"] == answers["A"],
            "D answers exactly as A": answers["D"] == answers["A"],
            "C answers as A (cursors aside: C pages by offset)": without_cursor("C") == without_cursor("A"),
        }

    async def _race_c(self, celebrity: str) -> str:
        """The seed's temporary keys are per viewer: overlapping pages of one viewer overwrite them.

        Asks the live C server for four different pages, 64 requests started 0.7 ms apart, and
        compares each answer with the same page asked alone."""
        requests = 64
        pages = [20 * (i % 4) for i in range(requests)]
        headers = bearer(self.viewer_token)
        limits = httpx.Limits(max_connections=requests)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port_b}", limits=limits) as http:

            async def page(offset: int, delay: float = 0.0) -> list[dict[str, Any]]:
                await asyncio.sleep(delay)
                body = raw_body(celebrity, 20, offset)
                response = await http.post("/c", content=body, headers=headers)
                response.raise_for_status()
                edges: list[dict[str, Any]] = response.json()["data"]["user"]["fans"]["edges"]
                return edges

            expected = {offset: await page(offset) for offset in sorted(set(pages))}
            got = await asyncio.gather(*(page(o, 0.0007 * i) for i, o in enumerate(pages)))
        wrong = wrong_entries = 0
        for edges, offset in zip(got, pages, strict=True):
            reference = expected[offset]
            if edges != reference:
                wrong += 1
                wrong_entries += sum(1 for e, r in zip(edges, reference, strict=False) if e != r)
                wrong_entries += abs(len(edges) - len(reference))
        return (
            f"{wrong} of {requests} overlapping requests of one viewer (4 pages, started 0.7 ms apart) "
            f"answered wrongly, {wrong_entries} wrong or missing entries"
        )

    # -- load scenarios --------------------------------------------------------------------------

    def measure(
        self,
        stats: Stats,
        name: str,
        server: Child,
        port: int,
        request: RequestSpec,
        round_trips: float | None,
        note: str = "",
    ) -> Row:
        spec = LoadSpec(
            "127.0.0.1", port, self.options.concurrency, self.options.warmup, self.options.duration, request
        )
        before = Snapshot.take(stats)
        cpu = meter(self._our_pids)
        server_cpu = process_seconds(server.pid)
        load = self.loader.run(spec)
        server_cpu = process_seconds(server.pid) - server_cpu
        others = cpu().others_percent
        after = Snapshot.take(stats)
        work = RedisWork.between(before, after, load.total)
        server_ms = 1000 * server_cpu / load.total if load.total else None
        self.say(
            f"  {name:<34} {load.rps:>9,.0f} req/s  p50 {load.p50_ms:6.2f} ms  p99 {load.p99_ms:6.2f} ms"
            f"  errors {load.errors}  {work.commands_per_request:.1f} cmds/req  others' CPU {others:.0f}%"
        )
        if load.errors or load.connection_errors:
            note = (
                note + "; " if note else ""
            ) + f"{load.errors} errors, {load.connection_errors} lost connections"
        return Row(name, load, work, round_trips, note, others, server_ms)

    def _scenarios(self, stats: redis.Redis, counts: dict[str, float], url: str) -> Row:
        """Run the scenarios on the single Redis; returns A's row of the side-by-side page."""
        opts, graph = self.options, self.graph
        mid = graph.celebrity(opts.middle_size)
        auth = bearer(self.viewer_token)

        def graphql(user_id: str, first: int) -> RequestSpec:
            return RequestSpec("/graphql", fans_query_body(user_id, first), auth)

        versus = Group("versus", f"Fans page of {mid.user_id} (first: 20): A GraphQL vs B/C/D hand-written")
        self.results.groups.append(versus)
        self.say(
            f"Scenarios ({opts.warmup:g}s warm-up + {opts.duration:g}s each, {opts.concurrency} connections):"
        )
        a_request = graphql(mid.user_id, 20)
        a_mid = self.measure(
            stats,
            f"A GraphQL server ({mid.label})",
            self._a,
            self.port_a,
            a_request,
            counts[f"A:{mid.user_id}:20"],
        )
        a_mid_profile = self._profile_during(a_request) if opts.profile else None
        versus.rows.append(a_mid)
        for route, title in (
            ("B", "B hand-written Starlette"),
            ("C", "C seed algorithm (temp keys)"),
            ("D", "D naive N+1"),
        ):
            versus.rows.append(
                self.measure(
                    stats,
                    f"{title} ({mid.label})",
                    self._bcd,
                    self.port_b,
                    RequestSpec(f"/{route.lower()}", raw_body(mid.user_id, 20), auth),
                    counts[f"{route}:{mid.user_id}:20"],
                )
            )
        versus.notes.append(
            "B, C and D verify the same bearer token as A and return the same JSON; C pages by offset "
            "(as the PHP does) and writes 4 temporary keys per request; its cost does not depend on "
            "the list size (ZREVRANGE by rank)."
        )
        if a_mid_profile:
            self.results.profile = a_mid_profile

        executor = Group(
            "executor", "A with compiled plans (the default) vs A with the general executor only"
        )
        self.results.groups.append(executor)
        executor.rows.append(dataclasses.replace(a_mid, note="same run as in the first table"))
        assert self.server_g is not None
        executor.rows.append(
            self.measure(
                stats,
                f"A general executor ({mid.label})",
                self.server_g,
                self.port_g,
                a_request,
                counts[f"A:{mid.user_id}:20"],
                "FOLLOWGRAPH_COMPILED_QUERIES=0: every request through Strawberry and graphql-core",
            )
        )

        sizes = Group("sizes", "A by list size: fans page (first: 20) of celebrities with more fans")
        self.results.groups.append(sizes)
        for celebrity in graph.celebrities:
            if celebrity == mid:
                row = dataclasses.replace(
                    a_mid, name=f"A fans of {celebrity.user_id}", note="same run as in the first table"
                )
            else:
                row = self.measure(
                    stats,
                    f"A fans of {celebrity.user_id}",
                    self._a,
                    self.port_a,
                    graphql(celebrity.user_id, 20),
                    counts[f"A:{celebrity.user_id}:20"],
                )
            sizes.rows.append(row)

        pages = Group("pages", f"A by page size: fans of {mid.user_id}, first: 1 / 20 / 100")
        self.results.groups.append(pages)
        for size in opts.page_sizes:
            if size == 20:
                row = dataclasses.replace(
                    a_mid, name=f"A first: {size}", note="same run as in the first table"
                )
            else:
                row = self.measure(
                    stats,
                    f"A first: {size}",
                    self._a,
                    self.port_a,
                    graphql(mid.user_id, size),
                    counts[f"A:{mid.user_id}:{size}"],
                )
            pages.rows.append(row)

        writes = Group("writes", "Writes: follow/unfollow mutations through A vs the FOLLOW script alone")
        self.results.groups.append(writes)
        half = graph.population // 2
        cycle = FollowCycle(self.writer_tokens, "f", 1, half, FOLLOW_MUTATION, UNFOLLOW_MUTATION)
        writes.rows.append(
            self.measure(
                stats,
                "A follow/unfollow mutations",
                self._a,
                self.port_a,
                RequestSpec("/graphql", "", {}, follow_cycle=cycle),
                counts["A:mutation"],
                f"{len(self.writer_tokens)} viewer tokens, alternating follow X / unfollow X",
            )
        )
        writes.rows.append(self._raw_follow(stats, url, half + 1, half, counts["raw:follow"]))
        writes.notes.append(
            "The script loop runs FollowStore.follow/unfollow in the harness process (pinned to the "
            "server's CPU), with the same concurrency, on the server's client settings (server.redis_client)."
        )
        return a_mid

    def _raw_follow(self, stats: redis.Redis, url: str, first: int, targets: int, round_trips: float) -> Row:
        writers = self.graph.writers
        concurrency, warmup, duration = self.options.concurrency, self.options.warmup, self.options.duration

        async def loop() -> LoadResult:
            client = connect(url)
            store = FollowStore(client)
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
                        await store.follow(follower=me, followee=target)
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
        if self.layout.app is not None:
            os.sched_setaffinity(0, self.layout.app)
        try:
            before = Snapshot.take(stats)
            cpu = meter(self._our_pids)
            own = own_seconds()
            load = uvloop.run(loop())
            own = own_seconds() - own
            others = cpu().others_percent
            after = Snapshot.take(stats)
        finally:
            os.sched_setaffinity(0, affinity)
        work = RedisWork.between(before, after, load.total)
        self.say(
            f"  {'FOLLOW script (FollowStore) loop':<34} {load.rps:>9,.0f} ops/s  p50 {load.p50_ms:6.2f} ms"
            f"  p99 {load.p99_ms:6.2f} ms  {work.commands_per_request:.1f} cmds/op  others' CPU {others:.0f}%"
        )
        own_ms = 1000 * own / load.total if load.total else None
        return Row(
            "FOLLOW/UNFOLLOW script loop", load, work, round_trips, "no HTTP, no GraphQL", others, own_ms
        )

    def spawn_server(self, name: str, port: int, url: str, env: dict[str, str], tmp: Path) -> Child:
        args = [sys.executable, "-m", "followgraph.server", "serve", "--port", str(port), "--redis-url", url]
        return spawn(
            name,
            [*args, "--production", "--log-level", "warning"],
            env=env,
            log_path=tmp / f"server-{port}.log",
            cpus=self.layout.app,
        )

    @property
    def _a(self) -> Child:
        assert self.server_a is not None
        return self.server_a

    @property
    def _bcd(self) -> Child:
        assert self.bench_app is not None
        return self.bench_app

    def _our_pids(self) -> list[int]:
        return [child.pid for child in self.children if child.process.poll() is None] + self.redis_pids

    # -- py-spy ------------------------------------------------------------------------------------

    def _profile_during(self, request: RequestSpec) -> list[str]:
        from bench.profile import profile_under_load

        assert self.server_a is not None
        spec = LoadSpec(
            "127.0.0.1", self.port_a, self.options.concurrency, 1.0, self.options.duration, request
        )
        self.say("  profiling server A with py-spy under the same load...")
        return profile_under_load(self.server_a.pid, self.loader, spec)

    # -- memory ------------------------------------------------------------------------------------

    def _redis_binaries(self) -> list[str]:
        """The benchmark's redis-server, and another one on PATH (another version) if there is one."""
        binaries = [self.options.redis_binary or find_redis_server()]
        on_path = shutil.which("redis-server")
        if on_path and os.path.realpath(on_path) != os.path.realpath(binaries[0]):
            binaries.append(on_path)
        return binaries

    def _memory(self, binaries: list[str]) -> None:
        graph = TypicalGraph(self.options.memory_users)
        for binary in binaries:
            self.say(f"Memory: {graph.users:,} users following {graph.per_user} each, on {binary}...")
            with self._fresh_redis(binary) as port:
                client = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
                try:
                    info: dict[str, Any] = client.info("server")
                    mem: dict[str, Any] = client.info("memory")
                    started = time.perf_counter()
                    edges, pairs, growth = load_typical_graph(
                        graph, "127.0.0.1", port, used_memory=functools.partial(used_memory, client)
                    )
                    seconds = time.perf_counter() - started
                finally:
                    client.close()
            label = f"{info['redis_version']} ({mem.get('mem_allocator', '?')})"
            row = MemoryRow.of_load(label, graph.users, edges, pairs, growth, seconds)
            self.results.memory.append(row)
            self.say(
                f"  {edges:,} edges, {pairs:,} mutual pairs: "
                f"{row.per_edge(row.sets):.1f} B/edge for all sets, "
                f"{row.per_edge(row.following):.1f} following + {row.per_edge(row.fans):.1f} fans"
            )

    @contextlib.contextmanager
    def _fresh_redis(self, binary: str) -> Iterator[int]:
        with tempfile.TemporaryDirectory(prefix="followgraph-bench-mem-") as tmp:
            server = RedisServer(directory=Path(tmp), port=free_port(), binary=binary)
            server.start()
            try:
                assert server.process is not None
                pin(server.process.pid, self.layout.redis)
                yield server.port
            finally:
                server.stop()

    # -- ratios ------------------------------------------------------------------------------------

    def _ratios(self) -> list[Ratio]:
        groups = {g.key: g for g in self.results.groups}
        ratios: list[Ratio] = []
        if "versus" in groups:
            rows = groups["versus"].rows
            a = rows[0]
            for other in rows[1:]:
                letter = other.name[0]
                ratios.append(_throughput(f"A/{letter} throughput", a, other))
                if a.server_cpu_ms and other.server_cpu_ms:
                    ratios.append(
                        Ratio(
                            f"A/{letter} server CPU per request",
                            a.server_cpu_ms / other.server_cpu_ms,
                            f"{a.server_cpu_ms:.2f} / {other.server_cpu_ms:.2f} ms",
                        )
                    )
        if "sizes" in groups and len(groups["sizes"].rows) > 1:
            small, large = groups["sizes"].rows[0], groups["sizes"].rows[-1]
            at = f"at {large.name.split()[-1]} / {small.name.split()[-1]}"
            ratios += [_p50(f"p50 {at}", large, small), _throughput(f"throughput {at}", large, small)]
        if "pages" in groups and len(groups["pages"].rows) > 1:
            one, big = groups["pages"].rows[0], groups["pages"].rows[-1]
            at = f"at {big.name.split()[-1]} / {one.name.split()[-1]}"
            trips = f"{big.round_trips:g} / {one.round_trips:g}"
            ratios.append(Ratio(f"round trips {at}", _div(big.round_trips or 0, one.round_trips or 0), trips))
            ratios.append(_p50(f"p50 {at}", big, one))
        if "executor" in groups and len(groups["executor"].rows) == 2:
            compiled, general = groups["executor"].rows
            ratios.append(_throughput("A compiled plans / A general executor throughput", compiled, general))
        if "cluster" in groups and len(groups["cluster"].rows) > 1:
            single, cluster = groups["cluster"].rows[0], groups["cluster"].rows[1]
            ratios.append(_throughput("cluster / one Redis throughput (same page)", cluster, single))
            ratios.append(_p50("cluster / one Redis p50 (same page)", cluster, single))
        memory = self.results.memory
        for on_cluster in (m for m in memory if "cluster" in m.redis):
            version = on_cluster.redis.split()[0]
            on_one = next((m for m in memory if m.redis.split()[0] == version), None)
            if on_one is None or on_one is on_cluster:
                continue
            many, one_ = on_cluster.per_edge(on_cluster.sets), on_one.per_edge(on_one.sets)
            ratios.append(
                Ratio(
                    f"cluster / one Redis memory per edge ({version})",
                    _div(many, one_),
                    f"{many:.1f} / {one_:.1f} B/edge",
                )
            )
        if "writes" in groups and len(groups["writes"].rows) == 2:
            a, raw = groups["writes"].rows
            ratios.append(_throughput("A mutations / FOLLOW script rate", a, raw, unit="per s"))
        return ratios


def _throughput(name: str, top: Row, bottom: Row, *, unit: str = "req/s") -> Ratio:
    return Ratio(
        name, _div(top.load.rps, bottom.load.rps), f"{top.load.rps:,.0f} / {bottom.load.rps:,.0f} {unit}"
    )


def _p50(name: str, top: Row, bottom: Row) -> Ratio:
    return Ratio(
        name,
        _div(top.load.p50_ms, bottom.load.p50_ms),
        f"{top.load.p50_ms:.2f} / {bottom.load.p50_ms:.2f} ms",
    )


def _div(a: float, b: float) -> float:
    return a / b if b else float("nan")
