"""Slow and oversized clients against a real `followgraph serve` (transport/http_protocol.py).

Every connection here is a raw socket on 127.0.0.1, so the test controls each byte and its timing.
The waits are bounded so that a server that never closes a connection fails the test, not hangs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from followgraph.server.redis_server import RedisServer
from followgraph.transport.http_protocol import PROBE_SLOTS, JoinedWrites, _ProbeSlots
from tests.conftest import TEST_SECRET
from tests.server.processes import ServeProcess, serve

log = logging.getLogger(__name__)

HEADER_TIMEOUT = 1.0
REQUEST_TIMEOUT = 2.0
# How much longer than a deadline a test waits for the server to act on it.
SLACK = 5.0
HEALTHZ = b"GET /healthz HTTP/1.1\r\nhost: t\r\n\r\n"


def environment(redis: RedisServer, **settings: str) -> dict[str, str]:
    return {
        "FOLLOWGRAPH_REDIS_URL": redis.url,
        "FOLLOWGRAPH_JWT_SECRET": TEST_SECRET,
        "FOLLOWGRAPH_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
        "FOLLOWGRAPH_REQUEST_TIMEOUT": str(REQUEST_TIMEOUT),
        "FOLLOWGRAPH_LOG_LEVEL": "warning",
        **settings,
    }


@pytest.fixture(scope="module")
def server(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serve(tmp_path_factory.mktemp("serve"), "--production", env=environment(redis_server)) as served:
        yield served


async def connect(server: ServeProcess) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port)


async def answer(reader: asyncio.StreamReader, within: float) -> bytes:
    """Everything the server sends until it closes the connection (TimeoutError if it does not)."""
    async with asyncio.timeout(within):
        try:
            return await reader.read(-1)
        except ConnectionResetError:
            return b""


async def close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def healthz(server: ServeProcess) -> bytes:
    reader, writer = await connect(server)
    writer.write(HEALTHZ)
    async with asyncio.timeout(SLACK):
        status = await reader.readline()
    await close(writer)
    return status


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else 0


# Header deadline


async def test_silent_and_half_header_connections_are_closed_after_the_header_timeout(
    server: ServeProcess,
) -> None:
    silent = [await connect(server) for _ in range(200)]
    half = [await connect(server) for _ in range(200)]
    for _, writer in half:
        writer.write(b"GET / HTTP/1.1\r\n")

    answers = await asyncio.gather(*(answer(reader, HEADER_TIMEOUT + SLACK) for reader, _ in silent + half))

    assert answers[:200] == [b""] * 200  # nothing of a request came: closed without a word
    assert {status_of(a) for a in answers[200:]} == {408}
    assert status_of(await healthz(server)) == 200
    for _, writer in silent + half:
        await close(writer)


async def test_headers_trickled_a_byte_at_a_time_do_not_extend_the_deadline(server: ServeProcess) -> None:
    reader, writer = await connect(server)
    request = b"GET /healthz HTTP/1.1\r\nhost: t\r\nx-slow: " + b"x" * 1000 + b"\r\n\r\n"
    started = time.monotonic()

    async def trickle() -> None:
        for byte in request:
            writer.write(bytes([byte]))
            await asyncio.sleep(0.05)

    sender = asyncio.create_task(trickle())
    response = await answer(reader, HEADER_TIMEOUT + SLACK)
    sender.cancel()

    assert status_of(response) == 408
    assert time.monotonic() - started < HEADER_TIMEOUT + SLACK
    await close(writer)


async def test_a_keep_alive_connection_outlives_the_header_timeout_while_it_is_used(
    server: ServeProcess,
) -> None:
    reader, writer = await connect(server)
    for _ in range(4):  # 2 s in all, twice the header timeout
        writer.write(HEALTHZ)
        assert status_of(await reader.readuntil(b'{"status":"ok"}')) == 200
        await asyncio.sleep(HEADER_TIMEOUT / 2)
    await close(writer)


async def test_a_malformed_request_is_still_400(server: ServeProcess) -> None:
    reader, writer = await connect(server)
    writer.write(b"NOT HTTP AT ALL\r\n\r\n")

    assert status_of(await answer(reader, SLACK)) == 400
    await close(writer)


# A response's head and body in one write


class Recorded:
    """A transport that keeps what is written to it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def joined(transport: Recorded) -> JoinedWrites:
    return JoinedWrites(transport, asyncio.get_running_loop())  # type: ignore[arg-type]


async def test_a_head_and_body_written_in_one_turn_go_out_in_one_write() -> None:
    transport = Recorded()
    writes = joined(transport)
    writes.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    assert transport.writes == []
    writes.write(b"{}")
    assert transport.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    await asyncio.sleep(0)
    assert len(transport.writes) == 1


