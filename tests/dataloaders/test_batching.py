"""Batching is proven by counting: Redis round trips per request do not grow with the page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import UnixDomainSocketConnection

from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from tests.roundtrips import RoundTripCounter
from tests.served import Served, serve

FANS = 100


class CountingConnection(RoundTripCounter, UnixDomainSocketConnection):
    """A counting unix-socket connection."""


class Counted:
    def __init__(self, served: Served) -> None:
        self.served = served

    async def round_trips(self, query: str) -> int:
        CountingConnection.sent = 0
        await self.served.data(query, as_user="viewer")
        return CountingConnection.sent


@pytest.fixture
async def counted(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Counted]:
    pool = aioredis.ConnectionPool(
        connection_class=CountingConnection, path=str(redis_server.socket_path), decode_responses=True
    )
    client = aioredis.Redis(connection_pool=pool)
    await client.flushall()
    store = FollowStore(client)
    for user_id in ["star", "viewer", *(f"fan{i}" for i in range(FANS))]:
        await store.upsert_user(user_id, name=user_id)
    for i in range(FANS):
        await store.follow(follower=f"fan{i}", followee="star")
        if i % 2:
            await store.follow(follower="star", followee=f"fan{i}")
        if i % 3:
            await store.follow(follower="viewer", followee=f"fan{i}")
    # No SQL sync or search indexer in the process: their background reads of the change log would
    # be counted.
    settings = Settings(data_dir=tmp_path, jwt_secret="x" * 40, sync=False, search_index=False)
    async with serve(settings, client) as served:
        counted = Counted(served)
        # Load the scripts once, so that no count includes a first-use SCRIPT LOAD: one user's
        # profile is read with a plain HMGET, several users' with a script.
        await counted.round_trips(PAGE % 1)
        await counted.round_trips('{ user(userId: "star") { fans(first: 3) { edges { node { name } } } } }')
        yield counted
    await client.aclose()
    await pool.disconnect()


PAGE = """{ user(userId: "star") { fans(first: %d) { totalCount edges { cursor followedAt relationship
  node { userId name followingCount fansCount relationship viewerFollowedAt } } } } }"""


async def test_a_100_entry_page_costs_the_same_round_trips_as_a_1_entry_page(counted: Counted) -> None:
    # A document's first run goes through the general executor: user()'s registration check, the
    # page, then the entries' profiles, relations and counts together in one pipeline. Later runs
    # take its compiled plan: the page, then the user's facts with its entries'.
    for size in (2, 100):
        general = await counted.round_trips(PAGE % size)
        compiled = await counted.round_trips(PAGE % size)
        assert (general, compiled) == (3, 2)


async def test_three_lists_cost_no_more_relationship_round_trips_than_one(counted: Counted) -> None:
    fields = "totalCount edges { relationship node { relationship } }"
    fans_only = await counted.round_trips(f'{{ user(userId: "star") {{ fans(first: 100) {{ {fields} }} }} }}')
    three = await counted.round_trips(
        f'{{ user(userId: "star") {{ following(first: 100) {{ {fields} }} fans(first: 100) {{ {fields} }}'
        f" mutuals(first: 100) {{ {fields} }} }} }}"
    )
    assert three == fans_only


NESTED = """{ user(userId: "star") { fans(first: %d) {
  nodes { fans(first: 5) { nodes { name relationship } } } } } }"""


async def test_nested_connections_are_batched_per_depth(counted: Counted) -> None:
    shallow = await counted.round_trips(NESTED % 2)
    deep = await counted.round_trips(NESTED % 50)
    assert shallow == deep


async def test_a_compiled_plan_of_several_lists_makes_the_same_round_trips_as_the_general_executor(
    counted: Counted,
) -> None:
    three_lists = (
        '{ user(userId: "star") { following(first: 100) { totalCount edges { node { name } } } '
        "fans(first: 100) { edges { relationship } } mutuals { nodes { relationship fansCount } } } }"
    )
    general = await counted.round_trips(three_lists)  # runs, then compiles the document
    compiled = await counted.round_trips(three_lists)
    assert compiled == general == 3


CONTROLLED = """{ user(userId: "star") { isLocked fans(first: %d) { hidden totalCount edges {
  cursor relationship node { userId name isLocked viewerBlocks blocksViewer viewerMutes
  viewerRequestedFollow requestedFollowViewer relationship fansCount } } } } }"""


async def test_blocks_mutes_requests_and_hidden_lists_cost_no_round_trip_of_their_own(
    counted: Counted,
) -> None:
    # The flags are read on the viewer's slot with the relationships, the list's visibility by
    # the page script on the owner's slot: a page costs what it costs without them, 3 round trips
    # through the general executor and 2 from a compiled plan.
    await counted.round_trips("{ viewer { viewerBlocks } }")  # the first use loads the script
    for size in (1, 100):
        general = await counted.round_trips(CONTROLLED % size)
        compiled = await counted.round_trips(CONTROLLED % size)
        assert (general, compiled) == (3, 2)
        await counted.round_trips(PAGE % size)
        assert await counted.round_trips(PAGE % size) == compiled


FOLLOW = 'mutation { follow(input: {userId: "fan%d"}) { changed relationship errors { code message } } }'
UNFOLLOW = 'mutation { unfollow(input: {userId: "fan%d"}) { changed relationship errors { code } } }'
WITH_USERS = """mutation { %s(input: {userId: "fan%d"}) {
  changed relationship pending errors { code message field }
  user { userId name fansCount relationship viewerBlocks } viewer { userId name followingCount } } }"""


async def test_a_follow_and_an_unfollow_cost_one_round_trip_each_rate_limit_included(
    counted: Counted,
) -> None:
    # The rate limit is checked and counted inside the follow's script (the settings' default,
    # 400/day, is on). The first run of a document goes through the general executor.
    await counted.round_trips(FOLLOW % 1)  # loads the scripts
    await counted.round_trips(UNFOLLOW % 1)
    for user in (0, 0, 3):
        assert await counted.round_trips(FOLLOW % user) == 1
        assert await counted.round_trips(UNFOLLOW % user) == 1


async def test_the_payloads_users_are_read_in_the_round_trip_of_the_write(counted: Counted) -> None:
    # The write script, then the users' profiles, relations, counts and controls: one pipeline.
    await counted.round_trips(WITH_USERS % ("follow", 1))  # loads the scripts
    await counted.round_trips(WITH_USERS % ("unfollow", 1))
    for user in (0, 0, 3):
        assert await counted.round_trips(WITH_USERS % ("follow", user)) == 1
        assert await counted.round_trips(WITH_USERS % ("unfollow", user)) == 1
