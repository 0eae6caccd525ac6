"""The benchmark run: its Redis, the graph, the servers, the scenarios and the ratios."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.answers import RULE_OWNERS, Asker, Live, add_rule_owners, rules_followed, same_subset
from bench.clients import ClientsResults
from bench.cpu import descendants, meter, tree_seconds
from bench.eventlog_results import EventLogResults
from bench.graph import VIEWER, FanGraph, LoadReport, fan_id
from bench.imports import ImportResults
from bench.layers import Layer, LayerSpec
from bench.lifecycle import LifecycleResults
from bench.loaders import Loader, pick_loader
from bench.loadgen import LoadSpec, RequestSpec
from bench.model import CpuLayout, Group, MemoryRow, Options, Ratio, Row
from bench.nodepeer import DESCRIPTION as NODE_PEER
from bench.nodepeer import NodePeer, locked_versions
from bench.processes import Child, child_env, child_setup, free_port, spawn, wait_http
from bench.queries import (
    bearer,
    fans_query_body,
    raw_body,
)
from bench.redisstats import RedisWork, Snapshot, Stats
from bench.replicated import ReplicatedResults
from bench.roundtrips import InProcess
from bench.subscription_results import SubscriptionResults
from followgraph.transport.auth import AuthConfig, mint_token

SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuvwxyz"
Say = Callable[[str], None]
# The numbers of connections of the tail and worker scenarios (the goals name them).
CONNECTIONS = (16, 64)
# Viewers of the write scenarios. The server limits follows per user (FOLLOWGRAPH_FOLLOW_RATE_LIMIT,
# 400/day by default); the writes are spread over enough users to stay far below it.
WRITERS = 512


@dataclass(frozen=True, slots=True)
class Contender:
    """A server of the side-by-side page and the request it is asked."""

    name: str
    server: Child
    port: int
    request: RequestSpec
    round_trips: float | None


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
    # A's CPU per page in process, layer by layer, beside B (bench/layers.py).
    layers: list[Layer] = field(default_factory=list)
    loadavg_start: str = ""
    node_peer: str = ""
    eventlog: EventLogResults | None = None
    subscriptions: SubscriptionResults | None = None
    lifecycle: LifecycleResults | None = None
    imports: ImportResults | None = None
    replicated: ReplicatedResults | None = None
    clients: ClientsResults | None = None


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
        self.plain: Child | None = None
        self.port_plain = 0
        self.plain_py: Child | None = None
        self.port_plain_py = 0
        self.node: Child | None = None
        self.port_node = 0
        self.node_status = ""
        self.children: list[Child] = []
        self.redis_pids: list[int] = []
        self.secret = SECRET
        self.tmp: Path | None = None

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
            for route in "ABCDG":
                counts[f"{route}:{mid}:20"], answers[route] = await app.fans_page(
                    route, self.viewer_token, mid, 20
                )
            same_bytes = app.raw["B"] == app.raw["A"]
            for celebrity in self.graph.celebrities:
                counts[f"A:{celebrity.user_id}:20"], _ = await app.fans_page(
                    "A", self.viewer_token, celebrity.user_id, 20
                )
            for size in self.options.page_sizes:
                counts[f"A:{mid}:{size}"], _ = await app.fans_page("A", self.viewer_token, mid, size)
            checks.update(self._compare(answers))
            checks["B answers byte for byte as A"] = same_bytes
            await add_rule_owners(app.store, VIEWER)
            ruled = []
            for owner in RULE_OWNERS:
                _, ruled_a = await app.fans_page("A", self.viewer_token, owner, 20)
                await app.fans_page("B", self.viewer_token, owner, 20)
                ruled.append(app.raw["B"] == app.raw["A"] and not ruled_a["data"]["user"]["fans"]["edges"])
            checks[
                "B answers byte for byte as A where the owner hides fans, is locked, blocks the viewer"
            ] = all(ruled)
            target = fan_id(self.graph.population)
            # Once first, so that no count includes a first-use SCRIPT LOAD.
            await app.mutation(self.writer_tokens[0], target, follow=True)
            await app.mutation(self.writer_tokens[0], target, follow=False)
            await app.raw_follow(self.graph.writers[0], target, follow=True)
            await app.raw_follow(self.graph.writers[0], target, follow=False)
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
            "B (plain Python) answers exactly as A": answers["B"] == answers["A"],
            "A's general executor answers exactly as its compiled plan": answers["G"] == answers["A"],
            "D answers exactly as A": answers["D"] == answers["A"],
            "C answers as A (cursors aside: C pages by offset)": without_cursor("C") == without_cursor("A"),
        }

    # -- the Node peer -----------------------------------------------------------------------------

    def _start_node_peer(self, url: str, tmp: Path, stack: contextlib.ExitStack) -> None:
        self.say("Building the Node peer (npm ci when its lock file changed)...")
        peer = NodePeer.build()
        if isinstance(peer, str):
            self.node_status = self.results.node_peer = peer
            self.say(f"  Node peer {peer}")
            return
        self.results.node_peer = f"node {peer.version}; {locked_versions()}"
        self.node_status = f"built (node {peer.version})"
        self.port_node = free_port()
        self.node = node = peer.spawn(self.port_node, url, SECRET, tmp, self.layout.app)
        stack.callback(node.stop)
        self.children.append(node)

    def _check_over_http(self, stats: redis.Redis, mid: str, counts: dict[str, float]) -> None:
        """The live servers' answers: B and the Node peer against A; round trips counted by Redis."""
        checks = self.results.checks
        asker = Asker(stats, self.viewer_token)
        a = Live("A", self.port_a, graphql=True)
        trips_a, page_a = asker.page(a, mid, 20)
        seen = {"A": trips_a}
        same_b = []
        for name, port in (("B", self.port_plain), ("B on redis-py", self.port_plain_py)):
            seen[name], page = asker.page(Live(name, port, graphql=False), mid, 20)
            same_b.append(page == page_a)
        checks["B server answers byte for byte as A server (read channel / redis-py)"] = tuple(same_b)
        if self.node is None:
            checks["Node peer"] = self.node_status
        else:
            peer = Live("Node peer", self.port_node, graphql=True)
            seen[peer.name], page_n = asker.page(peer, mid, 20)
            counts[f"N:{mid}:20"] = seen[peer.name]
            same_json = json.loads(page_n) == json.loads(page_a)
            checks[f"Node peer ({self.node_status}) answers as A"] = (
                "byte for byte" if page_n == page_a else "same JSON" if same_json else "NO: differs"
            )
            subset = same_subset(asker, a, peer, mid)
            checks["Node peer: totalCount, pageInfo, next page by A's cursor, unknown user as A"] = subset
            ruled = rules_followed(asker, a, peer)
            checks["Node peer as A where the owner hides fans, is locked, blocks the viewer"] = ruled
            if not (same_json and subset and ruled):
                # A peer that answers something else is not a reference: it is not measured.
                self.node_status = "not measured: its answers differ from A's (see the checks)"
                self.node.stop()
                self.node = None
        checks["round trips of one page counted by Redis (reads processed)"] = ", ".join(
            f"{name} {n}" for name, n in seen.items()
        )

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
        concurrency: int | None = None,
        duration: float | None = None,
        warmup: float | None = None,
    ) -> Row:
        connections = concurrency or self.options.concurrency
        seconds = duration or self.options.duration
        warm = self.options.warmup if warmup is None else warmup
        spec = LoadSpec("127.0.0.1", port, connections, warm, seconds, request)
        before = Snapshot.take(stats)
        cpu = meter(self._our_pids)
        server_cpu = tree_seconds(server.pid)
        load = self.loader.run(spec)
        server_cpu = tree_seconds(server.pid) - server_cpu
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
        opts = self.options
        self.say(
            f"Scenarios ({opts.warmup:g}s warm-up + {opts.duration:g}s each, {opts.concurrency} connections):"
        )
        a_mid = self._versus(stats, counts)
        scenarios: list[tuple[str, Callable[[], object]]] = [
            ("layers", self._layers),
            ("plain-clients", lambda: self._plain_clients(stats, counts, a_mid)),
            ("executor", lambda: self._executors(stats, counts, a_mid)),
            ("sizes", lambda: self._by_list_size(stats, counts, a_mid)),
            ("pages", lambda: self._by_page_size(stats, counts, a_mid)),
            ("connections", lambda: self._connections(stats, counts)),
            ("workers", lambda: self._workers(stats, counts, url)),
        ]
        for key, run in scenarios:
            if opts.runs(key):
                run()
        return a_mid

    def _layers(self) -> None:
        """The side-by-side page in process, layer by layer (bench/layers.py), on the servers' CPU."""
        mid = self.graph.celebrity(self.options.middle_size)
        self.say("A's layers in process, beside B (bench/layers.py)...")
        spec = LayerSpec(self.redis_port, self.secret, self.viewer_token, VIEWER, mid.user_id)
        done = subprocess.run(
            [sys.executable, "-m", "bench.layers"],
            input=spec.to_json(),
            capture_output=True,
            text=True,
            timeout=1800,
            preexec_fn=child_setup(self.layout.app),
            env=child_env(),
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"bench.layers failed ({done.returncode}):\n{done.stderr[-3000:]}")
        self.results.layers = [Layer(**layer) for layer in json.loads(done.stdout)]
        for layer in self.results.layers:
            counted = f", {layer.instructions / 1000:,.0f}k instructions" if layer.instructions else ""
            self.say(
                f"  {layer.name:<12} {layer.quartile_us:7.1f} µs a page (fastest batch {layer.min_us:.1f}), "
                f"{layer.calls:.0f} calls{counted}"
            )

    def _group(self, key: str, title: str) -> Group:
        group = Group(key, title)
        self.results.groups.append(group)
        return group

    def _page_request(self, user_id: str, first: int) -> RequestSpec:
        return RequestSpec("/graphql", fans_query_body(user_id, first), bearer(self.viewer_token))

    def _a_page(
        self, stats: Stats, counts: dict[str, float], name: str, user_id: str, first: int, a_mid: Row
    ) -> Row:
        """A's fans page of `user_id`, measured; the side-by-side run's row again when it is that page."""
        mid = self.graph.celebrity(self.options.middle_size)
        if (user_id, first) == (mid.user_id, 20):
            return dataclasses.replace(a_mid, name=name, note="same run as in the first table")
        request = self._page_request(user_id, first)
        return self.measure(stats, name, self._a, self.port_a, request, counts[f"A:{user_id}:{first}"])

    def _versus(self, stats: Stats, counts: dict[str, float]) -> Row:
        mid = self.graph.celebrity(self.options.middle_size)
        versus = self._group(
            "versus",
            f"Fans page of {mid.user_id} (first: 20): A GraphQL vs plain Python (B), the Node peer, C and D",
        )
        a_request = self._page_request(mid.user_id, 20)
        auth = bearer(self.viewer_token)
        assert self.plain is not None
        contenders = [
            Contender(
                f"A GraphQL server ({mid.label})",
                self._a,
                self.port_a,
                a_request,
                counts[f"A:{mid.user_id}:20"],
            ),
            Contender(
                f"B plain Python ({mid.label})",
                self.plain,
                self.port_plain,
                RequestSpec("/b", raw_body(mid.user_id, 20), auth),
                counts[f"B:{mid.user_id}:20"],
            ),
        ]
        if self.node is not None:
            contenders.append(
                Contender(
                    f"N Node peer ({mid.label})",
                    self.node,
                    self.port_node,
                    a_request,
                    counts.get(f"N:{mid.user_id}:20"),
                )
            )
        versus.rows += self._interleaved(stats, contenders)
        a_mid = versus.rows[0]
        if self.options.profile:
            self.results.profile = self._profile_during(a_request)
        for route, title in (("C", "C seed algorithm (temp keys)"), ("D", "D naive N+1")):
            request = RequestSpec(f"/{route.lower()}", raw_body(mid.user_id, 20), auth)
            count = counts[f"{route}:{mid.user_id}:20"]
            versus.rows.append(
                self.measure(stats, f"{title} ({mid.label})", self._bcd, self.port_b, request, count)
            )
        versus.notes += [
            "B (bench/plain.py), plain Python: a raw ASGI app on uvicorn + uvloop + httptools (through A's "
            "HTTP protocol, transport/http_protocol.py), the bearer "
            "JWT verified once with PyJWT and then cached until it expires, the store's own Lua scripts "
            "in two round trips (PAGE; then RELATIONS + PROFILES in one write) on FollowGraph's own "
            "read channel (store/redis/channel.py, one auto-pipelined connection), cursors and dates by "
            "FollowGraph's own cached functions, orjson; the owner's rules as A applies them (its PAGE "
            "call also reads the owner's hideFans and locked settings and blocks); the same bytes as A.",
            f"N, the Node peer (bench/peers/node/): {NODE_PEER}, the same schema subset, keys, cursors, "
            "rules and Lua scripts (SCRIPT LOAD, EVALSHA), a DataLoader per request, ioredis "
            "auto-pipelining; "
            "asked the same GraphQL document as A; one Node process. "
            + ("" if self.node is not None else f"This run: {self.node_status}."),
            "C and D (bench/rawapp.py, Starlette): the seed's algorithm and naive N+1; they verify the "
            "same token and return the same JSON; C pages by offset (as the PHP does) and writes 4 "
            "temporary keys per request; its cost does not depend on the list size (ZREVRANGE by rank).",
            "Round trips: counted in process for A, B, C and D; for the Node peer, from Redis' own count "
            "of socket reads during one request (see the checks).",
        ]
        return a_mid

    def _interleaved(
        self, stats: Stats, contenders: list[Contender], concurrency: int | None = None
    ) -> list[Row]:
        """Each contender measured in rounds taken in turn (A, B, N, A, B, N, ...), so that the
        machine's drift (its speed moves by tens of percent over minutes) falls on all of them
        alike; each one's row is its median round by throughput."""
        rounds = self.options.rounds
        taken: list[list[Row]] = [[] for _ in contenders]
        for number in range(1, rounds + 1):
            for contender, seen in zip(contenders, taken, strict=True):
                name = contender.name if rounds == 1 else f"{contender.name} {number}/{rounds}"
                seen.append(
                    self.measure(
                        stats,
                        name,
                        contender.server,
                        contender.port,
                        contender.request,
                        contender.round_trips,
                        concurrency=concurrency,
                        duration=self.options.duration / rounds,
                    )
                )
        rows = []
        for contender, seen in zip(contenders, taken, strict=True):
            median = sorted(seen, key=lambda row: row.load.rps)[(len(seen) - 1) // 2]
            rates = ", ".join(f"{row.load.rps:,.0f}" for row in seen)
            note = f"median of {rounds} interleaved rounds ({rates} req/s)" if rounds > 1 else ""
            rows.append(dataclasses.replace(median, name=contender.name, note=median.note or note))
        return rows

    def _plain_clients(self, stats: Stats, counts: dict[str, float], a_mid: Row) -> None:
        """B on the read channel and on redis-py: what the client costs."""
        mid = self.graph.celebrity(self.options.middle_size)
        clients = self._group("plain-clients", "Plain Python (B): the read channel vs redis-py")
        lean = self.results.groups[0].row(f"B plain Python ({mid.label})")
        clients.rows.append(dataclasses.replace(lean, note="same run as in the first table"))
        assert self.plain_py is not None
        clients.rows.append(
            self.measure(
                stats,
                f"B plain Python on redis-py ({mid.label})",
                self.plain_py,
                self.port_plain_py,
                RequestSpec("/b", raw_body(mid.user_id, 20), bearer(self.viewer_token)),
                counts[f"B:{mid.user_id}:20"],
                "bench.plain --client redis-py: redis-py's asyncio client with hiredis, a pool of "
                "connections, EVALSHA alone then a pipeline",
            )
        )

    def _executors(self, stats: Stats, counts: dict[str, float], a_mid: Row) -> None:
        mid = self.graph.celebrity(self.options.middle_size)
        executor = self._group(
            "executor", "A with compiled plans (the default) vs A with the general executor only"
        )
        executor.rows.append(dataclasses.replace(a_mid, note="same run as in the first table"))
        assert self.server_g is not None
        executor.rows.append(
            self.measure(
                stats,
                f"A general executor ({mid.label})",
                self.server_g,
                self.port_g,
                self._page_request(mid.user_id, 20),
                counts[f"G:{mid.user_id}:20"],
                "FOLLOWGRAPH_COMPILED_QUERIES=0: every request through Strawberry and graphql-core",
            )
        )

    def _by_list_size(self, stats: Stats, counts: dict[str, float], a_mid: Row) -> None:
        sizes = self._group("sizes", "A by list size: fans page (first: 20) of celebrities with more fans")
        for celebrity in self.graph.celebrities:
            name = f"A fans of {celebrity.user_id}"
            sizes.rows.append(self._a_page(stats, counts, name, celebrity.user_id, 20, a_mid))

    def _by_page_size(self, stats: Stats, counts: dict[str, float], a_mid: Row) -> None:
        mid = self.graph.celebrity(self.options.middle_size)
        pages = self._group("pages", f"A by page size: fans of {mid.user_id}, first: 1 / 20 / 100")
        for size in self.options.page_sizes:
            pages.rows.append(self._a_page(stats, counts, f"A first: {size}", mid.user_id, size, a_mid))

    def _connections(self, stats: Stats, counts: dict[str, float]) -> None:
        """The side-by-side page at 16 and 64 connections: throughput and the tail (p99 / p50)."""
        mid = self.graph.celebrity(self.options.middle_size)
        group = self._group(
            "connections",
            f"Fans page of {mid.user_id} (first: 20) at {' and '.join(map(str, CONNECTIONS))} connections: "
            "A, plain Python (B) and the Node peer",
        )
        a_request = self._page_request(mid.user_id, 20)
        b_request = RequestSpec("/b", raw_body(mid.user_id, 20), bearer(self.viewer_token))
        assert self.plain is not None
        for connections in CONNECTIONS:
            contenders = [
                Contender("A", self._a, self.port_a, a_request, counts[f"A:{mid.user_id}:20"]),
                Contender("B", self.plain, self.port_plain, b_request, counts[f"B:{mid.user_id}:20"]),
            ]
            if self.node is not None:
                contenders.append(
                    Contender("N", self.node, self.port_node, a_request, counts.get(f"N:{mid.user_id}:20"))
                )
            at = [dataclasses.replace(c, name=f"{c.name} at {connections} connections") for c in contenders]
            group.rows += self._interleaved(stats, at, connections)
        group.notes.append(
            "The same servers and page as the first table, taking turns as there, at each number of "
            "connections; p99 / p50 is in the ratios."
        )

    def _workers(self, stats: Stats, counts: dict[str, float], url: str) -> None:
        """`followgraph serve --workers 2` against one worker, both unpinned, at 16 and 64 connections."""
        mid = self.graph.celebrity(self.options.middle_size)
        group = self._group(
            "workers",
            f"A with 2 worker processes vs 1 (fans page of {mid.user_id}, first: 20), neither pinned",
        )
        request = self._page_request(mid.user_id, 20)
        assert self.tmp is not None
        env = child_env(
            {"FOLLOWGRAPH_JWT_SECRET": self.secret, "FOLLOWGRAPH_DATA_DIR": str(self.tmp / "data")}
        )
        servers = []
        for workers in (1, 2):
            port = free_port()
            child = self.spawn_server(
                f"server A, {workers} worker(s), unpinned",
                port,
                url,
                env,
                self.tmp,
                workers=workers,
                pinned=False,
            )
            self.children.append(child)
            servers.append((workers, child, port))
        try:
            for _, child, port in servers:
                wait_http(child, port)
            trips = counts[f"A:{mid.user_id}:20"]
            for connections in CONNECTIONS:
                contenders = [
                    Contender(
                        f"A {workers} worker{'s' if workers > 1 else ''} at {connections} connections",
                        child,
                        port,
                        request,
                        trips,
                    )
                    for workers, child, port in servers
                ]
                group.rows += self._interleaved(stats, contenders, connections)
        finally:
            for _, child, _ in servers:
                child.stop()
        group.notes += [
            "The two servers take turns, in rounds as in the first table. "
            "Both run unpinned on this machine's 2 cores, and so do the load generator (pinned to "
            "one of them) and Redis: with 2 workers the processes cannot be given cores of their own, "
            "so the ratio shows what a second worker gains when the load generator shares the CPUs, "
            "not what it gains on a machine with cores to spare.",
            "Server CPU per request counts the master and its workers.",
        ]

    def spawn_server(
        self,
        name: str,
        port: int,
        url: str,
        env: dict[str, str],
        tmp: Path,
        *,
        workers: int = 1,
        pinned: bool = True,
    ) -> Child:
        args = [sys.executable, "-m", "followgraph.cli", "serve", "--port", str(port), "--redis-url", url]
        # As users run it: the access log at its default level (info), into the server's log file.
        return spawn(
            name,
            [*args, "--production", "--workers", str(workers)],
            env=env,
            log_path=tmp / f"server-{port}.log",
            cpus=self.layout.app if pinned else None,
        )

    def _spawn_plain(self, name: str, port: int, url: str, tmp: Path, *extra: str) -> Child:
        return spawn(
            f"{name} (bench.plain)",
            [sys.executable, "-m", "bench.plain", "--port", str(port), "--redis-url", url, *extra],
            env=child_env({"BENCH_JWT_SECRET": SECRET}),
            log_path=tmp / f"plain-{port}.log",
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

    @contextlib.contextmanager
    def redis_of_its_own(self, *pids: int) -> Iterator[None]:
        """While a section runs on Redis processes of its own (`pids`), their CPU is the harness's,
        not others'."""
        saved = self.redis_pids
        self.redis_pids = list(pids)
        try:
            yield
        finally:
            self.redis_pids = saved

    def _our_pids(self) -> list[int]:
        live = [child.pid for child in self.children if child.process.poll() is None]
        return [*live, *(d for pid in live for d in descendants(pid)), *self.redis_pids]

    # -- py-spy ------------------------------------------------------------------------------------

    def _profile_during(self, request: RequestSpec) -> list[str]:
        from bench.profile import profile_under_load

        assert self.server_a is not None
        spec = LoadSpec(
            "127.0.0.1", self.port_a, self.options.concurrency, 1.0, self.options.duration, request
        )
        self.say("  profiling server A with py-spy under the same load...")
        return profile_under_load(self.server_a.pid, self.loader, spec)
