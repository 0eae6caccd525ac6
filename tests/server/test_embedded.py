"""One owner per data directory (#36): the `serve` that started the embedded Redis. A second `serve`
refuses to start; a Redis that no process owns is shut down and replaced; the workers of
`serve --workers` fail /healthz once their parent is gone and its Redis with it; the short
commands still use the Redis that a `serve` runs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from followgraph.server.embedded import embedded_redis
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from tests.server.processes import clean_env, free_port, redis_pids, serve


def followgraph(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`followgraph ARGS` run to its end (killed, and the test failed, if it runs on)."""
    command = [sys.executable, "-m", "followgraph.cli", *args]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), text=True
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"`followgraph {' '.join(args)}` was still running after {timeout}s: {out}{err}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def refusal(data_dir: Path, pid: int) -> str:
    return (
        f"Another followgraph process (pid {pid}) runs the embedded Redis of the data directory "
        f"{data_dir.resolve()}: stop it first, or serve with another --data-dir or with --redis-url."
    )


def user(url: str, user_id: str) -> object:
    query = {"query": f'{{ user(userId: "{user_id}") {{ userId }} }}'}
    return httpx.post(f"{url}/graphql", json=query, timeout=10).json()


def test_a_second_serve_on_the_data_directory_refuses_to_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve(tmp_path) as first:
        [owned] = redis_pids(data_dir)

        second = followgraph("serve", "--port", str(free_port()), "--data-dir", str(data_dir), timeout=30)

        assert second.returncode == 1
        assert second.stderr.strip() == refusal(data_dir, first.pid)
        assert "Traceback" not in second.stdout + second.stderr
        # The first one goes on, on the Redis it started.
        assert redis_pids(data_dir) == [owned]
        assert httpx.get(f"{first.url}/healthz").status_code == 200
        assert user(first.url, "nobody") == {"data": {"user": None}}
    # Its lock went with it: the data directory serves again.
    with serve(tmp_path) as again:
        assert httpx.get(f"{again.url}/healthz").status_code == 200


def test_serve_refuses_a_data_directory_whose_redis_a_command_runs(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # This process stands for a command (import, export...) that started the embedded Redis.
    with embedded_redis(Settings(data_dir=data_dir)):
        refused = followgraph("serve", "--port", str(free_port()), "--data-dir", str(data_dir), timeout=30)
    assert refused.returncode == 1
    assert refused.stderr.strip() == refusal(data_dir, os.getpid())


def test_commands_beside_a_serve_use_its_redis(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve(tmp_path) as served:
        [owned] = redis_pids(data_dir)
        imported = tmp_path / "users.csv"
        imported.write_text("userId,name\nada,Ada\n")
        done = followgraph("import", str(imported), "--kind", "users", "--data-dir", str(data_dir))
        assert done.returncode == 0, done.stderr
        exported = followgraph("export", "-", "--kind", "users", "--data-dir", str(data_dir))
        assert exported.returncode == 0, exported.stderr
        assert "ada,Ada," in exported.stdout
        assert redis_pids(data_dir) == [owned]
        assert user(served.url, "ada") == {"data": {"user": {"userId": "ada"}}}


def test_serve_shuts_down_an_embedded_redis_no_process_owns_and_starts_its_own(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # A Redis left running on the data directory by an owner killed outright (where no parent-death
    # signal stops it, as on macOS), here started by the test.
    orphan = RedisServer(data_dir / "redis", appendonly=True)
    orphan.start()
    try:
        assert orphan.process is not None
        client = redis.Redis(unix_socket_path=str(orphan.socket_path))
        client.set("kept", "through the takeover")
        client.close()

        with serve(tmp_path) as served:
            assert orphan.process.wait(timeout=10) == 0  # shut down, not killed
            [own] = redis_pids(data_dir)
            assert own != orphan.process.pid
            client = redis.Redis(unix_socket_path=str(orphan.socket_path))
            assert client.get("kept") == b"through the takeover"  # its AOF was flushed and loaded
            client.close()
            assert "no process owned" in served.log()
    finally:
        orphan.kill()


def _children(pid: int) -> list[int]:
    """Pids of the processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _command(pid: int) -> bytes:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


@pytest.fixture
def workers_left() -> Iterator[list[int]]:
    """Pids of worker processes a test leaves without their parent: killed at the end."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if b"multiprocessing" in _command(pid):  # still that process, not another one given its pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(sys.platform != "linux", reason="the embedded Redis dies with its owner on Linux")
def test_workers_fail_healthz_when_the_process_that_ran_their_redis_is_gone(
    tmp_path: Path, workers_left: list[int]
) -> None:
    data_dir = tmp_path / "data"
    with serve(tmp_path, "--workers", "2") as served:
        assert user(served.url, "nobody") == {"data": {"user": None}}
        assert httpx.get(f"{served.url}/healthz").json() == {"status": "ok"}
        [owned] = redis_pids(data_dir)
        workers_left.extend(p for p in _children(served.pid) if p != owned)

        served.process.kill()  # the owner and (by the parent-death signal) its Redis
        served.process.wait()
        deadline = time.monotonic() + 10
        while redis_pids(data_dir) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert redis_pids(data_dir) == []

        # The workers still hold the port: a liveness probe must see that they are dead.
        health = httpx.get(f"{served.url}/healthz", timeout=10)
        assert health.status_code == 503, health.text
        assert health.json() == {
            "status": "failing",
            "problem": f"the embedded Redis of the data directory {data_dir.resolve()} is gone, and "
            f"the process that ran it (pid {served.pid}) has exited: nothing will start it again",
        }
