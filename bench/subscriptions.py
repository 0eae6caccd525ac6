"""GraphQL subscriptions (#14), measured in one run on a Redis and a `followgraph serve` of their own:

0. the reference: the same two rates of follows (below) with no subscription open;
1. memory per idle subscription: the server's RSS (/proc/PID/status VmRSS) with 0, 1,000, 2,500,
   5,000 and 10,000 idle WebSocket connections on its one process, each running viewerEvents as a
   distinct user (offering permessage-deflate, as browsers do); Redis' used_memory and connected
   clients beside it (the design keeps no per-subscription state in Redis: one reader of the change
   log per process);
2. delivery latency with 10,000 subscribers: follows sent through HTTP at a steady rate, each from a
   subscriber to another subscriber, so each follow is pushed to two subscriptions (the actor's and
   the target's); latency is from writing the mutation's request to the subscriber reading the event,
   on one clock (one process). Two rates, a light one and a heavier one; every delivery is counted
   against the expected ones (none lost, none doubled);
3. the 10,000 sockets closed, then a full collection asked of the server: what the collector freed
   from the closing on, per subscription, is what a subscription leaves to it;
4. the heavier rate again on a second server started with `gc.disable()` (the same 10,000
   subscribers): what the cyclic collector's pauses cost.

The server runs under bench/collector.py, which records each pass of its cyclic collector (the
generation, how long it took, what it freed): the passes while each step's sockets open, during each
rate's follows and from the closing on are reported beside those figures.

The client is lean and runs in the harness' own process (one asyncio loop on uvloop): the
`websockets` library speaking graphql-transport-ws directly (connection_init with the token,
subscribe, next; pongs to the server's pings), and a hand-written HTTP/1.1 keep-alive sender for
the mutations. It is pinned to the load generator's CPU, so on a 2-core machine it competes with
Redis, not with the server; its CPU use is reported beside the server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import resource
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson
import redis
import uvloop
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from bench.collector import passes
from bench.cpu import meter, own_seconds, process_seconds
from bench.graph import open_pipe, profile_command
from bench.loadgen import build_request, percentile
from bench.processes import Child, child_env, free_port, pin, spawn, wait_http
from bench.subscription_results import (
    SERVED,
    SUBSCRIBERS,
    Collections,
    Delivery,
    MemoryStep,
    SubscriptionResults,
)
from followgraph.server.redis_server import RedisServer, find_redis_server
from followgraph.store import Keys
from followgraph.transport.auth import AuthConfig, mint_token

if TYPE_CHECKING:
    from bench.suite import Bench

# Subscriptions open at each step of the memory part; the last is SUBSCRIBERS, the delivery part's.
OPEN_STEPS = (1_000, 2_500, 5_000, SUBSCRIBERS)
# Follows per second: a light rate and a heavier one (at ~3 ms of server CPU per follow with two
# deliveries, 300/s is about one core: saturation, not a rate to measure latency at).
RATES = (100.0, 200.0)
# Seconds of each rate (a --quick run: 3).
RATE_SECONDS, QUICK_RATE_SECONDS = 10.0, 3.0
# Follows of the unmeasured warm-up before the first rate (at the light rate).
WARMUP_FOLLOWS = 100
# Keep-alive connections of the mutation sender (at most this many mutations in flight).
SENDER_CONNECTIONS = 128
# Sockets opened at once while connecting the subscribers.
OPENING = 100
# Longest wait for the last deliveries of a rate after its last follow was sent.
DRAIN_SECONDS = 10.0
# A delivery slower than this counts in a slow spell; spells part when 0.5 s apart.
SLOW_MS = 100.0
# Seconds the server is left alone before its RSS is read.
SETTLE = 1.0
# Open files the harness needs: a socket per subscriber, the sender's, Redis', the server's pipes
# (the server's own need is the same, and it inherits the harness' limit).
FILES_NEEDED = SUBSCRIBERS + SENDER_CONNECTIONS + 200
# The server's connection cap (FOLLOWGRAPH_MAX_CONNECTIONS, 10,000 by default): the subscribers,
# the sender's and the harness' own.
MAX_CONNECTIONS = SUBSCRIBERS + SENDER_CONNECTIONS + 100
# Longest wait for the full collection asked of the server after the sockets closed.
FORCED_SECONDS = 30.0

GC_DISABLED = "the same, gc.disable()"
SUBPROTOCOL = Subprotocol("graphql-transport-ws")
EVENT_FIELDS = "eventId kind actor { userId } target { userId } at"
VIEWER_EVENTS = f"subscription ViewerEvents {{ viewerEvents {{ {EVENT_FIELDS} }} }}"
FOLLOW = "mutation Follow($userId: ID!) { follow(input: {userId: $userId}) { changed } }"
CHANGED = b'"changed":true'


def user(i: int) -> str:
    return f"s{i:05d}"


def raise_open_files(needed: int) -> str:
    """Raise this process' soft open-file limit to its hard limit when it is below `needed`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return f"{soft} (enough, not raised)"
    target = hard if hard == resource.RLIM_INFINITY else min(hard, max(needed, soft))
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return f"raised from {soft} to {target} (RLIMIT_NOFILE)"


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# -- the lean client ------------------------------------------------------------------------------