async def test_a_write_alone_goes_out_at_the_end_of_its_turn_in_order() -> None:
    transport = Recorded()
    writes = joined(transport)
    writes.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # the client waits for it before its body
    await asyncio.sleep(0)
    assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    writes.write(b"head")
    await asyncio.sleep(0)
    writes.write(b"chunk 1")
    writes.write(b"chunk 2")
    writes.write(b"last")
    await asyncio.sleep(0)
    assert b"".join(transport.writes) == b"HTTP/1.1 100 Continue\r\n\r\nheadchunk 1chunk 2last"


async def test_closing_sends_what_is_held_first_and_a_closed_transport_gets_nothing() -> None:
    transport = Recorded()
    writes = joined(transport)
    writes.write(b"head")
    writes.close()
    assert transport.writes == [b"head"] and transport.closed
    gone = Recorded()
    writes = joined(gone)
    writes.write(b"head")
    gone.closed = True  # the client went away within the turn
    await asyncio.sleep(0)
    assert gone.writes == []
    assert writes.is_closing() and writes.get_extra_info("peername") == "info peername"


async def test_pipelined_requests_are_answered_whole_and_in_order(server: ServeProcess) -> None:
    reader, writer = await connect(server)
    writer.write(HEALTHZ + b"GET /nowhere HTTP/1.1\r\nhost: t\r\n\r\n" + HEALTHZ)
    async with asyncio.timeout(SLACK):
        answers = await reader.readuntil(b'{"status":"ok"}')
        answers += await reader.readuntil(b'{"status":"ok"}')
    assert re.findall(rb"HTTP/1.1 (\d+) ", answers) == [b"200", b"404", b"200"]
    await close(writer)


async def test_100_continue_is_sent_before_the_body_arrives(server: ServeProcess) -> None:
    body = b'{"query": "{ __typename }"}'
    reader, writer = await connect(server)
    writer.write(
        b"POST /graphql HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
        b"expect: 100-continue\r\ncontent-length: %d\r\n\r\n" % len(body)
    )
    async with asyncio.timeout(SLACK):
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        writer.write(body)
        response = await reader.readuntil(b'"Query"}}')
    assert status_of(response) == 200
    await close(writer)


# Body deadline


async def test_a_body_trickled_past_the_request_timeout_is_answered_408_in_time(server: ServeProcess) -> None:
    reader, writer = await connect(server)
    body = b'{"query": "{ viewer { userId } }"}'.ljust(200)
    writer.write(
        b"POST /graphql HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n" % len(body)
    )
    started = time.monotonic()

    async def trickle() -> None:  # 200 bytes at 20 a second: 10 s, five times the request timeout
        for byte in body:
            writer.write(bytes([byte]))
            await asyncio.sleep(0.05)

    sender = asyncio.create_task(trickle())
    async with asyncio.timeout(REQUEST_TIMEOUT + SLACK):
        status = await reader.readline()
    elapsed = time.monotonic() - started
    sender.cancel()

    assert status_of(status) == 408
    assert elapsed < REQUEST_TIMEOUT + 1.5, elapsed
    await close(writer)


async def test_a_body_trickled_to_a_route_that_reads_none_is_cut_off(server: ServeProcess) -> None:
    reader, writer = await connect(server)
    writer.write(b"POST /healthz HTTP/1.1\r\nhost: t\r\ncontent-length: 1000\r\n\r\n")
    assert status_of(await reader.readline()) == 405

    async def trickle() -> None:
        for _ in range(1000):
            writer.write(b"x")
            await asyncio.sleep(0.05)

    sender = asyncio.create_task(trickle())
    rest = await answer(reader, REQUEST_TIMEOUT + SLACK)  # closed, however long the client trickles
    sender.cancel()
    assert b"HTTP/1.1" not in rest.split(b"\r\n\r\n", 1)[1]  # the 405's body, no second answer
    await close(writer)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        (b"content-type: application/json\r\ncontent-length: 100", 408),  # when the app's time runs out
        (b"content-type: text/plain\r\ncontent-length: 100", 415),  # at once
        (b"content-type: application/json\r\ncontent-length: 2000000", 413),  # at once
    ],
)
async def test_a_request_answered_before_its_body_arrived_gets_one_answer(
    server: ServeProcess, headers: bytes, status: int
) -> None:
    reader, writer = await connect(server)
    writer.write(b"POST /graphql HTTP/1.1\r\nhost: t\r\n" + headers + b"\r\n\r\n{")
    response = await answer(reader, REQUEST_TIMEOUT + SLACK)

    assert status_of(response) == status
    assert response.count(b"HTTP/1.1 ") == 1, response  # then closed, without the protocol's 408
    await close(writer)


