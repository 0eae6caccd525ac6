"""How much CPU other processes took while a scenario ran (the machine may be shared).

Busy time of the whole machine (/proc/stat) minus the CPU time of the harness' own processes:
the servers and Redis (/proc/PID/stat), the harness itself and its finished children (the load
generator, py-spy) from getrusage.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass

TICK = os.sysconf("SC_CLK_TCK")


def _machine_busy() -> float:
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...: everything but idle and iowait
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICK


def process_seconds(pid: int) -> float:
    """CPU time (user + system) of process `pid` so far; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            after_name = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(after_name[11]) + int(after_name[12])) / TICK  # utime, stime


def descendants(pid: int) -> list[int]:
    """The live descendants of process `pid` (a server's worker processes)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(child) for child in f.read().split()]
    except OSError:
        return []
    return [*children, *(d for child in children for d in descendants(child))]


def tree_seconds(pid: int) -> float:
    """CPU time of process `pid` and of its live descendants."""
    return process_seconds(pid) + sum(process_seconds(d) for d in descendants(pid))


def own_seconds() -> float:
    """CPU time of this process, for a loop it runs itself."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def _own() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


@dataclass(frozen=True, slots=True)
class CpuUse:
    seconds: float  # wall time
    ours: float  # CPU seconds of the harness' processes
    others: float  # CPU seconds of everything else

    @property
    def others_percent(self) -> float:
        """Other processes' load, in % of one core (100 = a whole core taken from the benchmark)."""
        return 100 * self.others / self.seconds if self.seconds else 0.0


def meter(pids: Callable[[], list[int]]) -> Callable[[], CpuUse]:
    """Start measuring; call the returned function to stop and read."""
    started = time.perf_counter()
    busy = _machine_busy()
    ours = _own() + sum(process_seconds(p) for p in pids())

    def stop() -> CpuUse:
        seconds = time.perf_counter() - started
        total = _machine_busy() - busy
        mine = _own() + sum(process_seconds(p) for p in pids()) - ours
        return CpuUse(seconds, mine, max(0.0, total - mine))

    return stop