class Clients:
    """The subscribers' sockets and the deliveries they read."""

    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url = url
        self.tokens = tokens
        self.sockets: dict[str, tuple[ClientConnection, asyncio.Task[None]]] = {}
        # (actor, target) -> when its follow was written (perf_counter_ns)
        self.sent: dict[tuple[str, str], int] = {}
        self.received: Counter[tuple[str, str, str]] = Counter()  # (actor, target, subscriber)
        self.latencies: list[int] = []
        self.starts: list[int] = []  # when the follow of each latency was written, in order
        self.unexpected = 0
        self.problems: list[str] = []
        self.extensions = ""

    async def open(self, users: list[str], deflate: bool = True) -> float:
        started = time.perf_counter()
        gate = asyncio.Semaphore(OPENING)
        self.extensions = ""

        async def one(u: str) -> None:
            async with gate:
                await self._open(u, deflate)

        await asyncio.gather(*(one(u) for u in users))
        return time.perf_counter() - started

    async def _open(self, u: str, deflate: bool) -> None:
        # Browsers send no WebSocket pings of their own; the server's protocol pings are answered.
        ws = await connect(
            self.url,
            subprotocols=[SUBPROTOCOL],
            ping_interval=None,
            open_timeout=60,
            compression="deflate" if deflate else None,
        )
        if not self.extensions and ws.response is not None:
            self.extensions = ws.response.headers.get("Sec-WebSocket-Extensions", "none")
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {self.tokens[u]}"}}
        await ws.send(orjson.dumps(init).decode())
        ack = orjson.loads(await ws.recv())
        if ack.get("type") != "connection_ack":
            raise RuntimeError(f"{u}: expected connection_ack, got {ack}")
        subscribe = {"id": "1", "type": "subscribe", "payload": {"query": VIEWER_EVENTS}}
        await ws.send(orjson.dumps(subscribe).decode())
        self.sockets[u] = (ws, asyncio.create_task(self._pump(u, ws)))

    async def _pump(self, u: str, ws: ClientConnection) -> None:
        try:
            async for raw in ws:
                now = time.perf_counter_ns()
                message = orjson.loads(raw)
                kind = message.get("type")
                if kind == "next":
                    self._delivered(u, message["payload"], now)
                elif kind == "ping":
                    await ws.send('{"type":"pong"}')
                elif kind in ("error", "complete"):
                    self.problems.append(f"{u}: {kind} {message.get('payload')}")
        except ConnectionClosed as exc:
            self.problems.append(f"{u}: closed {exc.rcvd.code if exc.rcvd else None}")

    def _delivered(self, u: str, payload: dict[str, Any], now: int) -> None:
        event = (payload.get("data") or {}).get("viewerEvents")
        if not event:
            self.problems.append(f"{u}: {payload.get('errors')}")
            return
        pair = (event["actor"]["userId"], event["target"]["userId"])
        sent = self.sent.get(pair)
        if sent is None or u not in pair or event["kind"] != "FOLLOW":
            self.unexpected += 1
            return
        key = (*pair, u)
        self.received[key] += 1
        if self.received[key] == 1:
            self.latencies.append(now - sent)
            self.starts.append(sent)

    async def close(self, users: list[str]) -> None:
        async def one(u: str) -> None:
            ws, task = self.sockets.pop(u)
            await ws.close()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        await asyncio.gather(*(one(u) for u in users))


