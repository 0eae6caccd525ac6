"""A real Apollo Federation 2 gateway in front of FollowGraph: the Node.js project of
tests/interop/federation/ (@apollo/gateway, and a posts subgraph written with Apollo Server and
@apollo/subgraph), its packages installed with `npm ci` from the committed lock file, its
programs started as processes beside a FollowGraph the caller serves."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent / "interop" / "federation"
# The subgraph a users service that owns the profile would publish (for composition checks).
USERS_SDL = PROJECT / "users.graphql"
READY = b"ready "
# Seconds a program has to exit once asked to (SIGTERM), before it is killed.
STOP_SECONDS = 5
# The gateways' packages: installed, the project is.
GATEWAY_PACKAGES = ("@apollo/gateway", "@graphql-hive/gateway")


def node() -> str | None:
    """The node binary, with the project's packages installed; None without Node.js and npm (the
    Makefile puts the right Node.js first on PATH)."""
    found, npm = shutil.which("node"), shutil.which("npm")
    if found is None or npm is None:
        return None
    if not all(
        (PROJECT / "node_modules" / name).exists() for name in ("@apollo/gateway", "@graphql-hive/gateway")
    ):
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PROJECT, check=True, timeout=600)
    return found


@contextlib.asynccontextmanager
async def started(node: str, log: Path, script: str, *args: str, timeout: float = 60) -> AsyncIterator[str]:
    """`node script args` run in the project until the block ends; the URL it printed when ready.
    Its stderr goes to `log`; its stdout is read on, so that it never blocks writing."""
    with log.open("wb") as errors:
        process = await asyncio.create_subprocess_exec(
            node, script, *args, cwd=PROJECT, stdout=asyncio.subprocess.PIPE, stderr=errors
        )
    assert process.stdout is not None
    output = process.stdout
    draining: asyncio.Task[None] | None = None
    try:
        async with asyncio.timeout(timeout):
            while not (line := await output.readline()).startswith(READY):
                assert line, f"{script} exited before it was ready: {log.read_text(errors='replace')}"
        draining = asyncio.create_task(_drain(output))
        yield line.removeprefix(READY).decode().strip()
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                async with asyncio.timeout(STOP_SECONDS):
                    await process.wait()
            except TimeoutError:  # the Hive gateway waits for its clients' idle connections
                process.kill()
        await process.wait()
        if draining is not None:
            draining.cancel()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


def compose(node: str, subgraphs: dict[str, Path]) -> dict[str, Any]:
    """@apollo/composition's answer for the subgraphs' schemas (files, by subgraph name): its
    `errors` (messages) and, when they compose, the `supergraphSdl`."""
    done = subprocess.run(
        [node, "compose.mjs", *(f"{name}={path}" for name, path in subgraphs.items())],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer
