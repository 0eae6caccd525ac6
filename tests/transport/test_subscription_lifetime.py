"""A subscription lives no longer than its socket, nor past its `complete`, whenever the cancel lands
(#36): the user's slots and the gauges come back. On the real Redis server, through the server's own
kind of client, whose commands redis-py sends through asyncio.wait_for; that wait_for (Python 3.11)
returns a finished call's result when a cancel lands just then, and subscriptions so cancelled used
to wait for events forever."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import types
from collections.abc import AsyncIterator, Coroutine, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import Operation
from websockets.exceptions import ConnectionClosed

from followgraph.resolvers.context import Context
from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.transport.subscriptions import TransportWSHandler
from tests.conftest import TEST_SECRET
from tests.live import Live, serve_live
from tests.subscriber import Raw, raw

# Rounds of each kind: each lets the start-up run one more turn of the event loop before the cancel.
ROUNDS = 30


@pytest.fixture
async def live(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Live]:
    client = connect(redis_server.url, timeout=10.0)
    await client.flushall()
    base = Settings(data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, database_url="off")
    async with serve_live(dataclasses.replace(base, ws_ping_seconds=0), client) as served:
        await served.register("alice", "bob")
        # The reader (stopped between rounds below) ends its wait for Redis sooner.
        served.hub.block_ms = 10
        yield served
    await client.aclose()


async def gauges(live: Live) -> tuple[float, float]:
    """The connections and subscriptions gauges, from /metrics."""
    text = (await live.http.get(f"http://127.0.0.1:{live.port}/metrics")).text
    values = dict(line.split() for line in text.splitlines() if line and not line.startswith("#"))
    return float(values["followgraph_ws_connections"]), float(values["followgraph_subscriptions"])


async def left_running(live: Live, timeout: float = 5.0) -> tuple[float, float, int]:
    """The gauges and the hub's subscribers once all are 0, or as they are after `timeout`."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while (await gauges(live), live.hub.subscribers) != ((0.0, 0.0), 0):
                await asyncio.sleep(0.05)
    return (*await gauges(live), live.hub.subscribers)


async def acked(socket: Raw, live: Live, user: str) -> None:
    await socket.init(live.token(user))
    assert (await socket.receive())["type"] == "connection_ack"


async def admitted(live: Live, user: str) -> list[str | int | None]:
    """What each of as many new sockets of `user` as one process takes gets at connection_init: the
    ack's type, or the close code."""
    outcomes: list[str | int | None] = []
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(live.settings.ws_max_connections_per_user):
            socket = await stack.enter_async_context(raw(live.ws_url))
            await socket.init(live.token(user))
            try:
                outcomes.append((await socket.receive())["type"])
            except ConnectionClosed as closed:
                outcomes.append(closed.rcvd.code if closed.rcvd is not None else None)
    return outcomes


async def test_subscriptions_closed_or_completed_at_once_give_back_their_slots(live: Live) -> None:
    for turns in range(ROUNDS):
        async with raw(live.ws_url) as socket:
            await acked(socket, live, "alice")
            await socket.subscribe("1")
            for _ in range(turns):
                await asyncio.sleep(0)
    completed_but_running: list[int] = []
    for turns in range(ROUNDS):
        async with raw(live.ws_url) as socket:
            await acked(socket, live, "alice")
            before = live.hub.subscribers
            await socket.subscribe("1")
            for _ in range(turns):
                await asyncio.sleep(0)
            await socket.send({"id": "1", "type": "complete"})
            # The complete has been handled once the ping sent after it is answered.
            await socket.send({"type": "ping"})
            assert await socket.receive() == {"type": "pong"}
            try:
                await live.subscribers(before, timeout=1)
            except TimeoutError:
                completed_but_running.append(turns)
    left = await left_running(live)
    outcomes = await admitted(live, "alice")

    assert outcomes == ["connection_ack"] * live.settings.ws_max_connections_per_user
    assert left == (0.0, 0.0, 0), "connections, subscriptions and hub subscribers left running"
    assert completed_but_running == [], "rounds (by turns) whose completed subscription ran on"


