"""A py-spy profile of a server process under load, summarised as text (`--profile`).

`py-spy record --format raw` writes collapsed stacks ("frame;frame;... count"); the summary lists
the functions with the most samples on top of the stack (self) and anywhere on it (total).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

from bench.loaders import Loader
from bench.loadgen import LoadSpec

_LINE = re.compile(r":\d+\)$")


def py_spy() -> str | None:
    here = Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def _frame(frame: str) -> str:
    """'handle (transport/graphql_http.py:120)' -> 'handle (transport/graphql_http.py)'."""
    return _LINE.sub(")", frame.strip())


PROJECT = ("schema", "resolvers", "dataloaders", "store", "server", "bench")
RATE = 200


def _file(frame: str) -> str:
    return frame[frame.rfind("(") + 1 : -1] if frame.endswith(")") else ""


def _package(frame: str) -> str:
    path = _file(frame)
    top = path.split("/", 1)[0] if "/" in path else path
    if frame.startswith(("Runner.run ", "run_until_complete")):
        return "event loop (uvloop, in C: I/O, callbacks)"
    if top in PROJECT:
        return f"{top}/ (FollowGraph)"
    return top or "other"


def summarize(collapsed: str, top: int = 25) -> list[str]:
    own: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    project: Counter[str] = Counter()
    samples = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_frame(f) for f in stack.split(";")]
        samples += n
        own[frames[-1]] += n
        packages[_package(frames[-1])] += n
        # The project's own functions, inclusive, leaving out the CLI and server start-up frames.
        for frame in set(frames):
            path = _file(frame)
            if path.split("/", 1)[0] in PROJECT and not path.startswith(("server/cli", "server/__main__")):
                project[frame] += n
    if not samples:
        return ["(no samples)"]
    lines = [
        f"{samples} samples ({RATE}/s, busy threads only)",
        "",
        "self %  package (time on top of the stack)",
    ]
    lines += [f"{100 * n / samples:5.1f}  {name}" for name, n in packages.most_common(12)]
    lines += ["", "self %  function"]
    lines += [f"{100 * n / samples:5.1f}  {name}" for name, n in own.most_common(top)]
    lines += ["", "total %  FollowGraph function (inclusive: itself and what it calls)"]
    lines += [f"{100 * n / samples:5.1f}  {name}" for name, n in project.most_common(15)]
    return lines


def profile_under_load(pid: int, loader: Loader, spec: LoadSpec) -> list[str]:
    binary = py_spy()
    if binary is None:
        return ["py-spy not found"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.txt"
        args = [
            binary,
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--output",
            str(out),
            "--duration",
            str(max(1, int(spec.duration))),
            "--nonblocking",
        ]
        outcome: dict[str, subprocess.CompletedProcess[bytes]] = {}

        def record() -> None:
            outcome["done"] = subprocess.run(
                args, capture_output=True, check=False, timeout=spec.duration + 60
            )

        # Start the load first; py-spy samples the steady state after the warm-up.
        thread = threading.Timer(spec.warmup, record)
        thread.daemon = True
        thread.start()
        loader.run(spec)
        thread.join()
        done = outcome.get("done")
        if done is None or done.returncode != 0 or not out.exists():
            error = "" if done is None else done.stderr.decode(errors="replace")[-1000:]
            return [f"py-spy failed: {error}"]
        return summarize(out.read_text())
