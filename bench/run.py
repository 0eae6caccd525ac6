"""The whole benchmark run: the pages and memory, the change log, the subscriptions, then the ratios
of what was recorded. Each part is a module of its own that takes the harness (bench/suite.py)."""

from __future__ import annotations

from bench.eventlog import run_eventlog
from bench.pages import run_pages_and_memory
from bench.ratios import ratios
from bench.subscriptions import run_subscriptions
from bench.suite import Bench, Results


def run_all(bench: Bench) -> Results:
    """Every benchmark the options ask for, in order; the ratios of the recorded figures last."""
    with open("/proc/loadavg") as f:
        bench.results.loadavg_start = " ".join(f.read().split()[:3])
    only_one = bench.options.eventlog_only or bench.options.subscriptions_only
    if not only_one:
        run_pages_and_memory(bench)
    if bench.options.eventlog and not bench.options.subscriptions_only:
        run_eventlog(bench)
    if bench.options.subscriptions and not bench.options.eventlog_only:
        run_subscriptions(bench)
    bench.results.ratios = ratios(bench.results.groups, bench.results.memory)
    return bench.results