# Header size


async def test_a_complete_request_with_a_20_mb_header_is_431(server: ServeProcess) -> None:
    reader, writer = await connect(server)
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: t\r\nx-big: " + b"x" * 20_000_000 + b"\r\n\r\n")

    response = await answer(reader, SLACK)

    assert status_of(response) == 431
    await close(writer)


async def test_headers_just_under_the_limit_are_served(server: ServeProcess) -> None:
    reader, writer = await connect(server)
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: t\r\nx-big: " + b"x" * 30_000 + b"\r\n\r\n")

    assert status_of(await reader.readline()) == 200
    await close(writer)


async def test_many_headers_adding_up_past_the_limit_are_431(server: ServeProcess) -> None:
    reader, writer = await connect(server)
    headers = b"".join(b"x-h%d: %s\r\n" % (i, b"v" * 100) for i in range(400))
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: t\r\n" + headers + b"\r\n")

    assert status_of(await answer(reader, SLACK)) == 431
    await close(writer)


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.mark.slow
async def test_memory_stays_bounded_under_50_connections_sending_20_mb_headers(server: ServeProcess) -> None:
    # Reset the peak resident size (VmHWM), so that what follows is the peak of this test alone.
    Path(f"/proc/{server.pid}/clear_refs").write_text("5")
    before = memory_kb(server.pid, "VmRSS")
    chunk = b"x" * (1 << 20)

    async def unfinished_header() -> bytes:
        reader, writer = await connect(server)
        try:
            writer.write(b"GET /healthz HTTP/1.1\r\nhost: t\r\nx-big: ")
            for _ in range(20):  # 20 MB that never ends
                writer.write(chunk)
                await writer.drain()
        except OSError:
            pass
        try:
            return await answer(reader, SLACK)
        finally:
            await close(writer)

    async with asyncio.timeout(60):
        answers = await asyncio.gather(*(unfinished_header() for _ in range(50)))

    grown_mb = (memory_kb(server.pid, "VmHWM") - before) / 1024
    log.info(
        "50 clients sending 20 MB headers: resident memory %d MB, peak +%.1f MB", before / 1024, grown_mb
    )
    assert grown_mb < 50, f"the server grew by {grown_mb:.0f} MB"
    # A client that kept sending after the 431 may see a reset instead of the answer.
    assert {status_of(a) for a in answers} <= {431, 0}
    assert status_of(await healthz(server)) == 200


# Connection cap


async def get(server: ServeProcess, path: bytes) -> int:
    """The status of `GET path` on a connection of its own."""
    reader, writer = await connect(server)
    writer.write(b"GET %s HTTP/1.1\r\nhost: t\r\n\r\n" % path)
    async with asyncio.timeout(SLACK):
        line = await reader.readline()
    await close(writer)
    return status_of(line)


async def test_connections_beyond_the_cap_are_answered_503_but_the_probes_are_not(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    env = environment(redis_server, FOLLOWGRAPH_MAX_CONNECTIONS="20", FOLLOWGRAPH_HEADER_TIMEOUT="30")
    with serve(tmp_path, env=env) as capped:
        held = [await connect(capped) for _ in range(20)]
        await asyncio.sleep(0.2)

        over = [await get(capped, path) for path in (b"/graphql", b"/nowhere")]
        # A liveness probe that failed here would restart the process under a flood (#36).
        probes = await asyncio.gather(*(get(capped, path) for path in (b"/healthz", b"/readyz") * 3))
        for _, writer in held:
            await close(writer)
        await asyncio.sleep(0.5)
        after = await get(capped, b"/nowhere")

    assert over == [503, 503]
    assert probes == [200] * 6
    assert after == 404


async def test_probes_beyond_the_cap_run_at_most_probe_slots_at_a_time() -> None:
    slots = _ProbeSlots()
    answered = asyncio.Event()
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def probe(scope: Any, receive: Any, send: Any) -> None:
        await answered.wait()  # a probe in progress: /readyz waiting for Redis
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    running = [asyncio.create_task(slots.run(probe, {}, receive, send)) for _ in range(PROBE_SLOTS + 2)]
    await asyncio.sleep(0.01)
    busy = slots.busy
    refused = list(statuses)
    answered.set()
    await asyncio.gather(*running)
    await slots.run(probe, {}, receive, send)  # the slots are free again

    assert (busy, refused) == (PROBE_SLOTS, [503, 503])
    assert statuses == [503, 503] + [200] * (PROBE_SLOTS + 1)
    assert slots.busy == 0
