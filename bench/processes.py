"""Child processes of the harness: the servers under test and the load generator.

Every child gets SIGTERM if the harness dies (PR_SET_PDEATHSIG), is pinned to CPUs when asked,
and is stopped (SIGTERM, then SIGKILL) by the harness through its pid only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from followgraph.transport.http_protocol import GuardedHttpToolsProtocol, ReadLimits

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def child_setup(cpus: set[int] | None) -> Callable[[], None]:
    """Run in the child before exec: die with the harness; run on `cpus`."""

    def setup() -> None:
        if sys.platform == "linux":
            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
        if cpus is not None:
            os.sched_setaffinity(0, cpus)

    return setup


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def pin(pid: int, cpus: set[int] | None) -> None:
    """Pin `pid` and its threads to `cpus` (no-op for None)."""
    if cpus is None:
        return
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            os.sched_setaffinity(int(task), cpus)


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log_tail(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-3000:]


def spawn(
    name: str,
    args: Sequence[str],
    *,
    env: dict[str, str],
    log_path: Path,
    cpus: set[int] | None = None,
) -> Child:
    log = log_path.open("wb")
    try:
        process = subprocess.Popen(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
            preexec_fn=child_setup(cpus),
        )
    finally:
        log.close()
    return Child(name, process, log_path)


def wait_http(child: Child, port: int, path: str = "/healthz", timeout: float = 60.0) -> None:
    """Wait until http://127.0.0.1:port/path answers 200."""
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}{path}"
    while True:
        if child.process.poll() is not None:
            raise RuntimeError(f"{child.name} exited at start:\n{child.log_tail()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{child.name} did not answer {url} within {timeout:.0f}s:\n{child.log_tail()}"
            )
        time.sleep(0.1)


@contextlib.contextmanager
def running(child: Child) -> Iterator[Child]:
    try:
        yield child
    finally:
        child.stop()


def serve_quietly(app: Any, host: str, port: int) -> None:
    """Run a reference server as `followgraph serve` runs (uvloop, and httptools through
    FollowGraph's protocol, which sends a response's head and body in one write), without logs."""
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        loop="uvloop",
        http=GuardedHttpToolsProtocol.with_limits(ReadLimits()),
        timeout_graceful_shutdown=5,
    )
