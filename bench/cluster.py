"""The cluster part of the run: the same pages and the same typical graph on a 3-master Redis Cluster.

Memory per edge and the fans page are measured on a real cluster (server.redis_cluster, the same
redis-server binary) beside the single-Redis figures of the same run, for the README's sizing.
The cluster's nodes share the single Redis' CPU, so the comparison shows the cost of cluster mode
(per-slot script calls, one connection per node), not the gain of more machines.
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench.graph import FanGraph, TypicalGraph, load_fan_graph, load_typical_graph
from bench.loadgen import RequestSpec
from bench.model import Group, MemoryRow, Row
from bench.processes import child_env, free_port, pin, wait_http
from bench.queries import bearer, fans_query_body
from bench.redisstats import used_memory
from followgraph.server.redis_cluster import LocalCluster

if TYPE_CHECKING:
    from bench.suite import Bench

MASTERS = 3


def run_cluster(bench: Bench, single: Row | None, binaries: list[str]) -> None:
    """Measure memory (with each of `binaries`) and the fans page (with the first) on fresh clusters;
    `single` is the same page on one Redis."""
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
    opts = bench.options
    sizes = tuple(n for n in opts.sizes if n <= opts.middle_size)
    graph = FanGraph(sizes=sizes, writers=bench.graph.writers)
    host, port = cluster.startup_nodes[0]
    bench.say(f"Loading the fans graph ({', '.join(c.label for c in graph.celebrities)}) into the cluster...")
    load = load_fan_graph(graph, host, port, cluster=True)
    bench.say(f"  {load.edges:,} edges in {load.seconds:.1f}s ({load.edges_per_second:,.0f} edges/s)")

    server_port = free_port()
    env = child_env({"FOLLOWGRAPH_JWT_SECRET": bench.secret, "FOLLOWGRAPH_DATA_DIR": str(tmp / "data")})
    server = bench.spawn_server("server A on the cluster", server_port, cluster.url, env, tmp)
    group = Group("cluster", f"A on a {MASTERS}-master Redis Cluster vs one Redis: fans page (first: 20)")
    bench.results.groups.append(group)
    try:
        bench.children.append(server)
        wait_http(server, server_port)
        auth = bearer(bench.viewer_token)
        if single is not None:
            size = single.name.split("(")[-1].rstrip(")")
            group.rows.append(
                dataclasses.replace(
                    single, name=f"A one Redis ({size})", note="same run as in the first table"
                )
            )
        for celebrity in reversed(graph.celebrities):
            request = RequestSpec("/graphql", fans_query_body(celebrity.user_id, 20), auth)
            group.rows.append(
                bench.measure(nodes, f"A cluster ({celebrity.label})", server, server_port, request, None)
            )
        group.notes.append(
            f"The {MASTERS} nodes run on the single Redis' CPU. Redis commands per request are summed "
            "over the nodes: a page's 20 users sit in up to 20 slots, so their profiles and counts are "
            "one script call per slot instead of one in all."
        )
    finally:
        server.stop()
        bench.children.remove(server)
