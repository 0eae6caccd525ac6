"""The web front's suites: a real `followgraph serve` in demo mode, driven by Node.js programs.

They need Node.js (20.19+) and the build of web/ (`make web`); the browser suite also needs
Chromium. Without Node.js they are skipped, unless FOLLOWGRAPH_REQUIRE_WEB=1 (CI, and `make test`
when Node.js is present) makes that a failure.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from followgraph.cli.demo import DemoSpec, load_demo, load_demo_controls
from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer
from followgraph.store import FollowStore
from followgraph.transport.web import WEB_PROJECT, WebBuild
from tests.conftest import TEST_SECRET
from tests.server.processes import clean_env, free_port, wait_ready

# Big enough for pages of user 1's fans with strangers to the viewers the suites use (7, 8, 42), and
# for the demo's locked accounts, requests, blocks and mutes (users 700 to 722, cli/demo.py), which
# the app's demo picker offers.
DEMO_USERS = 800


def _required() -> bool:
    return os.environ.get("FOLLOWGRAPH_REQUIRE_WEB", "") == "1"


def _missing(what: str) -> None:
    if _required():
        pytest.fail(f"{what} (FOLLOWGRAPH_REQUIRE_WEB=1)")
    pytest.skip(what)


# Node.js from PyPI, which `make` installs into the virtualenv where the system's is missing or too old.
PYPI_NODE = Path(__file__).resolve().parents[2] / ".venv" / "node" / "bin" / "node"


@pytest.fixture(scope="session")
def node() -> str:
    path = str(PYPI_NODE) if PYPI_NODE.exists() else shutil.which("node")
    if path is None:
        _missing("Node.js is not installed")
    assert path is not None
    if not (WEB_PROJECT / "node_modules").is_dir() or WebBuild.find(WEB_PROJECT / "dist") is None:
        pytest.fail("web/ is not built: run `make web` (npm ci and the Vite build)")
    return path


@pytest.fixture(scope="session")
def chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        _missing("Chromium is not installed (apt-get install chromium)")
    assert path is not None
    return path


@dataclass(frozen=True)
class DemoServer:
    url: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


async def _load(url: str) -> None:
    client = connect(url)
    try:
        store = FollowStore(client)
        spec = DemoSpec(users=DEMO_USERS)
        await load_demo(store, spec, now_ms=int(time.time() * 1000))
        await load_demo_controls(store, spec)
    finally:
        await client.aclose()


@contextmanager
def _demo(directory: Path, **settings: str) -> Iterator[DemoServer]:
    """`followgraph serve` in demo mode on a Redis of its own holding a small demo graph, with
    `settings` (FOLLOWGRAPH_* variables) beside the demo's."""
    redis = RedisServer(directory / "redis")
    redis.start()
    try:
        asyncio.run(_load(redis.url))
        port = free_port()
        env = clean_env(
            FOLLOWGRAPH_REDIS_URL=redis.url,
            FOLLOWGRAPH_DATA_DIR=str(directory),
            FOLLOWGRAPH_PORT=str(port),
            FOLLOWGRAPH_DEMO="1",
            FOLLOWGRAPH_JWT_SECRET=TEST_SECRET,
            FOLLOWGRAPH_FOLLOW_RATE_LIMIT="off",
            FOLLOWGRAPH_LOG_LEVEL="warning",
            **settings,
        )
        log = directory / "serve.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "followgraph.cli", "serve"], stdout=out, stderr=out, env=env
            )
        served = DemoServer(f"http://127.0.0.1:{port}", log)
        try:
            wait_ready(process, served.url, served.output)
            yield served
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
    finally:
        redis.stop()


@pytest.fixture(scope="session")
def demo_server(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    """`followgraph serve --demo` on a Redis of its own holding a small demo graph."""
    with _demo(tmp_path_factory.mktemp("web")) as served:
        yield served


@pytest.fixture(scope="session")
def trusted_demo_server(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    """The same, running only the web app's operations: FOLLOWGRAPH_TRUSTED_DOCUMENTS=require, with
    the manifest the app's build wrote (the default)."""
    with _demo(tmp_path_factory.mktemp("web-trusted"), FOLLOWGRAPH_TRUSTED_DOCUMENTS="require") as served:
        yield served


def run_node(args: list[str], env: dict[str, str], timeout: float) -> None:
    """Run a Node.js program in web/; fail with its output unless it succeeds."""
    result = subprocess.run(
        args, cwd=WEB_PROJECT, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
