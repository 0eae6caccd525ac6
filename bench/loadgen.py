"""A closed-loop HTTP/1.1 load generator: asyncio (uvloop) protocols on keep-alive connections.

Used when `wrk` is not on PATH. Each of `concurrency` connections sends a request, waits for the
whole response, and sends the next one at once. Responses are parsed just enough to be checked:
status line, Content-Length, and the body for a GraphQL error (`"errors":[{`). Latencies are
recorded only during the measured window after the warm-up; requests still in flight when it
ends are completed (and counted in `total`) but not measured.

Runs in its own process, so it can be pinned to a CPU of its own:
`python -m bench.loadgen < spec.json` prints the result as JSON on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import cast

import uvloop

ERROR_MARK = b'"errors":[{'


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """A POST of a JSON body; `follow_cycle` makes each connection alternate follow/unfollow."""

    path: str
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    follow_cycle: FollowCycle | None = None


@dataclass(frozen=True, slots=True)
class FollowCycle:
    """Connection c walks its own slice of the targets, following a target and then unfollowing
    it (every call changes the graph); pair p of connection c is done by the viewer of
    tokens[(c + p * concurrency) % len(tokens)], which spreads the follows over many users."""

    tokens: list[str]
    target_prefix: str
    first_target: int
    targets: int
    follow_query: str
    unfollow_query: str


@dataclass(frozen=True, slots=True)
class LoadSpec:
    host: str
    port: int
    concurrency: int
    warmup: float
    duration: float
    request: RequestSpec

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> LoadSpec:
        raw = json.loads(text)
        req = raw.pop("request")
        cycle = req.pop("follow_cycle")
        request = RequestSpec(**req, follow_cycle=None if cycle is None else FollowCycle(**cycle))
        return cls(**raw, request=request)


@dataclass(frozen=True, slots=True)
class LoadResult:
    loader: str
    requests: int  # completed within the measured window
    seconds: float
    rps: float
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    errors: int  # non-200 or GraphQL errors in the measured window
    total: int  # every completed request, warm-up and drain included (for per-request Redis counts)
    connection_errors: int = 0

    @classmethod
    def from_json(cls, text: str) -> LoadResult:
        return cls(**json.loads(text))


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


def summarize(
    loader: str, latencies_ns: list[int], seconds: float, errors: int, total: int, conn_errors: int
) -> LoadResult:
    ms = sorted(v / 1e6 for v in latencies_ns)
    n = len(ms)
    return LoadResult(
        loader=loader,
        requests=n,
        seconds=seconds,
        rps=n / seconds if seconds else 0.0,
        mean_ms=sum(ms) / n if n else 0.0,
        p50_ms=percentile(ms, 0.50),
        p90_ms=percentile(ms, 0.90),
        p99_ms=percentile(ms, 0.99),
        max_ms=ms[-1] if ms else 0.0,
        errors=errors,
        total=total,
        connection_errors=conn_errors,
    )


def build_request(host: str, port: int, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Requests:
    """The next request of each connection."""

    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        req = spec.request
        self.static = build_request(spec.host, spec.port, req.path, req.body.encode(), req.headers)
        self.steps = [0] * spec.concurrency

    def next(self, conn: int) -> bytes:
        cycle = self.spec.request.follow_cycle
        if cycle is None:
            return self.static
        step = self.steps[conn]
        self.steps[conn] = step + 1
        span = max(1, cycle.targets // self.spec.concurrency)
        pair = step // 2
        target = f"{cycle.target_prefix}{cycle.first_target + conn * span + pair % span}"
        query = cycle.follow_query if step % 2 == 0 else cycle.unfollow_query
        body = json.dumps({"query": query, "variables": {"userId": target}}).encode()
        token = cycle.tokens[(conn + pair * self.spec.concurrency) % len(cycle.tokens)]
        headers = {**self.spec.request.headers, "Authorization": f"Bearer {token}"}
        return build_request(self.spec.host, self.spec.port, self.spec.request.path, body, headers)


class Run:
    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        self.requests = Requests(spec)
        self.recording = False
        self.stopping = False
        self.latencies: list[int] = []
        self.errors = 0
        self.total = 0
        self.connection_errors = 0
        self.active = 0
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def finished_connection(self) -> None:
        self.active -= 1
        if self.active == 0 and not self.done.done():
            self.done.set_result(None)


class Client(asyncio.Protocol):
    def __init__(self, run: Run, index: int) -> None:
        self.run = run
        self.index = index
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.body_start = -1
        self.need = -1
        self.status = 0
        self.started = 0
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def send(self) -> None:
        assert self.transport is not None
        self.started = time.perf_counter_ns()
        self.transport.write(self.run.requests.next(self.index))

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        if self.need < 0:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end]).lower()
            self.status = int(head[9:12])
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                self.fail()
                return
            stop = head.find(b"\r\n", at + 2)
            length = int(head[at + 17 : end if stop < 0 else stop])
            self.body_start = end + 4
            self.need = self.body_start + length
        if len(buf) < self.need:
            return
        elapsed = time.perf_counter_ns() - self.started
        run = self.run
        run.total += 1
        if run.recording:
            run.latencies.append(elapsed)
            if self.status != 200 or buf.find(ERROR_MARK, self.body_start, self.need) >= 0:
                run.errors += 1
        del buf[: self.need]
        self.need = -1
        if run.stopping:
            self.close()
        else:
            self.send()

    def fail(self) -> None:
        self.run.connection_errors += 1
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.close()
            self.run.finished_connection()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed:
            self.run.connection_errors += 1
            self.closed = True
            self.run.finished_connection()


async def drive(spec: LoadSpec) -> LoadResult:
    loop = asyncio.get_running_loop()
    run = Run(spec)
    clients: list[Client] = []

    def factory(index: int) -> Callable[[], Client]:
        return lambda: Client(run, index)

    for index in range(spec.concurrency):
        _, client = await loop.create_connection(factory(index), spec.host, spec.port)
        clients.append(client)
    run.active = len(clients)
    for client in clients:
        client.send()
    await asyncio.sleep(spec.warmup)
    run.recording = True
    started = time.perf_counter()
    await asyncio.sleep(spec.duration)
    run.recording = False
    seconds = time.perf_counter() - started
    run.stopping = True
    try:
        await asyncio.wait_for(run.done, timeout=30)
    except TimeoutError:
        for client in clients:
            client.close()
    return summarize("python-asyncio", run.latencies, seconds, run.errors, run.total, run.connection_errors)


def main() -> None:
    spec = LoadSpec.from_json(sys.stdin.read())
    result = uvloop.run(drive(spec))
    sys.stdout.write(json.dumps(asdict(result)) + "\n")


if __name__ == "__main__":
    main()
