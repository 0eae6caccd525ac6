"""`followgraph serve --demo-ha` as a user runs it (cli/demo_ha.py): a real server process on a
primary, a replica and three Sentinels of its own; the primary killed with the command it prints;
the failover in the log, the old primary back as a replica, writes that wait for a replica going
on; every Redis gone when the server stops."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from followgraph.cli.demo_ha import ha_ports, pid_file
from followgraph.server.redis_cluster import port_is_free
from followgraph.server.settings import Settings
from followgraph.transport.auth import mint_token
from tests.cli.clis import invoke
from tests.server.processes import redis_pids, serve

FOLLOW = 'mutation { follow(input: {userId: "b"}) { changed } }'
REGISTER = 'mutation { upsertUser(input: {userId: "%s", name: "%s"}) { user { userId } } }'


def _free_primary_port() -> int:
    while True:
        port = random.SystemRandom().randrange(30000, 45000)
        if all(port_is_free(p) for p in ha_ports(port)):
            return port


def _until(what: str, ready: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(0.2)


def test_serve_demo_ha_fails_over_on_its_own_sentinels(tmp_path: Path) -> None:
    primary = _free_primary_port()
    data = tmp_path / "data"
    env = {"FOLLOWGRAPH_WRITE_REPLICAS": "1", "FOLLOWGRAPH_DATABASE_URL": "off"}
    args = ("--demo-ha", "--no-demo", "--demo-ha-port", str(primary))
    with serve(tmp_path, *args, env=env, ready_timeout=60) as served:
        assert f"kill -9 $(cat {pid_file(data, primary)})" in served.log()
        auth = Settings(data_dir=data).auth_config()

        def post(query: str, user: str = "a", *, admin: bool = False) -> httpx.Response:
            headers = {"authorization": f"Bearer {mint_token(auth, user, admin=admin)}"}
            return httpx.post(f"{served.url}/graphql", json={"query": query}, headers=headers, timeout=10)

        for user in ("a", "b"):
            assert "errors" not in post(REGISTER % (user, user.upper()), admin=True).json()
        assert post(FOLLOW).json() == {"data": {"follow": {"changed": True}}}
        os.kill(int(pid_file(data, primary).read_text()), signal.SIGKILL)
        _until("the failover", lambda: f"promoted 127.0.0.1:{primary + 1} to primary" in served.log())
        _until("the old primary back", lambda: f"127.0.0.1:{primary} is back, as a replica" in served.log())
        _until("a write confirmed again", lambda: "errors" not in post(FOLLOW).json())
    assert redis_pids(data) == [], "a Redis of --demo-ha outlived the server"


def test_demo_ha_runs_its_own_redis() -> None:
    result = invoke("serve", "--demo-ha", "--redis-url", "redis://127.0.0.1:1")
    assert result.exit_code == 2
    assert "--demo-ha starts its own Redis" in result.output
