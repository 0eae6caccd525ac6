"""1,000 subscribers on one server process and a burst of changes: every delivery is counted, none
is lost or doubled, and each pair's events arrive in the order they happened."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from tests.conftest import TEST_SECRET
from tests.live import Live, serve_live
from tests.subscriber import EVENT_FIELDS, Raw, raw

SUBSCRIBERS = 1000
QUERY = f"subscription ViewerEvents($after: String) {{ viewerEvents(after: $after) {{ {EVENT_FIELDS} }} }}"


@pytest.fixture
async def live(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Live]:
    # The server's own kind of client: a pool that makes a burst wait for a connection.
    client = connect(redis_server.url, timeout=10.0)
    await client.flushall()
    base = Settings(data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, database_url="off")
    # The star receives two events per fan: its buffer must hold a burst's worth.
    settings = dataclasses.replace(base, subscription_buffer=4 * SUBSCRIBERS, ws_ping_seconds=0)
    async with serve_live(settings, client) as served:
        yield served
    await client.aclose()


async def receive(socket: Raw, expected: int, into: list[dict[str, Any]]) -> None:
    while len(into) < expected:
        message = await socket.receive(timeout=30)
        assert message["type"] == "next", message
        into.append(message["payload"]["data"]["viewerEvents"])


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_burst_reaches_a_thousand_subscribers_each_event_once_in_order(live: Live) -> None:
    fans = [f"fan{n}" for n in range(SUBSCRIBERS)]
    await live.register("star", *fans)
    # A fan muted by the star: its events reach the fan, not the star.
    await live.store.mute(muter="star", muted="fan0")
    received: dict[str, list[dict[str, Any]]] = {user: [] for user in ["star", *fans]}
    expected = {"star": 2 * (SUBSCRIBERS - 1), **dict.fromkeys(fans, 2)}

    async def subscriber(user: str) -> None:
        async with raw(live.ws_url) as socket:
            await socket.init(live.token(user))
            assert (await socket.receive())["type"] == "connection_ack"
            await socket.subscribe("1", query=QUERY)
            await receive(socket, expected[user], received[user])
            # Nothing beyond what was expected.
            with pytest.raises(TimeoutError):
                await socket.receive(timeout=0.2)

    tasks = [asyncio.create_task(subscriber(user)) for user in received]
    try:
        try:
            await live.subscribers(len(received), timeout=60)
        except TimeoutError:
            failed = [t.exception() for t in tasks if t.done()][:3]
            raise AssertionError(
                f"{live.hub.subscribers} subscribers registered; failures: {failed}"
            ) from None
        started = time.monotonic()
        await asyncio.gather(*(live.store.follow(follower=fan, followee="star") for fan in fans))
        await asyncio.gather(*(live.store.unfollow(follower=fan, followee="star") for fan in fans))
        async with asyncio.timeout(60):
            await asyncio.gather(*tasks)
        seconds = time.monotonic() - started
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    for fan in fans:
        kinds = [(e["kind"], e["actor"]["userId"], e["target"]["userId"]) for e in received[fan]]
        assert kinds == [("FOLLOW", fan, "star"), ("UNFOLLOW", fan, "star")]
    star = received["star"]
    assert len({e["eventId"] for e in star}) == len(star) == 2 * (SUBSCRIBERS - 1)
    assert Counter(e["actor"]["userId"] for e in star) == dict.fromkeys(fans[1:], 2)
    order: dict[str, list[str]] = {}
    for event in star:
        order.setdefault(event["actor"]["userId"], []).append(event["kind"])
    assert all(kinds == ["FOLLOW", "UNFOLLOW"] for kinds in order.values())
    assert seconds < 30
