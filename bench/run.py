"""The whole benchmark run: the pages and memory, the change log, the subscriptions, a big account's
deletion, an import and an export, writes that wait for a replica, GLIDE and granian against
FollowGraph's transport, then the ratios of what was recorded. Each part is a module of its own that
takes the harness (bench/suite.py)."""

from __future__ import annotations

from bench.clients import run_clients
from bench.cluster import run_cluster
from bench.eventlog import run_eventlog
from bench.imports import run_imports
from bench.lifecycle import run_lifecycle
from bench.memory import redis_binaries
from bench.pages import run_pages_and_memory
from bench.ratios import ratios
from bench.replicated import run_replicated
from bench.subscriptions import run_subscriptions
from bench.suite import Bench, Results


def run_all(bench: Bench) -> Results:
    """Every benchmark the options ask for, in order; the ratios of the recorded figures last."""
    with open("/proc/loadavg") as f:
        bench.results.loadavg_start = " ".join(f.read().split()[:3])
    o = bench.options
    only = "eventlog" if o.eventlog_only else "subscriptions" if o.subscriptions_only else None
    only = "lifecycle" if o.lifecycle_only else only
    only = "imports" if o.imports_only else only
    only = "clients" if o.clients_only else only
    only = "replicated" if o.replicated_only else only
    only = "cluster" if o.cluster_only else only
    if only is None:
        run_pages_and_memory(bench)
    if only == "cluster":
        run_cluster(bench, None, redis_binaries(o.redis_binary)[:1], memory=False)
    if o.eventlog and only in (None, "eventlog"):
        run_eventlog(bench)
    if o.subscriptions and only in (None, "subscriptions"):
        run_subscriptions(bench)
    if o.lifecycle and only in (None, "lifecycle"):
        run_lifecycle(bench)
    if o.imports and only in (None, "imports"):
        run_imports(bench)
    if o.replicated and only in (None, "replicated"):
        run_replicated(bench)
    if o.clients and only in (None, "clients"):
        run_clients(bench)
    bench.results.ratios = ratios(bench.results.groups, bench.results.memory)
    return bench.results