class Sender:
    """Follows at a steady rate through HTTP/1.1 keep-alive connections (open loop)."""

    def __init__(self, port: int, tokens: dict[str, str]) -> None:
        self.port = port
        self.tokens = tokens
        self.pool: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
        self.errors = 0
        self.latencies: list[int] = []
        self.behind: list[int] = []
        self.failures: list[str] = []
        self.starts: list[int] = []

    async def start(self) -> None:
        for _ in range(SENDER_CONNECTIONS):
            self.pool.put_nowait(await asyncio.open_connection("127.0.0.1", self.port))

    async def stop(self) -> None:
        while not self.pool.empty():
            _, writer = self.pool.get_nowait()
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def follow(self, clients: Clients, actor: str, target: str, due: int) -> None:
        body = orjson.dumps({"query": FOLLOW, "variables": {"userId": target}})
        request = build_request(
            "127.0.0.1", self.port, "/graphql", body, {"Authorization": f"Bearer {self.tokens[actor]}"}
        )
        reader, writer = await self.pool.get()
        try:
            started = time.perf_counter_ns()
            self.behind.append(max(0, started - due))
            clients.sent[(actor, target)] = started
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            answer = await reader.readexactly(length)
            self.latencies.append(time.perf_counter_ns() - started)
            self.starts.append(started)
            if not head.startswith(b"HTTP/1.1 200") or CHANGED not in answer:
                # Not followed: no event is expected for it (one that comes counts as unexpected).
                self.errors += 1
                del clients.sent[(actor, target)]
                if len(self.failures) < 5:
                    status = head.split(b"\r\n", 1)[0].decode(errors="replace")
                    self.failures.append(f"{status}: {answer[:300].decode(errors='replace')}")
        finally:
            self.pool.put_nowait((reader, writer))

    async def steady(self, clients: Clients, pairs: list[tuple[str, str]], rate: float) -> float:
        """Send `pairs` at `rate` per second; the seconds from the first write to the last. The
        connections are opened for the run (the server closes keep-alive connections left idle)."""
        await self.start()
        interval = 1e9 / rate
        start = time.perf_counter_ns() + 10_000_000
        tasks = []
        for i, (actor, target) in enumerate(pairs):
            due = start + int(i * interval)
            wait = (due - time.perf_counter_ns()) / 1e9
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.create_task(self.follow(clients, actor, target, due)))
        await asyncio.gather(*tasks)
        await self.stop()
        times = [clients.sent[p] for p in pairs if p in clients.sent]
        return (max(times) - min(times)) / 1e9 if times else 0.0


