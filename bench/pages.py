"""The single Redis' section of the run: the graph, the servers, the checks and the scenarios over
it, then memory and the cluster."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
import uvloop

from bench.cluster import run_cluster
from bench.graph import TypicalGraph, load_fan_graph, wait_until_indexed
from bench.memory import measure_memory, redis_binaries
from bench.processes import child_env, free_port, pin, spawn, wait_http
from bench.rawfollow import writes
from bench.verify import raw_loader_matches_store
from followgraph.server.redis_server import RedisServer, find_redis_server

if TYPE_CHECKING:
    from bench.suite import Bench


def run_pages_and_memory(bench: Bench) -> None:
    """Everything but the event log's and the subscriptions' sections: the single Redis'
    scenarios, memory, the cluster."""
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="followgraph-bench-")))
        server = RedisServer(
            directory=tmp / "redis",
            port=free_port(),
            binary=bench.options.redis_binary or find_redis_server(),
        )
        server.start()
        stack.callback(server.stop)
        assert server.process is not None
        pin(server.process.pid, bench.layout.redis)
        bench.redis_pids = [server.process.pid]
        bench.redis_port = server.port
        stats = redis.Redis(host="127.0.0.1", port=server.port, decode_responses=True)
        stack.callback(stats.close)
        info: dict[str, Any] = stats.info("server")
        memory_info: dict[str, Any] = stats.info("memory")
        bench.results.redis_version = str(info["redis_version"])
        bench.results.redis_allocator = str(memory_info.get("mem_allocator", "?"))

        bench.say("Checking the raw bulk loader against the store's own writes (small graph)...")
        bench.results.checks["raw bulk loader writes what the store writes"] = uvloop.run(
            raw_loader_matches_store("127.0.0.1", server.port)
        )
        labels = ", ".join(c.label for c in bench.graph.celebrities)
        bench.say(f"Loading the graph (celebrities with {labels} fans)...")
        bench.results.load = load_fan_graph(
            bench.graph, "127.0.0.1", server.port, progress=lambda step: bench.say(f"  {step}")
        )
        load = bench.results.load
        bench.say(
            f"  {load.edges:,} edges, {load.users:,} users in {load.seconds:.1f}s "
            f"({load.edges_per_second:,.0f} edges/s)"
        )

        bench.tmp = tmp
        bench.port_a, bench.port_b = free_port(), free_port()
        url = f"redis://127.0.0.1:{server.port}/0"
        env = child_env({"FOLLOWGRAPH_JWT_SECRET": bench.secret, "FOLLOWGRAPH_DATA_DIR": str(tmp / "data")})
        bench.server_a = bench.spawn_server("server A (followgraph serve)", bench.port_a, url, env, tmp)
        stack.callback(bench.server_a.stop)
        bench.port_g = free_port()
        general_env = {**env, "FOLLOWGRAPH_COMPILED_QUERIES": "0"}
        bench.server_g = bench.spawn_server("server A, general executor", bench.port_g, url, general_env, tmp)
        stack.callback(bench.server_g.stop)
        bench.bench_app = bench_app = spawn(
            "bench app (B/C/D)",
            [sys.executable, "-m", "bench.rawapp", "--port", str(bench.port_b), "--redis-url", url],
            env=child_env({"BENCH_JWT_SECRET": bench.secret}),
            log_path=tmp / "bench-app.log",
            cpus=bench.layout.app,
        )
        stack.callback(bench_app.stop)
        bench.port_plain, bench.port_plain_py = free_port(), free_port()
        bench.plain = plain = bench._spawn_plain("B plain Python", bench.port_plain, url, tmp)
        stack.callback(plain.stop)
        bench.plain_py = plain_py = bench._spawn_plain(
            "B plain Python on redis-py", bench.port_plain_py, url, tmp, "--client", "redis-py"
        )
        stack.callback(plain_py.stop)
        bench.children = [bench.server_a, bench.server_g, bench_app, plain, plain_py]
        bench._start_node_peer(url, tmp, stack)
        wait_http(bench.server_a, bench.port_a)
        wait_http(bench.server_g, bench.port_g)
        wait_http(bench_app, bench.port_b)
        wait_http(plain, bench.port_plain)
        wait_http(plain_py, bench.port_plain_py)
        if bench.node is not None:
            wait_http(bench.node, bench.port_node)
        waited = wait_until_indexed("127.0.0.1", server.port)
        bench.say(f"Server A built its search index ({waited:.1f} s waited).")

        bench.say("Round trips and answers, in-process...")
        counts = uvloop.run(bench._in_process(tmp / "data-inproc"))
        mid = bench.graph.celebrity(bench.options.middle_size).user_id
        bench.results.checks["C (seed) under concurrency"] = uvloop.run(bench._race_c(mid))
        bench._check_over_http(stats, mid, counts)
        single = bench._scenarios(stats, counts, url)
        if bench.options.runs("writes"):
            writes(bench, stats, counts, url)
        for child in bench.children:
            child.stop()
    binaries = redis_binaries(bench.options.redis_binary)
    if bench.options.runs("memory"):
        bench.results.memory += measure_memory(
            TypicalGraph(bench.options.memory_users),
            binaries,
            bench.layout.redis,
            bench.say,
            bench.results.checks,
        )
    if bench.options.cluster:
        run_cluster(bench, single, binaries)
