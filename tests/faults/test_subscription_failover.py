"""viewerEvents through a Sentinel failover: a subscription opened before the primary is SIGKILLed
goes on, on the same socket, once the replica is promoted; with FOLLOWGRAPH_WRITE_REPLICAS=1 it
receives the event of every follow acknowledged before, during and after the switch, each once.

The process's one reader of the change log (store/log/hub.py) keeps its position through the
failed reads and goes on from it on the new primary, which has every event acknowledged to a
writer (each waited for the replica), and no other.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from pathlib import Path

import pytest

from followgraph.server.redis_sentinel import LocalSentinel
from tests.faults.support import fault_settings
from tests.live import Live, serve_live
from tests.server.processes import free_ports
from tests.subscriber import Raw, raw

log = logging.getLogger(__name__)

DOWN_AFTER_MS = 1000
FOLLOWERS = [f"f{i:02}" for i in range(12)]
FOLLOW = "mutation($id: ID!) { follow(input: {userId: $id}) { changed errors { code } } }"
# Seconds a follow is tried again for (the failover itself takes 2 to 3).
RECOVERY = 30.0


async def follow_until_acknowledged(live: Live, follower: str, followee: str) -> int:
    """Follow until the API acknowledges it, as a client that retries would; the attempts made."""
    deadline = time.monotonic() + RECOVERY
    attempts = 0
    while True:
        attempts += 1
        response = await live.http.post(
            live.url,
            json={"query": FOLLOW, "variables": {"id": followee}},
            headers={"authorization": f"Bearer {live.token(follower)}"},
        )
        body = response.json()
        if response.status_code == 200 and not body.get("errors"):
            assert body["data"]["follow"]["errors"] == [], body
            return attempts
        assert time.monotonic() < deadline, f"{follower}'s follow still fails: {body}"
        await asyncio.sleep(0.1)


async def followers_seen(socket: Raw, expected: int, timeout: float) -> Counter[str]:
    """The actors of the FOLLOW events received until `expected` distinct ones came, then what
    else arrives in a quiet second (a doubled event would)."""
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + timeout
    while len(seen) < expected:
        message = await socket.receive(timeout=max(deadline - time.monotonic(), 0.1))
        assert message["type"] == "next", message
        event = message["payload"]["data"]["viewerEvents"]
        assert event["kind"] == "FOLLOW", event
        seen[event["actor"]["userId"]] += 1
    try:
        while True:
            message = await socket.receive(timeout=1.0)
            seen[message["payload"]["data"]["viewerEvents"]["actor"]["userId"]] += 1
    except TimeoutError:
        pass
    return seen


@pytest.mark.slow
async def test_a_subscription_goes_on_through_a_failover_and_misses_no_acknowledged_event(
    tmp_path: Path,
) -> None:
    # Two replicas: one promoted, and one left for the writes to wait for.
    ports = tuple(free_ports(1 + 2 + 3))
    with LocalSentinel(tmp_path / "ha", ports, replicas=2, down_after_ms=DOWN_AFTER_MS) as sentinel:
        settings = fault_settings(
            tmp_path,
            sentinel.url,
            redis_timeout=1.0,
            follow_rate_limit="off",
            database_url="off",
            search_index=False,
            write_replicas=1,
            write_replicas_timeout=0.5,
        )
        async with serve_live(settings) as live, raw(live.ws_url) as socket:
            await live.register("star", *FOLLOWERS)
            await socket.init(live.token("star"))
            assert (await socket.receive())["type"] == "connection_ack"
            await socket.subscribe("1")
            await live.subscribers(1)
            before, during = FOLLOWERS[:4], FOLLOWERS[4:]
            for follower in before:
                await follow_until_acknowledged(live, follower, "star")

            old = sentinel.primary_port()
            assert old is not None
            killed = time.monotonic()
            await asyncio.to_thread(sentinel.server(old).kill)
            # One follow after another from the kill on: the first ones fail until the switch.
            attempts = [await follow_until_acknowledged(live, follower, "star") for follower in during]
            assert sentinel.primary_port() not in (old, None)
            assert sum(attempts) > len(during), "every follow succeeded at once: no failover was seen"

            seen = await followers_seen(socket, len(FOLLOWERS), timeout=RECOVERY)
            log.info("writes back %.1f s after the kill; attempts %s", time.monotonic() - killed, attempts)

    assert seen == Counter(dict.fromkeys(FOLLOWERS, 1)), seen