async def test_an_operation_that_swallows_its_cancel_still_ends_with_its_socket(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An operation whose first cancel is lost, as a library may lose it, wherever it then waits.
    waiting = asyncio.Semaphore(0)

    async def swallowing(handler: TransportWSHandler, operation: Operation[Context, None]) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            waiting.release()
            await asyncio.sleep(3600)
        await asyncio.sleep(3600)

    monkeypatch.setattr(TransportWSHandler, "run_operation", swallowing)
    async with raw(live.ws_url) as socket:
        await acked(socket, live, "alice")
        await socket.subscribe("1")
        await asyncio.wait_for(waiting.acquire(), 5)
    async with raw(live.ws_url) as socket:
        await acked(socket, live, "alice")
        await socket.subscribe("1")
        await asyncio.wait_for(waiting.acquire(), 5)
        await socket.send({"id": "1", "type": "complete"})
        await socket.send({"type": "ping"})
        assert await socket.receive() == {"type": "pong"}
    left = await left_running(live)
    outcomes = await admitted(live, "alice")

    assert outcomes == ["connection_ack"] * live.settings.ws_max_connections_per_user
    assert left == (0.0, 0.0, 0), "connections and subscriptions left running"


# -- a cancel at every await of the start-up ---------------------------------------------------------


@dataclass
class Injection:
    """A cancel of an operation's task at its `step`-th suspension: on the loop's next turn, or
    (`late`) when what it awaits has finished but the task has not yet resumed. A cancel that lands
    in redis-py's wait_for either way, as its inner send finishes, is lost there."""

    step: int
    late: bool
    task: asyncio.Task[Any] | None = None
    suspensions: int = 0
    cancelled: bool = False

    def cancel(self, *_: object) -> None:
        assert self.task is not None
        self.cancelled = True
        self.task.cancel()

    def arm(self, awaited: object) -> None:
        if self.late and isinstance(awaited, asyncio.Future):
            # Called before the task's own wake-up, which it adds once this has been yielded.
            awaited.add_done_callback(self.cancel)
        else:
            asyncio.get_running_loop().call_soon(self.cancel)


@types.coroutine
def stepped(coroutine: Coroutine[Any, Any, None], injection: Injection) -> Generator[Any, Any, None]:
    """Run `coroutine` in the current task as awaiting it would, counting the task's suspensions."""
    injection.task = asyncio.current_task()
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            awaited = coroutine.send(value) if error is None else coroutine.throw(error)
        except StopIteration:
            return
        injection.suspensions += 1
        if injection.suspensions == injection.step:
            injection.arm(awaited)
        try:
            value, error = (yield awaited), None
        except BaseException as exc:  # the task's cancel, or the generator's close
            value, error = None, exc


@pytest.mark.parametrize("late", [False, True], ids=["while-waiting", "as-the-wait-ends"])
async def test_a_cancel_at_any_await_of_the_start_up_ends_the_subscription(
    live: Live, monkeypatch: pytest.MonkeyPatch, late: bool
) -> None:
    # One event to replay: the start-up reads the log, and sends that event, before it goes live.
    await live.data('mutation F { follow(input: {userId: "bob"}) { changed } }', as_user="alice")
    injection = Injection(0, late)
    run_operation = TransportWSHandler.run_operation

    async def injected(handler: TransportWSHandler, operation: Operation[Context, None]) -> None:
        await stepped(run_operation(handler, operation), injection)  # the round's injection

    monkeypatch.setattr(TransportWSHandler, "run_operation", injected)
    still_running: list[int] = []
    step = 0
    while True:
        step += 1
        # Every start-up starts the hub's reader too, and waits for it.
        await live.hub.stop()
        injection = Injection(step, late)
        async with raw(live.ws_url) as socket:
            await acked(socket, live, "bob")
            await socket.subscribe("1", after="0-0")
            try:
                async with asyncio.timeout(1):
                    while not injection.cancelled:
                        await asyncio.sleep(0.005)
            except TimeoutError:
                break  # live before this step: the start-up is over
            task = injection.task
            assert task is not None
            await asyncio.wait([task], timeout=2)
            if not task.done():
                still_running.append(step)
    left = await left_running(live)

    assert step > 3, "the start-up went live before the injections reached it"
    assert still_running == [], f"cancelled at these suspensions, the subscription went on: {still_running}"
    assert left == (0.0, 0.0, 0), "connections, subscriptions and hub subscribers left running"
