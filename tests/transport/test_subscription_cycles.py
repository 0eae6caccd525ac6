"""A subscription, from its socket's upgrade to its end, leaves nothing to the cyclic collector: the
server frees its socket, handler, tasks and execution by reference counting alone, so that
thousands of them ending make no work for the collector's pauses. On the real Redis server, with
the HTTP protocol and the event loop `serve` runs (uvloop: asyncio's own socket transport keeps a
bound method of itself, a cycle of every connection, which uvloop's has not); the clients run in a
process of their own."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import uvloop

from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from tests.conftest import TEST_SECRET
from tests.live import Live, serve_live

SUBSCRIPTIONS = 40
# The connection's header deadline: its timer has fired before the sockets close.
HEADER_SECONDS = 0.2


class Clients:
    """The subscribers' process (tests/transport/subscribing_clients.py)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        # The events the sockets have received so far, all rounds together (the process counts so).
        self.expected = 0

    async def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()
        async with asyncio.timeout(30):
            return (await self.process.stdout.readline()).decode().strip()

    async def received(self, count: int) -> None:
        """Wait until the sockets have received `count` events more."""
        self.expected += count
        async with asyncio.timeout(10):
            while await self.ask("received") != f"received {self.expected}":
                await asyncio.sleep(0.02)


@asynccontextmanager
async def clients(ws_url: str) -> AsyncIterator[Clients]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.transport.subscribing_clients",
        ws_url,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        yield Clients(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        async with asyncio.timeout(10):
            await process.wait()


@dataclass
class Left:
    """What the collector found unreachable: how many objects, and of which types."""

    count: int = 0
    kinds: Counter[str] = field(default_factory=Counter)


@contextmanager
def left_to_collector() -> Iterator[Left]:
    """Count the objects that only the cyclic collector frees, made within the block."""
    left = Left()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield left
        left.count = gc.collect()
        left.kinds = Counter(type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


async def subscribe_and_end(live: Live, sockets: Clients, users: list[str], end: str) -> None:
    """Subscriptions of `users`, an event to each (a follow between each two), then their end: a
    `complete` before the socket closes, or the socket closing."""
    assert await sockets.ask("open " + " ".join(live.token(user) for user in users)) == f"opened {len(users)}"
    await live.subscribers(len(users))
    for actor, target in zip(users[::2], users[1::2], strict=True):
        await live.store.follow(follower=actor, followee=target)
    await sockets.received(len(users))
    await asyncio.sleep(HEADER_SECONDS)
    if end == "complete":
        assert await sockets.ask("complete") == "completed"
        await live.subscribers(0)
    assert await sockets.ask("close") == "closed"
    await closed(live)


async def closed(live: Live) -> None:
    """Wait until the server holds no socket and no subscription (read from its registry: an HTTP
    client of this process would leave objects of its own to the collector)."""
    registry = live.app.state.metrics.registry
    names = ("followgraph_ws_connections", "followgraph_subscriptions")
    async with asyncio.timeout(10):
        while any(registry.get_sample_value(name) for name in names) or live.hub.subscribers:
            await asyncio.sleep(0.02)


async def left_by_subscriptions(redis_server: RedisServer, tmp_path: Path, end: str) -> Left:
    client = connect(redis_server.url, timeout=10.0)
    await client.flushall()
    base = Settings(
        data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, database_url="off", search_index=False
    )
    settings = dataclasses.replace(base, header_timeout=HEADER_SECONDS, ws_ping_seconds=60)
    users = [f"u{n}" for n in range(SUBSCRIPTIONS + 2)]
    try:
        async with serve_live(settings, client, guarded=True) as live, clients(live.ws_url) as sockets:
            await live.register(*users)
            # First use (the hub's reader, caches) outside the count.
            await subscribe_and_end(live, sockets, users[-2:], end)
            with left_to_collector() as left:
                await subscribe_and_end(live, sockets, users[:SUBSCRIPTIONS], end)
    finally:
        await client.aclose()
    return left


@pytest.mark.parametrize("end", ["complete", "close"])
def test_a_subscription_leaves_nothing_to_the_cyclic_collector(
    redis_server: RedisServer, tmp_path: Path, end: str
) -> None:
    left = uvloop.run(left_by_subscriptions(redis_server, tmp_path, end))

    # Each used to leave 150 to 230 objects: its socket and handler in a cycle with the handler's
    # tasks, the operation in one with its cancelled task, the executor with its own helpers, and
    # uvicorn's HTTP protocol with its parser after the upgrade.
    assert left.count == 0, left.kinds.most_common(12)
