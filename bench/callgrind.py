"""Instructions a child process runs while it does what it was told, counted by callgrind.

A count of instructions is the same, to a few in a thousand or better, whatever else the machine
does, while CPU time moves by half within minutes on a shared machine: a change of 1% shows. The child
(`python -m MODULE ...` under valgrind, counting nothing at first) reads one line of JSON, gets
ready (a server's startup, its warm-up pages), prints `ready` and waits for a line; callgrind
then counts until the child leaves with os._exit, so nothing of its shutdown is counted.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def available() -> bool:
    """Whether valgrind and callgrind_control are installed."""
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


class Counted:
    """One child under callgrind: started by the constructor, counted from `go` to `total`,
    stopped by `close` (or leaving a `with`). Several may get ready side by side (a count does not
    depend on what else runs)."""

    def __init__(self, what: str, args: list[str], spec: str) -> None:
        self.what = what
        self._dir = tempfile.TemporaryDirectory(prefix="followgraph-callgrind-")
        self._out = Path(self._dir.name) / "callgrind.out"
        self._child = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={self._out}",
                sys.executable,
                "-m",
                *args,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self._child.stdin is not None
        self._child.stdin.write(spec + "\n")
        self._child.stdin.flush()

    def __enter__(self) -> Counted:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def go(self) -> None:
        """Wait until the child is ready, then count from here on."""
        child = self._child
        assert child.stdin is not None and child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError(f"{self.what} under callgrind did not start")
        subprocess.run(["callgrind_control", "--instr=on", str(child.pid)], capture_output=True, check=True)
        child.stdin.write("go\n")
        child.stdin.flush()

    def total(self, timeout: float = 600.0) -> int:
        """The instructions counted, once the child is done."""
        if self._child.wait(timeout=timeout) != 0:
            raise RuntimeError(f"{self.what} under callgrind failed ({self._child.returncode})")
        for line in self._out.read_text().splitlines():
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
        raise RuntimeError(f"{self.what}: callgrind wrote no total")

    def close(self) -> None:
        """Stop the child if it still runs, and remove its output."""
        self._child.kill()
        self._child.wait()
        self._dir.cleanup()


def count(what: str, args: list[str], spec: str) -> int:
    """The instructions of one child, counted from its `ready` to its exit."""
    with Counted(what, args, spec) as counted:
        counted.go()
        return counted.total()
