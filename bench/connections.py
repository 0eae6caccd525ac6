"""What the connection guards cost (transport/http_protocol.py): `python -m bench.connections`.

1. The protocol alone, in process: CPU time per keep-alive request fed to uvicorn's stock
   httptools protocol and to the guarded one, with an app that answers at once (no sockets, so
   the difference is the guards' own work and the joined writes').
2. Hot path: the same app under the stock protocol and under the guarded one,
   alternated over several rounds, keep-alive connections posting `{ __typename }` to /graphql.
3. Idle connections: the guarded server with 0 and with 1,000 idle connections held open (each
   sent `GET / HTTP/1.1\\r\\n` and nothing more; the header timeout is raised for the run so that
   they stay), and the same load beside them.

Prints a table; the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from bench.cpu import process_seconds
from bench.loadgen import LoadResult, LoadSpec, RequestSpec, drive
from bench.processes import free_port, wait_http
from followgraph.server.redis_server import RedisServer

SECRET = "bench-secret-that-is-long-enough-for-hs256!"


def serve(protocol: str, port: int, redis_url: str, header_timeout: float) -> None:
    """In the server process: the app on `port` with the stock or the guarded protocol."""
    from followgraph.server.app import create_app
    from followgraph.server.settings import Settings
    from followgraph.transport.http_protocol import GuardedHttpToolsProtocol

    settings = Settings(
        port=port,
        redis_url=redis_url,
        jwt_secret=SECRET,
        production=True,
        log_level="error",
        header_timeout=header_timeout,
        data_dir=Path(tempfile.mkdtemp()),
    )
    http: object = "httptools"
    if protocol == "guarded":
        http = GuardedHttpToolsProtocol.with_limits(settings.read_limits)
    uvicorn.run(
        create_app(settings),
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http=http,  # type: ignore[arg-type]
        log_config=None,
        access_log=False,
        log_level="error",
        limit_concurrency=settings.max_connections if protocol == "guarded" else None,
    )


REQUEST = (
    b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 27\r\n"
    b'authorization: Bearer abc\r\n\r\n{"query": "{ __typename }"}'
)


async def answer_at_once(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


class NullTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, data: Any) -> None:
        self.writes += 1

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 80), "peername": ("127.0.0.1", 5000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def protocol_microseconds(http: Any, requests: int) -> float:
    """CPU microseconds per request of `http` (a protocol class) fed `requests` requests in process."""
    loop = uvloop.new_event_loop()
    config = uvicorn.Config(app=answer_at_once, http=http, log_config=None, access_log=False)
    config.load()
    protocol = config.http_protocol_class(  # type: ignore[call-arg]
        config=config, server_state=ServerState(), app_state={}, _loop=loop
    )
    transport = NullTransport()
    protocol.connection_made(transport)

    async def feed() -> None:
        for _ in range(requests):
            protocol.data_received(REQUEST)
            await asyncio.sleep(0)  # the request's task runs and answers
            await asyncio.sleep(0)

    started = time.process_time()
    loop.run_until_complete(feed())
    seconds = time.process_time() - started
    loop.close()
    assert transport.writes >= requests
    return seconds / requests * 1e6


class Server:
    def __init__(self, protocol: str, redis_url: str, header_timeout: float = 5.0) -> None:
        self.port = free_port()
        command = [sys.executable, "-m", "bench.connections", "--serve", protocol, str(self.port), redis_url]
        self.process = subprocess.Popen([*command, str(header_timeout)], stderr=subprocess.DEVNULL)

    def __enter__(self) -> Server:
        from bench.processes import Child

        wait_http(Child("server", self.process), self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(30)


Measured = tuple[LoadResult, float]  # the load's result, server CPU microseconds per request


def load(server: Server, seconds: float, concurrency: int) -> Measured:
    return with_idle(server, 0, seconds, concurrency)


async def hold_idle(port: int, count: int) -> list[asyncio.StreamWriter]:
    writers = []
    for _ in range(count):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\n")
        writers.append(writer)
    return writers


def with_idle(server: Server, idle: int, seconds: float, concurrency: int) -> Measured:
    async def run() -> Measured:
        writers = await hold_idle(server.port, idle)
        cpu = process_seconds(server.process.pid)
        try:
            result = await drive(
                LoadSpec(
                    "127.0.0.1",
                    server.port,
                    concurrency,
                    warmup=1.0,
                    duration=seconds,
                    request=RequestSpec("/graphql", body='{"query": "{ __typename }"}'),
                )
            )
        finally:
            for writer in writers:
                writer.close()
        return result, (process_seconds(server.process.pid) - cpu) / result.total * 1e6

    return uvloop.run(run())


def row(name: str, results: list[Measured]) -> str:
    rps = statistics.median(r.rps for r, _ in results)
    p50 = statistics.median(r.p50_ms for r, _ in results)
    p99 = statistics.median(r.p99_ms for r, _ in results)
    cpu = statistics.median(us for _, us in results)
    errors = sum(r.errors for r, _ in results)
    return f"| {name} | {rps:,.0f} | {p50:.2f} | {p99:.2f} | {cpu:.0f} | {errors} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--serve", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        protocol, port, redis_url, header_timeout = args.serve
        serve(protocol, int(port), redis_url, float(header_timeout))
        return
    from followgraph.transport.http_protocol import GuardedHttpToolsProtocol, ReadLimits

    protocols = {"stock": HttpToolsProtocol, "guarded": GuardedHttpToolsProtocol.with_limits(ReadLimits())}
    micro: dict[str, list[float]] = {name: [] for name in protocols}
    for _ in range(args.rounds * 2):
        for name, http in protocols.items():
            micro[name].append(protocol_microseconds(http, 50_000))
    print(f"The protocol alone: CPU µs per request, median of {args.rounds * 2} rounds of 50,000.")
    print("| protocol | µs/request |\n| --- | --- |")
    for name, values in micro.items():
        print(f"| {name} | {statistics.median(values):.2f} |")
    print()
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as redis:
        hot: dict[str, list[Measured]] = {"stock": [], "guarded": []}
        for _ in range(args.rounds):
            for protocol in hot:
                with Server(protocol, redis.url) as server:
                    hot[protocol].append(load(server, args.seconds, args.concurrency))
        idle: dict[str, list[Measured]] = {"0 idle": [], "1,000 idle": []}
        with Server("guarded", redis.url, header_timeout=300.0) as server:
            for _ in range(args.rounds):
                idle["0 idle"].append(with_idle(server, 0, args.seconds, args.concurrency))
                idle["1,000 idle"].append(with_idle(server, 1000, args.seconds, args.concurrency))
    header = (
        "| {} | req/s | p50 ms | p99 ms | server CPU µs/request | errors |\n"
        "| --- | --- | --- | --- | --- | --- |"
    )
    print(f"Median of {args.rounds} rounds of {args.seconds:g} s, {args.concurrency} keep-alive connections.")
    print(header.format("protocol"))
    for name, results in hot.items():
        print(row(name, results))
    print()
    print(header.format("guarded server with"))
    for name, results in idle.items():
        print(row(name, results))


if __name__ == "__main__":
    main()
