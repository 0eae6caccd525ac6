"""Redis memory per edge: a typical graph loaded into a fresh Redis of each version at hand."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis

from bench.graph import TypicalGraph, load_typical_graph
from bench.model import MemoryRow
from bench.processes import free_port, pin
from bench.redisstats import used_memory
from bench.suggest import measure_suggestions
from followgraph.server.redis_server import RedisServer, find_redis_server


def redis_binaries(chosen: str | None) -> list[str]:
    """The benchmark's redis-server, and another one on PATH (another version) if there is one."""
    binaries = [chosen or find_redis_server()]
    on_path = shutil.which("redis-server")
    if on_path and os.path.realpath(on_path) != os.path.realpath(binaries[0]):
        binaries.append(on_path)
    return binaries


def measure_memory(
    graph: TypicalGraph,
    binaries: list[str],
    cpus: set[int] | None,
    say: Callable[[str], None],
    checks: dict[str, Any] | None = None,
) -> list[MemoryRow]:
    """One row per redis-server binary: the growth of used_memory while `graph` loads; on the
    first, suggestions are timed on the loaded graph (into `checks`)."""
    rows: list[MemoryRow] = []
    for binary in binaries:
        say(f"Memory: {graph.users:,} users following {graph.per_user} each, on {binary}...")
        with fresh_redis(binary, cpus) as port:
            client = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
            try:
                info: dict[str, Any] = client.info("server")
                mem: dict[str, Any] = client.info("memory")
                started = time.perf_counter()
                edges, pairs, growth = load_typical_graph(
                    graph, "127.0.0.1", port, used_memory=functools.partial(used_memory, client)
                )
                seconds = time.perf_counter() - started
                if checks is not None and not rows:
                    say("  suggestions on this graph...")
                    name = f"suggestions on {graph.users * graph.per_user:,} edges (first: 10)"
                    checks[name] = measure_suggestions(graph, port)
            finally:
                client.close()
        label = f"{info['redis_version']} ({mem.get('mem_allocator', '?')})"
        row = MemoryRow.of_load(label, graph.users, edges, pairs, growth, seconds)
        rows.append(row)
        say(
            f"  {edges:,} edges, {pairs:,} mutual pairs: "
            f"{row.per_edge(row.sets):.1f} B/edge for all sets, "
            f"{row.per_edge(row.following):.1f} following + {row.per_edge(row.fans):.1f} fans"
        )
    return rows


@contextlib.contextmanager
def fresh_redis(binary: str, cpus: set[int] | None) -> Iterator[int]:
    """A new empty redis-server of `binary`, pinned to `cpus`; yields its port."""
    with tempfile.TemporaryDirectory(prefix="followgraph-bench-mem-") as tmp:
        server = RedisServer(directory=Path(tmp), port=free_port(), binary=binary)
        server.start()
        try:
            assert server.process is not None
            pin(server.process.pid, cpus)
            yield server.port
        finally:
            server.stop()
