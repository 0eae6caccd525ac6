"""Deleting a big account (#39), on a Redis and a server of its own: a celebrity with 1,000,000 fans
(100,000 with --quick) deleted by an admin's deleteUser through server A while A serves another
user's fans page; the deletion's time and Redis CPU, and the pages' p99 in windows of WINDOW
seconds during it beside the same windows without it. Then the same deletion with server A
SIGKILLed a third of the way through, and A started again: it takes the deletion up and ends it.

Deletions of accounts that name at most store/graph/lifecycle.py's ATOMIC_LIMIT users are one
script; this one goes in batches of BATCH users, each a script of a few milliseconds of Redis, so
that the pages in between wait at most one batch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import redis

from bench.cpu import descendants, process_seconds
from bench.graph import open_pipe, profile_command
from bench.loadgen import LoadResult, LoadSpec, RequestSpec
from bench.processes import Child, child_env, free_port, pin, wait_http
from bench.queries import bearer, fans_query_body
from bench.resp import pack
from followgraph.server.redis_server import RedisServer, find_redis_server
from followgraph.store import Keys
from followgraph.store.graph import lifecycle
from followgraph.transport.auth import AuthConfig, mint_token

if TYPE_CHECKING:
    from bench.suite import Bench

FANS, QUICK_FANS = 1_000_000, 100_000
# Another celebrity, whose fans page is the load beside the deletion.
OTHER_FANS = 10_000
STAR, OTHER, VIEWER = "star", "other", "viewer"
# Seconds per window of the page load; windows without the deletion to compare with.
WINDOW = 2.0
BASELINE_WINDOWS = 5
CONCURRENCY = 16
# Where the deletion is SIGKILLed, as a share of the users it visits.
KILL_AT = 1 / 3


@dataclass
class LifecycleResults:
    fans: int = 0
    batch: int = lifecycle.BATCH
    delete_seconds: float = 0.0
    delete_redis_cpu: float = 0.0
    baseline: list[LoadResult] = field(default_factory=list)
    during: list[LoadResult] = field(default_factory=list)
    killed_at: int = 0
    killed_of: int = 0
    gone_for_others_after_kill: bool = False
    resume_seconds: float = 0.0
    left_after_resume: int = -1


def _load(port: int, keys: Keys, user: str, fans: int, prefix: str) -> None:
    """`user` with `fans` fans (prefix0, prefix1, ...), each a registered user following it."""
    with open_pipe("127.0.0.1", port) as pipe:
        pipe.add(profile_command(keys, user, user.title()))
        for start in range(0, fans, 1000):
            members: list[str | int] = []
            for i in range(start, min(fans, start + 1000)):
                fan = f"{prefix}{i}"
                pipe.add(profile_command(keys, fan, fan))
                pipe.add(pack("ZADD", keys.following(fan), i + 1, user))
                members += [i + 1, fan]
            pipe.add(pack("ZADD", keys.fans(user), *members))
        pipe.flush()


DELETE_USER = "mutation($id: ID!) { deleteUser(input: {userId: $id}) { state errors { code message } } }"


def _delete(port: int, admin: str, user: str) -> threading.Thread:
    """deleteUser through server A, in a thread: the call answers DELETING after half its request's
    time and the server goes on in the background."""

    def call() -> None:
        body = {"query": DELETE_USER, "variables": {"id": user}}
        url = f"http://127.0.0.1:{port}/graphql"
        with contextlib.suppress(httpx.HTTPError):  # the server may be killed meanwhile
            answer = httpx.post(url, json=body, headers=bearer(admin), timeout=120)
            errors = answer.json()["data"]["deleteUser"]["errors"]
            if errors:
                raise RuntimeError(f"deleteUser failed: {errors}")

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread


def _marked(stats: redis.Redis, user: str) -> bool:
    return stats.hget(Keys().lifecycle_jobs(), user) is not None


def _windows(
    bench: Bench, port: int, request: RequestSpec, stats: redis.Redis | None, count: int
) -> list[LoadResult]:
    """Page load in windows of WINDOW seconds: `count` of them, or while STAR's deletion runs."""
    out: list[LoadResult] = []
    while (stats is None and len(out) < count) or (stats is not None and _marked(stats, STAR)):
        out.append(bench.loader.run(LoadSpec("127.0.0.1", port, CONCURRENCY, 0.0, WINDOW, request)))
    return out


