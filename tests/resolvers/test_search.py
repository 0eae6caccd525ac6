"""searchUsers over HTTP, with the app's own indexer feeding the index from the change log, on a
real Redis and a cluster."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from followgraph.resolvers.search import cursor
from followgraph.server.settings import Settings
from followgraph.store.redis.lua import Client
from tests.served import Served, serve

SEARCH = """
query($q: String!, $first: Int, $after: String) {
  searchUsers(query: $q, first: $first, after: $after) {
    edges { cursor relationship node { userId name fansCount } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}
"""


@pytest.fixture
async def api(served_redis: Client, settings: Settings) -> AsyncIterator[Served]:
    async with serve(replace(settings, search_index=True), served_redis) as served:
        yield served


async def found(api: Served, text: str, *, as_user: str | None = None, **variables: Any) -> list[str]:
    data = await api.data(SEARCH, {"q": text, "first": 50, **variables}, as_user=as_user)
    return [edge["node"]["userId"] for edge in data["searchUsers"]["edges"]]


async def eventually(api: Served, text: str, expected: list[str], *, as_user: str | None = None) -> None:
    """Wait for the indexer to take in what was written (it reads the change log)."""
    for _ in range(100):
        if await found(api, text, as_user=as_user) == expected:
            return
        await asyncio.sleep(0.1)
    assert await found(api, text, as_user=as_user) == expected


async def test_users_written_before_the_start_are_found(served_redis: Client, settings: Settings) -> None:
    # Registered with no indexer running: the first start builds the index from every user.
    async with serve(settings, served_redis) as plain:
        await plain.store.upsert_user("early", name="Early Bird")
        await plain.store.redis.delete(*plain.store.keys.logs()[:1])  # their events are gone too
    async with serve(replace(settings, search_index=True), served_redis) as api:
        await eventually(api, "early", ["early"])


async def test_new_users_renames_and_follows_reach_the_results(api: Served) -> None:
    await api.store.upsert_user("mei", name="Mei Lin")
    await api.store.upsert_user("lin", name="Lin Wei")
    await api.store.upsert_user("v", name="Viewer")
    await eventually(api, "lin", ["lin", "mei"])  # same fans: by id
    await api.store.follow(follower="v", followee="mei")
    await eventually(api, "lin", ["mei", "lin"])  # mei has a fan now
    await api.store.upsert_user("mei", name="Mei Chen")
    await eventually(api, "lin", ["lin"])


async def test_edges_carry_the_viewers_relationship(api: Served) -> None:
    await api.register("v", "a", "b")
    await api.store.follow(follower="v", followee="a")
    await api.store.follow(follower="b", followee="v")
    await eventually(api, "user", ["a", "v", "b"], as_user="v")  # a followed; then by fans (v has b)
    data = await api.data(SEARCH, {"q": "user"}, as_user="v")
    relationships = {e["node"]["userId"]: e["relationship"] for e in data["searchUsers"]["edges"]}
    assert relationships == {"a": "FOLLOWING", "v": "SELF", "b": "FOLLOWED_BY"}


async def test_pages_follow_their_cursors(api: Served) -> None:
    people = [f"p{i:02}" for i in range(12)]
    await api.register(*people)
    await eventually(api, "user", people)
    first = (await api.data(SEARCH, {"q": "user", "first": 5}))["searchUsers"]
    assert first["pageInfo"] == {
        "hasNextPage": True,
        "hasPreviousPage": False,
        "startCursor": cursor(0),
        "endCursor": cursor(4),
    }
    seen = [e["node"]["userId"] for e in first["edges"]]
    after = first["pageInfo"]["endCursor"]
    while after is not None:
        page = (await api.data(SEARCH, {"q": "user", "first": 5, "after": after}))["searchUsers"]
        seen += [e["node"]["userId"] for e in page["edges"]]
        after = page["pageInfo"]["endCursor"] if page["pageInfo"]["hasNextPage"] else None
    assert seen == people


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"q": "x" * 101}, "query has 101 characters; at most 100 are allowed."),
        ({"q": "a b c d e f"}, "query has 6 words; at most 5 are allowed."),
        ({"q": "a", "first": 51}, "first"),
        ({"q": "a", "first": -1}, "first"),
        ({"q": "a", "after": "bm90IGEgY3Vyc29y"}, "after is not a cursor of searchUsers."),
        ({"q": "a", "after": "%%%"}, "after is not a cursor of searchUsers."),
    ],
)
async def test_bad_arguments_are_bad_user_input(api: Served, variables: dict[str, Any], message: str) -> None:
    body = (await api.post(SEARCH, variables)).json()
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert message in error["message"]


async def test_an_empty_query_finds_nobody(api: Served) -> None:
    await api.register("a")
    assert await found(api, "  ") == []
    assert await found(api, "!!") == []
