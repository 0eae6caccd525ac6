"""Real `followgraph serve` processes for the tests: ports, a clean environment, readiness."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable

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
