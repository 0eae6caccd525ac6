"""Fixtures of the command-line suites (tests/cli/clis.py has the rest)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from rich.console import Console

from followgraph.cli import account_states, accounts, admin, changes, edge_command, files, serve, support
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer
from tests.cli.clis import Target


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No FOLLOWGRAPH_* setting of the machine leaks in (the redis-server binary choice may stay)."""
    for name in list(os.environ):
        if name.startswith("FOLLOWGRAPH_") and name != "FOLLOWGRAPH_REDIS_SERVER":
            monkeypatch.delenv(name)


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """What the CLI prints to its rich console (stderr), wide enough that nothing wraps."""
    buffer = io.StringIO()
    wide = Console(file=buffer, width=1000, color_system=None)
    # The commands and their shared helpers print to one console.
    for module in (accounts, account_states, admin, changes, edge_command, files, serve, support):
        monkeypatch.setattr(module, "console", wide)
    return buffer


@pytest.fixture(params=["redis", "cluster"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    db: redis.Redis | redis.RedisCluster
    if request.param == "cluster":
        cluster: LocalCluster = request.getfixturevalue("redis_cluster")
        host, port = cluster.startup_nodes[0]
        db = redis.RedisCluster(host=host, port=port, decode_responses=True)
        url = cluster.url
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        db = redis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
        url = server.url
    db.flushall()
    yield Target(url, db, tmp_path / "data")
    db.close()
