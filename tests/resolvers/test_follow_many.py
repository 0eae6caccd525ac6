"""followMany: one result per id in order, the call's own errors, the rate limit, and a constant
number of Redis round trips whatever the number of ids."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import UnixDomainSocketConnection

from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.lua import Client
from tests.roundtrips import RoundTripCounter
from tests.served import Served, serve

FOLLOW_MANY = """
mutation($ids: [ID!]!) {
  followMany(input: {userIds: $ids}) {
    results { changed pending relationship user { userId } errors { code message field } }
    viewer { followingCount }
    errors { code message field }
  }
}
"""


async def follow_many(api: Served, ids: list[str], as_user: str = "v") -> dict[str, Any]:
    payload: dict[str, Any] = (await api.data(FOLLOW_MANY, {"ids": ids}, as_user=as_user))["followMany"]
    return payload


def codes(payload: dict[str, Any]) -> list[str | None]:
    return [r["errors"][0]["code"] if r["errors"] else None for r in payload["results"]]


async def test_each_id_gets_its_result_in_order(api: Served) -> None:
    await api.register("v", "a", "b", "locked", "blocker", "old")
    await api.store.update_settings("locked", locked=True)
    await api.store.block(blocker="blocker", blocked="v")
    await api.store.follow(follower="v", followee="old")
    ids = ["a", "old", "locked", "nobody", "v", "blocker", "bad id!", "b", "a"]
    payload = await follow_many(api, ids)
    assert codes(payload) == [
        None,
        None,
        None,
        "USER_NOT_FOUND",
        "CANNOT_FOLLOW_SELF",
        "BLOCKED",
        "INVALID_INPUT",
        None,
        None,
    ]
    results = payload["results"]
    assert [r["changed"] for r in results] == [True, False, True, False, False, False, False, True, False]
    assert results[2]["pending"] and results[2]["relationship"] == "NONE"
    assert [r["user"] and r["user"]["userId"] for r in results] == [
        "a",
        "old",
        "locked",
        None,
        None,
        None,
        None,
        "b",
        "a",
    ]
    assert results[3]["errors"][0]["field"] == ["input", "userIds", "3"]
    assert payload["viewer"] == {"followingCount": 3} and payload["errors"] == []


async def test_more_than_100_ids_is_too_many_and_follows_nobody(api: Served) -> None:
    await api.register("v", "a")
    payload = await follow_many(api, ["a"] * 101)
    assert payload["results"] == []
    assert [e["code"] for e in payload["errors"]] == ["TOO_MANY"]
    assert payload["viewer"] == {"followingCount": 0}


async def test_each_follow_counts_against_the_rate_limit(served_redis: Client, settings: Settings) -> None:
    async with serve(replace(settings, follow_rate_limit="3/day"), served_redis) as api:
        await api.register("v", *(f"u{i}" for i in range(6)))
        first = await follow_many(api, ["u0", "u1", "u2", "u3"])
        assert codes(first) == [None, None, None, "RATE_LIMITED"]
        second = await follow_many(api, ["u4", "u5"])
        assert second["results"] == []
        assert [e["code"] for e in second["errors"]] == ["RATE_LIMITED"]
        assert second["viewer"] == {"followingCount": 3}


async def test_no_token_is_unauthenticated(api: Served) -> None:
    body = (await api.post(FOLLOW_MANY, {"ids": ["a"]})).json()
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


class CountingConnection(RoundTripCounter, UnixDomainSocketConnection):
    """A counting unix-socket connection."""


@pytest.fixture
async def counted(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Served]:
    pool = aioredis.ConnectionPool(
        connection_class=CountingConnection, path=str(redis_server.socket_path), decode_responses=True
    )
    client = aioredis.Redis(connection_pool=pool)
    await client.flushall()
    store = FollowStore(client)
    for user_id in ["v", *(f"u{i}" for i in range(100))]:
        await store.upsert_user(user_id, name=user_id)
    settings = Settings(data_dir=tmp_path, jwt_secret="x" * 40, sync=False, search_index=False)
    async with serve(settings, client) as served:
        await follow_many(served, ["u99"])  # the scripts loaded once
        yield served
    await client.aclose()


async def test_100_ids_cost_the_round_trips_of_2(counted: Served) -> None:
    trips = []
    for ids in (["u0", "u1"], [f"u{i}" for i in range(2, 100)]):
        CountingConnection.sent = 0
        payload = await follow_many(counted, ids)
        assert codes(payload) == [None] * len(ids)
        trips.append(CountingConnection.sent)
    assert trips[0] == trips[1] <= 4
