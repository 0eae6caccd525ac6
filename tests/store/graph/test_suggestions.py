"""Suggestions stay within their stated bound on a graph bigger than it: the viewer's
SAMPLE_FOLLOWING most recent follows, FANOUT most recent follows of each, three round trips."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import UnixDomainSocketConnection

from followgraph.server.redis_server import RedisServer
from followgraph.store import FollowStore
from followgraph.store.graph import scripts
from followgraph.store.graph.suggestions import FANOUT, SAMPLE_FOLLOWING
from followgraph.store.redis.lua import AnyPipeline, run_pipeline
from tests.roundtrips import RoundTripCounter

# More follows than the sample on both levels.
FOLLOWED = SAMPLE_FOLLOWING + 10
FANOUT_PLUS = FANOUT + 10


async def beyond_the_bound(store: FollowStore) -> None:
    """The viewer follows f0..f59, f59 most recently; each of them follows 110 users of its own.
    `far` is followed by every one of them, but only outside the sample: by f0..f9 (not among the
    viewer's 50 most recent follows) and as the oldest follow of each of f10..f59 (not among their
    100 most recent). `near` is followed by f10..f14 recently: the only user counted more than once."""
    k = store.keys
    followed = [f"f{i}" for i in range(FOLLOWED)]

    def fill(pipe: AnyPipeline) -> None:
        pipe.zadd(k.following("viewer"), {f: at for at, f in enumerate(followed, start=1)})
        for i, f in enumerate(followed):
            own = {f"c{i}_{j}": 10 + j for j in range(FANOUT_PLUS)}
            own["far"] = 1
            if 10 <= i < 15:
                own["near"] = 10_000
            pipe.zadd(k.following(f), own)

    await run_pipeline(store.redis, fill)


async def test_suggestions_count_only_the_sample(store: FollowStore, monkeypatch: pytest.MonkeyPatch) -> None:
    await beyond_the_bound(store)
    counted: list[int] = []
    exclusions = scripts.CONTROLS_SCRIPT.run

    async def count_candidates(redis: Any, keys: Any, args: Any) -> Any:
        counted.append(len(args))
        return await exclusions(redis, keys, args)

    monkeypatch.setattr(scripts.CONTROLS_SCRIPT, "run", count_candidates)
    found = await store.suggestions("viewer", first=50)
    sampled = {f"f{i}" for i in range(FOLLOWED - SAMPLE_FOLLOWING, FOLLOWED)}
    assert counted == [SAMPLE_FOLLOWING * FANOUT - 4]  # near is counted once for its five
    assert (found[0].user_id, found[0].followed_by) == ("near", ["f14", "f13", "f12", "f11", "f10"])
    assert "far" not in {s.user_id for s in found}
    assert all(set(s.followed_by) <= sampled and s.followed_by_count == 1 for s in found[1:])
    assert len(found) == 50


class CountingConnection(RoundTripCounter, UnixDomainSocketConnection):
    """A counting unix-socket connection."""


@pytest.fixture
async def counted_store(redis_server: RedisServer) -> AsyncIterator[FollowStore]:
    pool = aioredis.ConnectionPool(
        connection_class=CountingConnection, path=str(redis_server.socket_path), decode_responses=True
    )
    client = aioredis.Redis(connection_pool=pool)
    await client.flushall()
    yield FollowStore(client)
    await client.aclose()
    await pool.disconnect()


async def test_suggestions_take_three_round_trips_whatever_the_graph(counted_store: FollowStore) -> None:
    store = counted_store
    await store.redis.zadd(store.keys.following("viewer"), {"f0": 1})
    await store.redis.zadd(store.keys.following("f0"), {"c": 1})
    await store.suggestions("viewer")  # the scripts loaded once
    CountingConnection.sent = 0
    assert [s.user_id for s in await store.suggestions("viewer")] == ["c"]
    small = CountingConnection.sent

    await beyond_the_bound(store)
    CountingConnection.sent = 0
    assert len(await store.suggestions("viewer", first=50)) == 50
    assert (small, CountingConnection.sent) == (3, 3)