def run_lifecycle(bench: Bench) -> None:
    """The section; results go to bench.results.lifecycle."""
    results = bench.results.lifecycle = LifecycleResults()
    results.fans = QUICK_FANS if bench.options.quick else FANS
    keys = Keys()
    with (
        tempfile.TemporaryDirectory(prefix="followgraph-bench-lifecycle-") as name,
        contextlib.ExitStack() as own,
    ):
        tmp = Path(name)
        server = RedisServer(
            directory=tmp / "redis",
            port=free_port(),
            binary=bench.options.redis_binary or find_redis_server(),
        )
        server.start()
        own.callback(server.stop)
        assert server.process is not None
        redis_pid = server.process.pid
        pin(redis_pid, bench.layout.redis)
        own.enter_context(bench.redis_of_its_own(redis_pid))
        stats = redis.Redis(host="127.0.0.1", port=server.port, decode_responses=True)
        own.callback(stats.close)
        url = f"redis://127.0.0.1:{server.port}/0"
        bench.say(
            f"  account deletion: loading {results.fans:,} fans of {STAR} and {OTHER_FANS:,} of {OTHER}..."
        )
        _load(server.port, keys, STAR, results.fans, "f")
        _load(server.port, keys, OTHER, OTHER_FANS, "g")
        with open_pipe("127.0.0.1", server.port) as pipe:
            pipe.add(profile_command(keys, VIEWER, "Viewer"))
            pipe.flush()
        port = free_port()
        env = child_env({"FOLLOWGRAPH_JWT_SECRET": bench.secret, "FOLLOWGRAPH_DATA_DIR": str(tmp / "data")})

        def start_a() -> Child:
            child = bench.spawn_server("server A (account deletion)", port, url, env, tmp)
            wait_http(child, port, timeout=120)
            return child

        a = start_a()
        auth = AuthConfig("HS256", secret=bench.secret.encode())
        admin = mint_token(auth, "operator", admin=True, ttl_seconds=3600)
        token = mint_token(auth, VIEWER, ttl_seconds=3600)
        request = RequestSpec("/graphql", fans_query_body(OTHER, 20), bearer(token))
        bench.loader.run(LoadSpec("127.0.0.1", port, CONCURRENCY, 0.0, WINDOW, request))  # warm
        redis_cpu = process_seconds(redis_pid)
        started = time.monotonic()
        results.baseline = _windows(bench, port, request, None, BASELINE_WINDOWS)
        load_cpu_rate = (process_seconds(redis_pid) - redis_cpu) / (time.monotonic() - started)

        bench.say(f"  account deletion: deleting {STAR} while serving {OTHER}'s fans page...")
        redis_cpu = process_seconds(redis_pid)
        started = time.monotonic()
        caller = _delete(port, admin, STAR)
        while not _marked(stats, STAR) and caller.is_alive():
            time.sleep(0.01)
        results.during = _windows(bench, port, request, stats, 0)
        while _marked(stats, STAR):
            time.sleep(0.01)
        results.delete_seconds = time.monotonic() - started
        caller.join()
        load_seconds = sum(w.seconds for w in results.during)
        results.delete_redis_cpu = process_seconds(redis_pid) - redis_cpu - load_cpu_rate * load_seconds

        bench.say("  account deletion: server A SIGKILLed a third of the way through, then restarted...")
        _load(server.port, keys, STAR, results.fans, "f")
        _delete(port, admin, STAR)
        jobs = keys.lifecycle_jobs()
        while True:
            done, total = stats.hmget(jobs, [f"{STAR}:done", f"{STAR}:total"])
            if total and int(done or 0) >= KILL_AT * int(total):
                for pid in [*descendants(a.pid), a.pid]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                results.killed_at, results.killed_of = int(done or 0), int(total)
                break
            time.sleep(0.01)
        a.process.wait()
        results.gone_for_others_after_kill = not stats.exists(keys.profile(STAR)) and _marked(stats, STAR)
        started = time.monotonic()
        a = start_a()
        while stats.hget(jobs, STAR) is not None and time.monotonic() - started < 600:
            time.sleep(0.05)
        results.resume_seconds = time.monotonic() - started
        left = sum(1 for _ in stats.scan_iter(match=f"*{{u:{STAR}}}*", count=1000))
        sample = [keys.following(f"f{i}") for i in range(0, results.fans, max(1, results.fans // 1000))]
        left += sum(1 for key in sample if stats.zscore(key, STAR) is not None)
        results.left_after_resume = left
        a.process.send_signal(signal.SIGTERM)
        a.process.wait(timeout=60)


def lifecycle_rows(results: LifecycleResults) -> list[list[str]]:
    def p99s(windows: list[LoadResult]) -> str:
        values = [w.p99_ms for w in windows]
        if not values:
            return "-"
        return f"{statistics.median(values):.2f} / {max(values):.2f}"

    def rps(windows: list[LoadResult]) -> str:
        return f"{statistics.median([w.rps for w in windows]):,.0f}" if windows else "-"

    return [
        ["other's fans page, no deletion", p99s(results.baseline), rps(results.baseline), "", ""],
        [
            f"the same, during the deletion of {results.fans:,} fans",
            p99s(results.during),
            rps(results.during),
            f"{results.delete_seconds:.1f}",
            f"{results.delete_redis_cpu:.1f}",
        ],
    ]


def lifecycle_notes(results: LifecycleResults) -> list[str]:
    base = statistics.median([w.p99_ms for w in results.baseline]) if results.baseline else 0.0
    during = statistics.median([w.p99_ms for w in results.during]) if results.during else 0.0
    ratio = f"{during / base:.2f}" if base else "-"
    kept = "yes" if results.gone_for_others_after_kill else "NO"
    return [
        f"p99 as the median / worst of {WINDOW:g} s windows at {CONCURRENCY} connections; during / "
        f"without the deletion (medians): {ratio}. The deletion runs in server A, the process serving "
        f"the pages (deleteUser answers DELETING and it goes on), in batches of {results.batch} users "
        "(one script each), working half its time; its Redis CPU is the Redis process's over the "
        "deletion less the page load's, at the rate measured without it.",
        f"Server A SIGKILLed after {results.killed_at:,} of {results.killed_of:,} users visited: the "
        f"account gone for everyone else and marked as a job ({kept}); A started again and ended it "
        f"{results.resume_seconds:.1f} s after its start, leaving {results.left_after_resume} key(s) or "
        "sampled entries naming the account (0 expected).",
    ]