def follow_pairs(first: int, count: int, n: int) -> list[tuple[str, str]]:
    """Follows number first..first+count-1 among users 1..n: follow k targets user k % n + 1, by the
    user d = 1 + k // n places further on; no pair comes twice while k < n * (n - 1)."""
    out = []
    for k in range(first, first + count):
        t = k % n
        a = (t + 1 + k // n) % n
        out.append((user(a + 1), user(t + 1)))
    return out


# -- the section ----------------------------------------------------------------------------------


def run_subscriptions(bench: Bench) -> None:
    """The section on a Redis and a server of its own; results go to bench.results.subscriptions."""
    results = bench.results.subscriptions = SubscriptionResults()
    results.open_files = raise_open_files(FILES_NEEDED)
    results.client = (
        "one asyncio process (uvloop), the harness itself: websockets "
        f"{_version('websockets')} speaking graphql-transport-ws, and a hand-written HTTP/1.1 sender "
        f"on {SENDER_CONNECTIONS} keep-alive connections"
    )
    affinity = os.sched_getaffinity(0)
    with (
        tempfile.TemporaryDirectory(prefix="followgraph-bench-subscriptions-") as name,
        contextlib.ExitStack() as own,
    ):
        tmp = Path(name)
        binary = bench.options.redis_binary or find_redis_server()
        server = RedisServer(directory=tmp / "redis", port=free_port(), binary=binary)
        server.start()
        child: Child | None = None
        stats = redis.Redis(host="127.0.0.1", port=server.port, decode_responses=True)
        try:
            assert server.process is not None
            pin(server.process.pid, bench.layout.redis)
            own.enter_context(bench.redis_of_its_own(server.process.pid))
            if not bench.results.redis_version:
                info: dict[str, Any] = stats.info("server")
                bench.results.redis_version = str(info["redis_version"])
                bench.results.redis_allocator = str(stats.info("memory").get("mem_allocator", "?"))
            users = [user(i) for i in range(1, SUBSCRIBERS + 1)]
            warm = [f"warm{i}" for i in range(1, 21)]
            keys = Keys()
            with open_pipe("127.0.0.1", server.port) as pipe:
                for u in [*users, *warm]:
                    pipe.add(profile_command(keys, u, f"User {u}"))
                pipe.flush()
            auth = AuthConfig("HS256", secret=bench.secret.encode())
            tokens = {u: mint_token(auth, u, ttl_seconds=6 * 3600) for u in [*users, *warm]}
            port = free_port()
            env = child_env(
                {
                    "FOLLOWGRAPH_JWT_SECRET": bench.secret,
                    "FOLLOWGRAPH_WORKERS": "1",
                    # No SQL copy in this process (`followgraph sync` can run it apart): the section
                    # measures the change log's reader and the sockets, not the SQL consumer.
                    "FOLLOWGRAPH_SYNC": "0",
                    "FOLLOWGRAPH_DATA_DIR": str(tmp / "data"),
                    "FOLLOWGRAPH_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
                }
            )
            url = f"redis://127.0.0.1:{server.port}/0"
            log = tmp / "collector.log"
            child = _serve(
                bench, "server A (followgraph serve, subscriptions)", [str(log)], port, url, env, tmp
            )
            wait_http(child, port)
            if bench.layout.loader is not None:
                os.sched_setaffinity(0, bench.layout.loader)
            bench.say(
                f"Subscriptions: {SUBSCRIBERS:,} viewerEvents subscribers on one server "
                f"(open files: {results.open_files})..."
            )
            follows = Follows(SUBSCRIBERS)
            uvloop.run(_measure(bench, results, child, log, port, stats, tokens, users, warm, follows))
            child.stop()
            # The same server with Python's cyclic garbage collector off, at the heavier rate: what
            # the collector's pauses cost the deliveries (a reference, not a way to run it).
            port = free_port()
            log = tmp / "collector-off.log"
            child = _serve(
                bench, "server A, gc disabled (subscriptions)", ["--off", str(log)], port, url, env, tmp
            )
            wait_http(child, port)
            bench.say("  the same server with gc.disable(), at the heavier rate:")
            uvloop.run(_gc_off(bench, child, log, port, tokens, users, follows))
        finally:
            os.sched_setaffinity(0, affinity)
            if child is not None:
                child.stop()
            stats.close()
            server.stop()


def _serve(
    bench: Bench, name: str, collector: list[str], port: int, url: str, env: dict[str, str], tmp: Path
) -> Child:
    """`followgraph serve` (one worker: the process that serves is the one started) under
    bench/collector.py, with the access log at its default level, as users run it."""
    args = [sys.executable, "-m", "bench.collector", *collector, "serve", "--port", str(port)]
    return spawn(
        name,
        [*args, "--redis-url", url, "--production", "--workers", "1"],
        env=env,
        log_path=tmp / f"server-{port}.log",
        cpus=bench.layout.app,
    )


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


async def _gauge(http: httpx.AsyncClient, name: str) -> float:
    text = (await http.get("/metrics")).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


async def _subscriptions_reach(
    http: httpx.AsyncClient, count: int, timeout: float = 60.0, gauge: str = "followgraph_subscriptions"
) -> None:
    deadline = time.monotonic() + timeout
    while await _gauge(http, gauge) != count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server's {gauge} is not {count} after {timeout:.0f}s")
        await asyncio.sleep(0.1)
    # The gauge counts an operation as soon as it starts; its hub subscription follows at once.
    await asyncio.sleep(SETTLE)


async def _measure(
    bench: Bench,
    results: SubscriptionResults,
    child: Child,
    log: Path,
    port: int,
    stats: redis.Redis,
    tokens: dict[str, str],
    users: list[str],
    warm: list[str],
    follows: Follows,
) -> None:
    clients = Clients(f"ws://127.0.0.1:{port}/graphql", tokens)
    sender = Sender(port, tokens)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        # Warm the server's subscription path (imports, caches) before the baseline: a few sockets,
        # a follow among them, closed again.
        await clients.open(warm)
        await _subscriptions_reach(http, len(warm))
        await sender.steady(clients, [(warm[0], warm[1]), (warm[2], warm[3])], 10)
        await asyncio.sleep(0.5)
        await clients.close(warm)
        clients.sent.clear()
        clients.received.clear()
        clients.latencies.clear()
        await _subscriptions_reach(http, 0)

        def step(
            label: str, n: int, seconds: float = 0.0, added: int = 0, since_ns: int | None = None
        ) -> MemoryStep:
            memory: dict[str, Any] = stats.info("memory")
            clients_info: dict[str, Any] = stats.info("clients")
            s = MemoryStep(
                label,
                n,
                rss_kb(child.pid),
                int(memory["used_memory"]),
                int(clients_info["connected_clients"]) - 1,  # not the harness' own
                seconds,
                added,
                clients.extensions if added else "",
                None if since_ns is None else Collections.of(passes(log, since_ns)),
            )
            results.memory.append(s)
            bench.say(
                f"  {label:<34} server RSS {s.server_rss_kb / 1024:7.1f} MiB  Redis used_memory "
                f"{s.redis_used_memory / 1024:8.1f} KiB  Redis clients {s.redis_clients}"
                + (f"  (opened in {seconds:.1f}s)" if seconds else "")
            )
            return s

        # The reference: the same rates of follows with no subscription open.
        for rate in RATES:
            results.deliveries.append(await _round(bench, clients, sender, child, log, follows, rate, 0))
        step("0 subscriptions", 0)
        opened = 0
        for reached in OPEN_STEPS:
            since = time.monotonic_ns()
            seconds = await clients.open(users[opened:reached])
            added, opened = reached - opened, reached
            await _subscriptions_reach(http, opened)
            step(f"{opened:,} idle (+{added:,})", opened, seconds, added, since)

        # Delivery latency with SUBSCRIBERS subscriptions.
        warm_pairs = follows.take(WARMUP_FOLLOWS)
        await sender.steady(clients, warm_pairs, RATES[0])
        await _drained(clients, 2 * len(warm_pairs))
        for rate in RATES:
            d = await _round(bench, clients, sender, child, log, follows, rate, SUBSCRIBERS)
            results.deliveries.append(d)

        # What closing them leaves to the collector: all it frees from the closing to a full
        # collection asked for once every socket has ended.
        since = time.monotonic_ns()
        await clients.close(list(clients.sockets))
        await _subscriptions_reach(http, 0)
        await _subscriptions_reach(http, 0, gauge="followgraph_ws_connections")
        await _full_collection(child, log, since)
        s = step(f"0 after closing {opened:,}", 0, since_ns=since)
        assert s.collections is not None
        results.left_per_subscription = sum(s.collections.collected) / opened
        bench.say(
            f"  closing {opened:,}: the collector freed {sum(s.collections.collected):,} objects "
            f"({results.left_per_subscription:.1f} per subscription)"
        )
    results.problems = clients.problems[:20]


async def _full_collection(child: Child, log: Path, since_ns: int) -> None:
    """Ask the server (under bench/collector.py) for a full collection and wait until it is done."""
    os.kill(child.pid, signal.SIGUSR1)
    deadline = time.monotonic() + FORCED_SECONDS
    while not any(p.forced for p in passes(log, since_ns)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server made no full collection within {FORCED_SECONDS:.0f}s")
        await asyncio.sleep(0.1)


def slow_spells(starts: list[int], latencies: list[int], origin: int) -> list[list[float]]:
    """Where the deliveries slower than SLOW_MS fall: [start s, length s, deliveries] per spell."""
    slow = sorted(s for s, v in zip(starts, latencies, strict=True) if v > SLOW_MS * 1e6)
    spells: list[list[float]] = []
    for at in slow:
        t = (at - origin) / 1e9
        if spells and t - (spells[-1][0] + spells[-1][1]) < 0.5:
            spells[-1][1] = t - spells[-1][0]
            spells[-1][2] += 1
        else:
            spells.append([t, 0.0, 1])
    return spells


class Follows:
    """The next follows of follow_pairs, none twice in the run."""

    def __init__(self, users: int) -> None:
        self.users = users
        self.next = 0

    def take(self, count: int) -> list[tuple[str, str]]:
        pairs = follow_pairs(self.next, count, self.users)
        self.next += count
        return pairs


async def _round(
    bench: Bench,
    clients: Clients,
    sender: Sender,
    child: Child,
    log: Path,
    follows: Follows,
    rate: float,
    subscribers: int,
) -> Delivery:
    """Follows at `rate` for the section's seconds, with `subscribers` subscriptions open."""
    seconds_each = QUICK_RATE_SECONDS if bench.options.quick else RATE_SECONDS
    clients.sent.clear()
    clients.received.clear()
    clients.latencies.clear()
    clients.starts.clear()
    clients.unexpected = 0
    sender.errors, sender.latencies, sender.behind, sender.starts = 0, [], [], []
    count = int(rate * seconds_each)
    pairs = follows.take(count)
    # Deliveries expected by the time the sender has finished: two per follow that succeeded.

    def expected() -> int:
        return 2 * len(clients.sent) if subscribers else 0

    cpu = meter(lambda: [child.pid, *bench.redis_pids])
    server_cpu, redis_cpu, own = (
        process_seconds(child.pid),
        process_seconds(bench.redis_pids[0]),
        own_seconds(),
    )
    wall, since = time.perf_counter(), time.monotonic_ns()
    # The harness' own collector is off while it times deliveries: a pass over its 10,000 client
    # sockets stalled the sender and the readers for up to half a second.
    gc.disable()
    try:
        sending = await sender.steady(clients, pairs, rate)
        await _drained(clients, expected())
    finally:
        gc.enable()
    wall = time.perf_counter() - wall
    collections = Collections.of(passes(log, since))
    use = cpu()
    server_cpu = process_seconds(child.pid) - server_cpu
    redis_cpu = process_seconds(bench.redis_pids[0]) - redis_cpu
    own = own_seconds() - own
    delivered = len(clients.received)
    ms = sorted(v / 1e6 for v in clients.latencies)
    mutation_ms = sorted(v / 1e6 for v in sender.latencies)
    d = Delivery(
        subscribers=subscribers,
        rate=rate,
        seconds=sending,
        follows=count,
        mutation_errors=sender.errors,
        expected=expected(),
        delivered=delivered,
        lost=expected() - delivered,
        doubled=sum(v - 1 for v in clients.received.values() if v > 1),
        unexpected=clients.unexpected,
        p50_ms=percentile(ms, 0.50),
        p90_ms=percentile(ms, 0.90),
        p99_ms=percentile(ms, 0.99),
        max_ms=ms[-1] if ms else 0.0,
        mutation_p50_ms=percentile(mutation_ms, 0.50),
        mutation_p99_ms=percentile(mutation_ms, 0.99),
        behind_schedule_max_ms=max(sender.behind, default=0) / 1e6,
        server_cpu_ms_per_follow=1000 * server_cpu / count,
        server_cpu_percent=100 * server_cpu / wall,
        client_cpu_percent=100 * own / wall,
        redis_cpu_percent=100 * redis_cpu / wall,
        others_cpu_percent=use.others_percent,
        collections=collections,
    )
    assert bench.results.subscriptions is not None
    bench.results.subscriptions.failures += sender.failures
    if sender.failures:
        bench.results.subscriptions.server_log = child.log_tail()
    if subscribers:
        d.slow_spells = slow_spells(clients.starts, clients.latencies, min(clients.starts, default=0))
    else:  # the reference: where its slow mutations fall
        d.slow_spells = slow_spells(sender.starts, sender.latencies, min(sender.starts, default=0))
    bench.say(
        f"  {rate:5.0f} follows/s, {subscribers:,} subscribers: {d.delivered:,}/{d.expected:,} delivered, "
        f"p50 {d.p50_ms:.2f} ms p99 {d.p99_ms:.2f} ms max {d.max_ms:.2f} ms; mutation p50 "
        f"{d.mutation_p50_ms:.2f} ms; CPU server {d.server_cpu_percent:.0f}% "
        f"({d.server_cpu_ms_per_follow:.2f} ms/follow) client {d.client_cpu_percent:.0f}% "
        f"Redis {d.redis_cpu_percent:.0f}% others {d.others_cpu_percent:.0f}%; collector "
        f"{_passes(collections)}"
    )
    return d


async def _gc_off(
    bench: Bench,
    child: Child,
    log: Path,
    port: int,
    tokens: dict[str, str],
    users: list[str],
    follows: Follows,
) -> None:
    assert bench.results.subscriptions is not None
    clients = Clients(f"ws://127.0.0.1:{port}/graphql", tokens)
    sender = Sender(port, tokens)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        # The same history as the first server's: the sockets opened, a warm-up.
        for opened, reached in zip((0, *OPEN_STEPS), OPEN_STEPS, strict=False):
            await clients.open(users[opened:reached])
        await _subscriptions_reach(http, SUBSCRIBERS)
        warm_pairs = follows.take(WARMUP_FOLLOWS)
        await sender.steady(clients, warm_pairs, RATES[0])
        await _drained(clients, 2 * len(warm_pairs))
        d = await _round(bench, clients, sender, child, log, follows, RATES[-1], SUBSCRIBERS)
        d.server = GC_DISABLED
        bench.results.subscriptions.deliveries.append(d)
    await clients.close(list(clients.sockets))


async def _drained(clients: Clients, expected: int) -> None:
    """Wait until `expected` distinct deliveries arrived, or DRAIN_SECONDS without a new one."""
    last, seen = time.monotonic(), -1
    while len(clients.received) < expected:
        if len(clients.received) != seen:
            last, seen = time.monotonic(), len(clients.received)
        elif time.monotonic() - last > DRAIN_SECONDS:
            return
        await asyncio.sleep(0.01)
    # Anything doubled or stray would come right behind.
    await asyncio.sleep(0.2)


# -- the report's rows ------------------------------------------------------------------------------

DELIVERY_HEADERS = (
    "server",
    "subscribers",
    "follows/s asked",
    "sent/s",
    "follows",
    "mutations failed",
    "delivered / expected",
    "lost",
    "doubled",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "max ms",
    "mutation p50 / p99 ms",
    "sender late, max ms",
    "server CPU %",
    "server CPU ms per follow",
    "client CPU %",
    "Redis CPU %",
    "others' CPU %",
    "collections gen0 / 1 / 2",
    "collector ms: all / longest",
    "objects freed",
)
MEMORY_HEADERS = (
    "open subscriptions",
    "server RSS MiB",
    "KB per subscription (vs 0)",
    "KB per added (vs row above)",
    "extensions agreed",
    "Redis used_memory KiB",
    "Redis clients",
    "opened in s",
    "collections gen0 / 1 / 2",
    "collector ms: all / longest",
    "objects freed",
)


def delivery_rows(results: SubscriptionResults) -> list[list[str]]:
    return [
        [
            d.server,
            f"{d.subscribers:,}",
            f"{d.rate:g}",
            f"{d.achieved_rate:.0f}",
            f"{d.follows:,}",
            str(d.mutation_errors),
            f"{d.delivered:,} / {d.expected:,}",
            str(d.lost),
            str(d.doubled),
            *(
                [f"{d.p50_ms:.2f}", f"{d.p90_ms:.2f}", f"{d.p99_ms:.2f}", f"{d.max_ms:.2f}"]
                if d.expected
                else ["-"] * 4
            ),
            f"{d.mutation_p50_ms:.2f} / {d.mutation_p99_ms:.2f}",
            f"{d.behind_schedule_max_ms:.1f}",
            f"{d.server_cpu_percent:.0f}",
            f"{d.server_cpu_ms_per_follow:.2f}",
            f"{d.client_cpu_percent:.0f}",
            f"{d.redis_cpu_percent:.0f}",
            f"{d.others_cpu_percent:.0f}",
            *_collection_cells(d.collections),
        ]
        for d in results.deliveries
    ]


def _collection_cells(c: Collections | None) -> list[str]:
    """Passes by generation, their time (all, longest) and what they freed."""
    if c is None:
        return ["-"] * 3
    return [
        " / ".join(str(n) for n in c.passes),
        f"{c.total_ms:.1f} / {max(c.longest_ms):.1f}",
        f"{sum(c.collected):,}",
    ]


def _passes(c: Collections) -> str:
    return (
        f"gen0/1/2 passes {'/'.join(str(n) for n in c.passes)}, {c.total_ms:.1f} ms, "
        f"longest {max(c.longest_ms):.1f} ms"
    )


def memory_rows(results: SubscriptionResults) -> list[list[str]]:
    return [
        [
            s.label,
            f"{s.server_rss_kb / 1024:.1f}",
            f"{results.per_subscription_kb(s):.1f}" if s.added else "-",
            _kb(results.added_kb(s)),
            s.extensions or "-",
            f"{s.redis_used_memory / 1024:.1f}",
            str(s.redis_clients),
            f"{s.open_seconds:.1f}" if s.open_seconds else "-",
            *_collection_cells(s.collections),
        ]
        for s in results.memory
    ]


def _kb(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def delivery_notes(results: SubscriptionResults) -> list[str]:
    busiest = max((d.client_cpu_percent for d in results.deliveries), default=0.0)
    if busiest < 90:
        enough = f"one process was enough (at most {busiest:.0f}% of a core)"
    else:
        enough = (
            f"it took up to {busiest:.0f}% of a core, near saturation: latencies there include the "
            "client's own queueing"
        )
    notes = [
        "One `followgraph serve` (1 worker, on the server's CPU, its own Redis, the in-process SQL "
        "copy off: FOLLOWGRAPH_SYNC=0, the change log still written and read) holding "
        f"{results.subscribers:,} WebSocket connections, each subscribed to viewerEvents as a distinct "
        "user. Follows are sent "
        "through HTTP (POST /graphql) at a steady rate (open loop: each is written at its due time, not "
        "after the previous answer), each by one subscriber to another, so each is pushed to two "
        "subscriptions; delivered counts distinct (follow, subscriber) pairs, lost and doubled are "
        "against those expected: two per follow answered `changed: true` (a failed mutation, counted "
        "apart, expects none). Latency: from writing the mutation's request to the subscriber's "
        "socket reading the event, both in the client's process (one clock, perf_counter). Mutation "
        "p50/p99: the HTTP round trip of the follow itself. The rows with 0 subscribers are the "
        "reference: the same rates with no subscription open (the same server, before the sockets), "
        "so server CPU ms per follow beside them shows what pushing each follow to two subscriptions "
        "costs. The last row: a second server on the same Redis, started with Python's cyclic garbage "
        "collector disabled (`gc.disable()` before `followgraph serve`), the same "
        f"{results.subscribers:,} subscribers and the heavier rate: a reference that shows what the "
        "collector's pauses cost, not a setting. Collections: the server's cyclic collector passes "
        "from the rate's first follow to its last delivery, by generation, and their time in ms (all "
        "of them, and the longest): bench/collector.py runs `followgraph serve` with a gc.callbacks "
        "hook that times each pass.",
        f"Client: {results.client}, pinned with Redis to the load generator's CPU, its own cyclic "
        f"collector off while it times a rate; {enough}. On this "
        "2-core machine the client competes with Redis for its core, not with the server. CPU %: of "
        "one core, over the rate's sending and draining; others' CPU %: processes outside the "
        "benchmark (the machine is shared), which disturb the tail when high.",
    ]
    spells = [
        f"{d.rate:g}/s{'' if d.server == SERVED else ', gc disabled'}: "
        + (", ".join(f"{n:.0f} from {t:.1f}s for {w:.2f}s" for t, w, n in d.slow_spells[:4]) or "none")
        for d in results.deliveries
        if d.expected
    ]
    spells += [
        f"mutations at {d.rate:g}/s with 0 subscribers: "
        + (", ".join(f"{n:.0f} from {t:.1f}s for {w:.2f}s" for t, w, n in d.slow_spells[:4]) or "none")
        for d in results.deliveries
        if not d.expected
    ]
    notes.append(
        f"Deliveries slower than {SLOW_MS:g} ms, by spell (written at seconds into the round): "
        + "; ".join(spells)
        + ". Mutations slow at the same moments point at the server or the machine, not the push."
    )
    notes.append(
        "Sender late: how long after its due time the sender wrote a follow, at worst (a starved "
        "client or all its connections waiting on the server); the latencies start at the write. "
        f"Open files of the client: {results.open_files}."
    )
    stray = sum(d.unexpected for d in results.deliveries)
    errors = sum(d.mutation_errors for d in results.deliveries)
    if stray or errors or results.problems:
        notes.append(
            f"Unexpected events: {stray}; mutations failed: {errors} (the first answers: "
            + (" | ".join(results.failures[:3]) or "none")
            + "); socket problems: "
            + ("; ".join(results.problems[:5]) or "none")
        )
    return notes


def memory_notes(results: SubscriptionResults) -> list[str]:
    left = results.left_per_subscription
    return [
        "Server RSS: VmRSS of the server process (/proc/PID/status), read 1 s after the server's "
        "subscriptions gauge reached the count; the baseline is taken after 20 sockets have subscribed, "
        "received an event and closed, so first-use imports and caches are not charged to the "
        "subscriptions. KB per subscription: (RSS - RSS with 0) / subscriptions; each is one "
        "connection with one viewerEvents operation (Strawberry's handler, its tasks, the hub's queue). "
        "Kernel socket buffers are not in RSS. Every socket offers permessage-deflate, as browsers do; "
        "`serve` agrees to none (extensions agreed), so no socket keeps a compressor.",
        "Collections: the server's cyclic collector passes while the row's sockets opened, by "
        "generation, their time in ms (all, longest) and the objects they freed. The last row: from "
        "the closing of every socket to a full collection asked of the server (SIGUSR1 to "
        "bench/collector.py) once the connections gauge is 0; what it freed is what the "
        "subscriptions left to the collector"
        + ("." if left is None else f": {left:.1f} objects per subscription."),
        redis_note(results),
    ]


def redis_note(results: SubscriptionResults) -> str:
    steps = results.memory
    if len(steps) < 3:
        return ""
    base, first, last = steps[0], steps[1], steps[-2]

    def used(a: MemoryStep, b: MemoryStep) -> str:
        return f"{(b.redis_used_memory - a.redis_used_memory) / 1024:+.0f} KiB"

    text = (
        "Redis: connected clients (the harness' own connection left out) and used_memory. The server "
        "reads the change log through one connection and keeps its subscribers in its own memory. "
    )
    if first.redis_clients != base.redis_clients:
        text += (
            f"Clients went from {base.redis_clients} to {first.redis_clients} while the first "
            f"{first.subscriptions:,} sockets subscribed, {OPENING} at a time: the server's pool of "
            "Redis connections (at most 64) growing under the burst, as each subscribe reads the "
            f"viewer's mutes; used_memory {used(base, first)} with those connections' buffers. From "
            f"{first.subscriptions:,} to {last.subscriptions:,} subscriptions: clients "
            f"{first.redis_clients} -> {last.redis_clients}, used_memory {used(first, last)}. "
        )
    else:
        text += (
            f"From 0 to {last.subscriptions:,} subscriptions: clients {base.redis_clients} -> "
            f"{last.redis_clients}, used_memory {used(base, last)}. "
        )
    return text + "RSS in the last row, once every socket closed: Python keeps freed memory for reuse."
