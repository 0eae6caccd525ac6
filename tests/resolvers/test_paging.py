"""The page-size rule: one maximum, from the request's limits, for the cost check and the resolvers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from followgraph.resolvers.paging import MAX_PAGE_SIZE, page_size_error
from followgraph.server.settings import Settings
from followgraph.store.redis.lua import Client
from tests.served import serve


@pytest.mark.parametrize(("value", "allowed"), [(0, True), (MAX_PAGE_SIZE, True), (-1, False), (101, False)])
def test_the_rule_allows_zero_to_the_maximum(value: int, allowed: bool) -> None:
    error = page_size_error("first", value, MAX_PAGE_SIZE)
    assert (error is None) is allowed
    if error is not None:
        assert error.message == f"`first` must be between 0 and {MAX_PAGE_SIZE}, got {value}."
        assert error.extensions == {"code": "BAD_USER_INPUT", "argument": "first"}


async def test_a_raised_maximum_is_honoured_by_the_limits_and_the_resolvers(
    served_redis: Client, settings: Settings
) -> None:
    query = '{ user(userId: "star") { fans(first: 150) { totalCount edges { cursor } } } }'
    async with serve(replace(settings, max_page_size=200), served_redis) as served:
        await served.register("star", *(f"fan{i}" for i in range(160)))
        for i in range(160):
            await served.store.follow(follower=f"fan{i}", followee="star")
        fans = (await served.data(query))["user"]["fans"]
        assert fans["totalCount"] == 160 and len(fans["edges"]) == 150
        # The general executor answered first and the compiled plan second: both allow it.
        assert (await served.data(query))["user"]["fans"] == fans
        refused = (await served.post(query.replace("150", "201"))).json()
        assert refused["errors"][0]["message"] == "`first` must be between 0 and 200, got 201."
