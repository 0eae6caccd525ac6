"""Real `followgraph serve` processes for the tests: ports, a clean environment, readiness."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_ports(n: int) -> list[int]:
    """`n` distinct TCP ports free on 127.0.0.1 right now (held together, so they differ)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without inherited FOLLOWGRAPH_* variables, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLLOWGRAPH_")}
    env.update(settings)
    return env


def wait_ready(
    process: subprocess.Popen[bytes], url: str, output: Callable[[], object], timeout: float = 30.0
) -> None:
    """Wait until `url`/readyz answers 200; fail with the process's `output` if it exits or hangs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, output()
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"the server at {url} did not become ready: {output()}")


@dataclass
class ServeProcess:
    """A running `followgraph serve`: its process, base URL and log file."""

    process: subprocess.Popen[bytes]
    url: str
    port: int
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def serve(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
    ready_timeout: float = 30.0,
) -> Iterator[ServeProcess]:
    """`followgraph serve --port P --data-dir tmp_path/data ARGS` until the block ends (SIGINT)."""
    port = free_port()
    log_path = tmp_path / f"serve-{port}.log"
    command = [sys.executable, "-m", "followgraph.cli", "serve", "--port", str(port)]
    command += ["--data-dir", str(tmp_path / "data"), *args]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=clean_env(**(env or {})), preexec_fn=preexec_fn
        )
    served = ServeProcess(process, f"http://127.0.0.1:{port}", port, log_path)
    try:
        wait_ready(process, served.url, served.log, timeout=ready_timeout)
        yield served
    finally:
        interrupt(process, timeout=20)


def interrupt(process: subprocess.Popen[bytes], *, timeout: float) -> None:
    """Stop `process` as Ctrl-C would, killing it if it has not exited within `timeout` seconds."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


# The embedded Redis (or Valkey) servers a test started.
SERVER_NAMES = (b"redis-server", b"valkey-server")


def redis_pids(directory: Path) -> list[int]:
    """Pids of redis-server or valkey-server processes whose command line names `directory`."""
    needles = {str(directory).encode(), str(directory.resolve()).encode()}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if any(name in command for name in SERVER_NAMES) and any(n in command for n in needles):
            pids.append(int(entry.name))
    return pids
