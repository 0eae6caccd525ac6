"""The cluster part of the run: the same pages and the same typical graph on a 3-master Redis Cluster.

Memory per edge and the fans page are measured on a real cluster (server.redis_cluster, the same
redis-server binary) beside the single-Redis figures of the same run, for the sizing in
docs/scaling-out.md. The cluster's nodes share the single Redis' CPU, so the comparison shows the
cost of cluster mode (per-slot script calls, one connection per node), not the gain of more machines.
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench.graph import FanGraph, TypicalGraph, load_fan_graph, load_typical_graph, wait_until_indexed
from bench.layers import CONCURRENCY
from bench.loadgen import RequestSpec
from bench.model import Group, MemoryRow, Row
from bench.page_instructions import PAGES, PageSpec, counts
from bench.processes import child_env, free_port, pin, wait_http
from bench.queries import bearer, fans_query_body
from bench.redisstats import Stats, used_memory
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer

if TYPE_CHECKING:
    from bench.processes import Child
    from bench.suite import Bench

MASTERS = 3
# The rows take turns this many times, in rounds of a few seconds without a warm-up of their own
# (each server is warmed once before the first): the machine's other work comes and goes within
# seconds, so short rounds taken in turn put each round of one row beside a round of the others
# taken moments apart, and the spread of the rounds' ratios says how much it moved them.
ROUNDS = 15


def run_cluster(bench: Bench, single: Row | None, binaries: list[str], *, memory: bool = True) -> None:
    """Measure memory (with each of `binaries`, unless not `memory`) and the fans page (with the
    first) on fresh clusters; `single` is the same page on one Redis, earlier in the run."""
    for i, binary in enumerate(binaries):
        with tempfile.TemporaryDirectory(prefix="followgraph-bench-cluster-") as tmp:
            cluster = LocalCluster(directory=Path(tmp) / "cluster", masters=MASTERS, binary=binary)
            cluster.start()
            try:
                for node in cluster.nodes:
                    assert node.process is not None
                    pin(node.process.pid, bench.layout.redis)
                nodes = [redis.Redis(host=h, port=p, decode_responses=True) for h, p in cluster.startup_nodes]
                try:
                    if memory:
                        _memory(bench, cluster, nodes)
                    if i == 0:
                        cluster.flushall()
                        _pages(bench, cluster, nodes, Path(tmp), single)
                finally:
                    for node_client in nodes:
                        node_client.close()
            finally:
                cluster.stop()


def _memory(bench: Bench, cluster: LocalCluster, nodes: list[redis.Redis]) -> None:
    graph = TypicalGraph(bench.options.memory_users)
    host, port = cluster.startup_nodes[0]
    info: dict[str, Any] = nodes[0].info("server")
    mem: dict[str, Any] = nodes[0].info("memory")
    bench.say(
        f"Memory on a {MASTERS}-master cluster: {graph.users:,} users following {graph.per_user} each..."
    )
    started = time.perf_counter()
    edges, pairs, growth = load_typical_graph(
        graph, host, port, used_memory=functools.partial(used_memory, nodes), cluster=True
    )
    label = f"{info['redis_version']} ({mem.get('mem_allocator', '?')}), cluster of {MASTERS} masters"
    row = MemoryRow.of_load(label, graph.users, edges, pairs, growth, time.perf_counter() - started)
    bench.results.memory.append(row)
    bench.say(f"  {row.per_edge(row.sets):.1f} B/edge for all sets, summed over the {MASTERS} nodes")


def _pages(
    bench: Bench, cluster: LocalCluster, nodes: list[redis.Redis], tmp: Path, single: Row | None
) -> None:
    """The fans page on the cluster, beside the same page on a single Redis holding the same graph,
    the rows taking turns with the same load (`_measure_pages`), then the cluster's other list
    sizes. `single` (the first table's row) is kept as a note."""
    opts = bench.options
    sizes = tuple(n for n in opts.sizes if n <= opts.middle_size)
    graph = FanGraph(sizes=sizes, writers=bench.graph.writers)
    host, port = cluster.startup_nodes[0]
    bench.say(f"Loading the fans graph ({', '.join(c.label for c in graph.celebrities)}) into the cluster...")
    load = load_fan_graph(graph, host, port, cluster=True)
    bench.say(f"  {load.edges:,} edges in {load.seconds:.1f}s ({load.edges_per_second:,.0f} edges/s)")
    one = RedisServer(directory=tmp / "one-redis", port=free_port(), binary=cluster.binary)
    one.start()
    try:
        assert one.process is not None
        pin(one.process.pid, bench.layout.redis)
        bench.say("Loading the same graph into one Redis, for the side-by-side rows...")
        load_fan_graph(graph, "127.0.0.1", one.port)
        one_stats = redis.Redis(host="127.0.0.1", port=one.port, decode_responses=True)
        pids = [one.process.pid, *(n.process.pid for n in cluster.nodes if n.process is not None)]
        try:
            with bench.redis_of_its_own(*pids):
                _measure_pages(bench, graph, cluster, nodes, one, one_stats, tmp, single)
        finally:
            one_stats.close()
    finally:
        one.stop()


# The rows that take turns: A on one Redis and A on the cluster, both keeping profiles (the
# default), then A on one Redis reading them with a script call as it did before it kept them
# (FOLLOWGRAPH_PROFILE_CACHE=0), A on the cluster keeping none, and A on the cluster through
# redis-py's cluster pipeline (FOLLOWGRAPH_READ_CHANNEL=0). Each: its label, whether it runs on the
# cluster, and the settings it adds.
SERVERS: tuple[tuple[str, bool, dict[str, str]], ...] = (
    ("one Redis", False, {}),
    ("cluster", True, {}),
    ("one Redis, profiles not kept", False, {"FOLLOWGRAPH_PROFILE_CACHE": "0"}),
    ("cluster, profiles not kept", True, {"FOLLOWGRAPH_PROFILE_CACHE": "0"}),
    ("cluster, redis-py reads", True, {"FOLLOWGRAPH_READ_CHANNEL": "0"}),
)


def _measure_pages(
    bench: Bench,
    graph: FanGraph,
    cluster: LocalCluster,
    nodes: list[redis.Redis],
    one: RedisServer,
    one_stats: redis.Redis,
    tmp: Path,
    single: Row | None,
) -> None:
    env = child_env({"FOLLOWGRAPH_JWT_SECRET": bench.secret, "FOLLOWGRAPH_DATA_DIR": str(tmp / "data")})
    group = Group("cluster", f"A on a {MASTERS}-master Redis Cluster vs one Redis: fans page (first: 20)")
    bench.results.groups.append(group)
    auth = bearer(bench.viewer_token)
    mid = graph.celebrity(bench.options.middle_size)
    urls = {False: f"redis://127.0.0.1:{one.port}/0", True: cluster.url}
    started: list[tuple[str, Child, int, Stats]] = []
    try:
        for label, on_cluster, settings in SERVERS:
            url = urls[on_cluster]
            stats: Stats = nodes if on_cluster else one_stats
            server_port = free_port()
            server = bench.spawn_server(f"server A ({label})", server_port, url, {**env, **settings}, tmp)
            bench.children.append(server)
            started.append((label, server, server_port, stats))
            wait_http(server, server_port)
        host, port = cluster.startup_nodes[0]
        waited = wait_until_indexed("127.0.0.1", one.port) + wait_until_indexed(host, port, cluster=True)
        bench.say(f"  the servers built their search indexes ({waited:.1f} s waited)")
        request = RequestSpec("/graphql", fans_query_body(mid.user_id, 20), auth)
        rounds: list[list[Row]] = [[] for _ in started]
        duration = float(max(1, round(bench.options.duration / 5)))
        for label, server, server_port, stats in started:
            bench.measure(stats, f"A {label} ({mid.label}) warm-up", server, server_port, request, None)
        for number in range(1, ROUNDS + 1):
            # One Redis and the cluster back to back, in turn first (the machine's drift over the
            # pair falls on each alike), then the others.
            order = list(range(len(started)))
            if number % 2 == 0:
                order[:2] = [1, 0]
            for index in order:
                label, server, server_port, stats = started[index]
                name = f"A {label} ({mid.label}) {number}/{ROUNDS}"
                row = bench.measure(
                    stats, name, server, server_port, request, None, duration=duration, warmup=0.0
                )
                rounds[index].append(row)
        bench.say("  the same page in process under callgrind, on one Redis and on the cluster...")
        # The rows with the default settings: A on one Redis and A on the cluster.
        counted = [(label, on_cluster) for label, on_cluster, settings in SERVERS if not settings]
        specs = [
            PageSpec(urls[on_cluster], bench.secret, bench.viewer_token, mid.user_id)
            for _, on_cluster in counted
        ]
        instructions = dict(zip((label for label, _ in counted), counts(specs), strict=False))
        for (label, _, _, _), measured in zip(started, rounds, strict=True):
            row = _median(measured)
            name = f"A {label} ({mid.label})"
            group.rows.append(dataclasses.replace(row, name=name, instructions=instructions.get(label)))
            group.rounds[name] = measured
        _, server, server_port, stats = started[1]
        for celebrity in reversed(graph.celebrities):
            if celebrity is mid:
                continue
            request = RequestSpec("/graphql", fans_query_body(celebrity.user_id, 20), auth)
            group.rows.append(
                bench.measure(stats, f"A cluster ({celebrity.label})", server, server_port, request, None)
            )
        group.notes.append(
            f"The first five rows take turns, {ROUNDS} rounds of {duration:g} s with the same load, on the "
            "same graph loaded into one Redis and into the cluster, the first two back to back and in "
            "turn first; each row is its median round by req/s (every round's in its note; the ratios "
            "give each round's ratio to one Redis, and their spread). The "
            f"{MASTERS} nodes run on the single Redis' CPU. Redis commands per request are summed over "
            "the nodes. A keeps the profiles it read on a second connection to Redis (per node on a "
            "cluster) until Redis says they changed (store/redis/tracking.py): a kept profile costs no "
            "command, but each connection whose kept profiles a page uses gets a PING, so that every "
            "invalidation sent before it has arrived. On the cluster, A sends each command to its "
            "slot's node on one auto-pipelined connection per node (store/redis/cluster_channel.py). "
            "'Profiles not kept' is FOLLOWGRAPH_PROFILE_CACHE=0: on one Redis the page's users' "
            "profiles are then one script call that runs an HMGET each (the read path before profiles "
            "were kept there), on the cluster an HMGET each on its own slot; 'redis-py reads' is "
            "FOLLOWGRAPH_READ_CHANNEL=0, redis-py's cluster pipeline."
        )
        if instructions:
            group.notes.append(
                "Instructions a page: the whole /graphql app answering the same page in process, "
                f"{CONCURRENCY} at a time, counted under callgrind over {PAGES} pages "
                "(bench/page_instructions.py): the same to within about half a percent in every run, where "
                "the rounds' throughput moves by a tenth; it leaves out the kernel's side and how the "
                "nodes' replies fall into the turns of the event loop."
            )
        if single is not None:
            group.notes.append(
                f"The first table's A row (another graph, earlier in the run): {single.load.rps:,.0f} req/s."
            )
    finally:
        for _, server, _, _ in started:
            server.stop()
            bench.children.remove(server)


def _median(rows: list[Row]) -> Row:
    """The median of a scenario's rounds by throughput, noting every round's."""
    median = sorted(rows, key=lambda row: row.load.rps)[len(rows) // 2]
    note = f"median of {len(rows)} rounds: " + " / ".join(f"{row.load.rps:,.0f}" for row in rows) + " req/s"
    return dataclasses.replace(median, note=f"{median.note}; {note}" if median.note else note)
