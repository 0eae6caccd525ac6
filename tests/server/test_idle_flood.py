"""20,000 idle connections against `followgraph serve --production` with 20,000 open files at most.

Each connection sends `GET / HTTP/1.1\\r\\n` and nothing more. Before the header deadline, such
connections held every file descriptor of the process for ever and /healthz failed for everyone;
now each is closed within the header timeout (5 s by default), so /healthz answers again within
that timeout plus a second after the flood.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from tests.conftest import TEST_SECRET
from tests.server.processes import serve

log = logging.getLogger(__name__)

CONNECTIONS = 20_000
SERVER_OPEN_FILES = 20_000
HEADER_TIMEOUT = Settings().header_timeout  # the default


def limit_open_files() -> None:
    """In the server process: at most SERVER_OPEN_FILES open files (or the hard limit, if lower)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    most = SERVER_OPEN_FILES if hard == resource.RLIM_INFINITY else min(SERVER_OPEN_FILES, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))


def client_processes() -> int:
    """How many processes hold the connections: each stays well inside its open-file limit."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    each = 65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536)
    return max(2, math.ceil(CONNECTIONS / (each - 1000)))


async def healthz_status(port: int) -> int:
    try:
        async with asyncio.timeout(1.0):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.1\r\nhost: t\r\n\r\n")
            line = await reader.readline()
            writer.close()
    except (OSError, TimeoutError):
        return 0
    return int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_healthz_answers_again_within_the_header_timeout_after_20000_idle_connections(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    env = {
        "FOLLOWGRAPH_REDIS_URL": redis_server.url,
        "FOLLOWGRAPH_JWT_SECRET": TEST_SECRET,
        "FOLLOWGRAPH_LOG_LEVEL": "error",
    }
    with serve(tmp_path, "--production", env=env, preexec_fn=limit_open_files) as server:
        assert await healthz_status(server.port) == 200
        command = [sys.executable, "-m", "tests.server.idle_clients", str(server.port)]
        processes = client_processes()
        started = time.monotonic()
        clients = [
            subprocess.Popen(
                [*command, str(CONNECTIONS // processes + (i < CONNECTIONS % processes))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=Path(__file__).parents[2],
            )
            for i in range(processes)
        ]
        try:
            reports = []
            for client in clients:
                assert client.stdout is not None
                line = await asyncio.wait_for(asyncio.to_thread(client.stdout.readline), 180)
                reports.append(line.decode().split())
            flooded = time.monotonic()
            server_files = open_files(server.pid)
            while (status := await healthz_status(server.port)) != 200 and (
                time.monotonic() - flooded < HEADER_TIMEOUT + 10
            ):
                await asyncio.sleep(0.05)
            recovered = time.monotonic() - flooded
        finally:
            for client in clients:
                client.communicate(timeout=60)
        opened = sum(int(report[1]) for report in reports)
        refused = sum(int(report[3]) for report in reports)
        log.warning(
            "%d idle connections opened in %.1f s (%d refused); the server had %d files open at the "
            "end of the flood; /healthz answered %.2f s after it",
            opened,
            flooded - started,
            refused,
            server_files,
            recovered,
        )
        assert opened + refused == CONNECTIONS
        assert status == 200, server.log()[-2000:]
        assert recovered <= HEADER_TIMEOUT + 1, recovered
        assert server.process.poll() is None
