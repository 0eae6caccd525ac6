"""`followgraph` with each pass of Python's cyclic garbage collector recorded:
`python -m bench.collector [--off] LOG followgraph-arguments...` (the subscriptions' section runs
`serve` through it, one worker: the process that serves is this one).

A line per pass goes to LOG: the generation, when it began and how long it took (time.monotonic_ns,
one clock for every process on the machine), how many unreachable objects it freed, and whether it
was asked for (`gc.collect()`). SIGUSR1 asks for a full collection, so that a harness can count what
the collector still had to free at a moment of its choosing. With `--off`, gc.disable() before
`followgraph` starts (only asked-for passes run then).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Pass:
    """One pass of the collector."""

    generation: int
    began_ns: int  # time.monotonic_ns
    ns: int
    collected: int
    forced: bool  # asked for by SIGUSR1, not triggered by allocations


def passes(log: Path, since_ns: int = 0, until_ns: int | None = None) -> list[Pass]:
    """The passes in `log` that began within [since_ns, until_ns)."""
    if not log.exists():
        return []
    out = []
    for line in log.read_text().splitlines():
        generation, began, ns, collected, forced = (int(v) for v in line.split())
        if began >= since_ns and (until_ns is None or began < until_ns):
            out.append(Pass(generation, began, ns, collected, bool(forced)))
    return out


class _Recorder:
    def __init__(self, log: Path) -> None:
        self.fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.began = 0
        self.forcing = False

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        now = time.monotonic_ns()
        if phase == "start":
            self.began = now
            return
        # Written after the pass ends: its time is not the write's.
        fields = (info["generation"], self.began, now - self.began, info["collected"], int(self.forcing))
        os.write(self.fd, (" ".join(map(str, fields)) + "\n").encode())

    def force(self, _signum: int, _frame: object) -> None:
        self.forcing = True
        try:
            gc.collect()
        finally:
            self.forcing = False


def main(argv: list[str]) -> None:
    off = argv[:1] == ["--off"]
    if off:
        argv = argv[1:]
    recorder = _Recorder(Path(argv[0]))
    gc.callbacks.append(recorder)
    signal.signal(signal.SIGUSR1, recorder.force)
    if off:
        gc.disable()
    sys.argv = ["followgraph", *argv[1:]]
    from followgraph.cli.main import main as followgraph

    followgraph()


if __name__ == "__main__":
    main(sys.argv[1:])
