"""The follow rate limit over HTTP, on the real Redis server and the real cluster: exact, shared, per
viewer, configurable."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from followgraph.server.settings import ConfigError, Settings
from followgraph.store import Keys
from followgraph.store.redis.lua import Client
from tests.conftest import Backend
from tests.security.helpers import graph_dump, serve
from tests.served import Served

FOLLOW = "mutation($id: ID!) { follow(input: {userId: $id}) { changed errors { code message field } } }"
RETRY_AT = re.compile(r"Try again after (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\.")
TARGETS = [f"t{i}" for i in range(20)]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The test settings with a limit small enough to reach: 3 follows a minute."""
    return replace(settings, follow_rate_limit="3/minute")


@pytest.fixture
async def app(served_redis: Client, settings: Settings) -> AsyncIterator[Served]:
    async with serve(settings, served_redis) as served:
        await served.register("me", "you", *TARGETS)
        yield served


async def follow(app: Served, viewer: str, target: str) -> dict[str, Any]:
    response = await app.post(FOLLOW, {"id": target}, as_user=viewer)
    body = response.json()
    assert response.status_code == 200, body
    assert "errors" not in body, body
    payload: dict[str, Any] = body["data"]["follow"]
    return payload


def codes(payload: dict[str, Any]) -> list[str]:
    return [error["code"] for error in payload["errors"]]


async def following(redis: Client, app: Served, user_id: str) -> set[str]:
    return set(cast("list[str]", await redis.zrange(app.store.keys.following(user_id), 0, -1)))


async def test_the_fourth_follow_in_the_window_is_rate_limited_and_writes_nothing(
    app: Served, served_redis: Client
) -> None:
    results = [await follow(app, "me", target) for target in TARGETS[:3]]
    before = await graph_dump(served_redis)
    started = datetime.now(UTC)

    limited = await follow(app, "me", "t3")

    assert [r["changed"] for r in results] == [True, True, True]
    assert all(r["errors"] == [] for r in results)
    assert limited["changed"] is False
    assert codes(limited) == ["RATE_LIMITED"]
    message = limited["errors"][0]["message"]
    assert "3 per 1 minute" in message
    match = RETRY_AT.search(message)
    assert match is not None, message
    retry_at = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    # The oldest of the three follows leaves the moving window a minute after it was made.
    assert 0 <= (retry_at - started).total_seconds() <= 61
    assert await graph_dump(served_redis) == before
    assert await following(served_redis, app, "me") == {"t0", "t1", "t2"}


async def test_aliased_follows_in_one_document_are_counted_one_by_one(
    app: Served, served_redis: Client
) -> None:
    document = "mutation { " + " ".join(
        f'f{i}: follow(input: {{userId: "t{i}"}}) {{ changed errors {{ code }} }}' for i in range(5)
    )
    response = await app.post(document + " }", as_user="me")

    data = response.json()["data"]
    assert [data[f"f{i}"]["changed"] for i in range(5)] == [True, True, True, False, False]
    assert [codes(data[f"f{i}"]) for i in range(5)] == [[], [], [], ["RATE_LIMITED"], ["RATE_LIMITED"]]
    assert await following(served_redis, app, "me") == {"t0", "t1", "t2"}


async def test_concurrent_follows_get_exactly_the_limit(app: Served, served_redis: Client) -> None:
    results = await asyncio.gather(*(follow(app, "me", target) for target in TARGETS))

    succeeded = [r for r in results if r["changed"]]
    limited = [r for r in results if codes(r) == ["RATE_LIMITED"]]
    assert len(succeeded) == 3
    assert len(limited) == 17
    assert len(await following(served_redis, app, "me")) == 3


async def test_two_apps_share_the_limit_exactly(
    served_backend: Backend, served_redis: Client, settings: Settings
) -> None:
    # Two apps, each with its own clients, as two server processes would have.
    clients = [served_backend.client() for _ in range(2)]
    try:
        async with serve(settings, clients[0]) as first, serve(settings, clients[1]) as second:
            await first.register("me", *TARGETS)
            apps = [first, second]
            sequential = [await follow(apps[i % 2], "me", TARGETS[i]) for i in range(4)]
            concurrent = await asyncio.gather(*(follow(apps[i % 2], "me", TARGETS[i]) for i in range(4, 12)))
    finally:
        for client in clients:
            await client.aclose()

    assert [r["changed"] for r in sequential] == [True, True, True, False]
    assert all(codes(r) == ["RATE_LIMITED"] for r in [*sequential[3:], *concurrent])
    assert len(await served_redis.zrange(Keys().following("me"), 0, -1)) == 3


async def test_each_viewer_has_a_budget_of_its_own(app: Served) -> None:
    mine = [await follow(app, "me", target) for target in TARGETS[:4]]
    yours = [await follow(app, "you", target) for target in TARGETS[:4]]

    for results in (mine, yours):
        assert [r["changed"] for r in results] == [True, True, True, False]
        assert codes(results[3]) == ["RATE_LIMITED"]


async def test_invalid_follows_do_not_use_the_budget(app: Served) -> None:
    invalid = [
        await follow(app, "me", "me"),
        await follow(app, "me", "me"),
        await follow(app, "me", "not a valid id"),
        await follow(app, "me", "../t0"),
        await follow(app, "me", "x" * 65),
    ]
    valid = [await follow(app, "me", target) for target in TARGETS[:4]]

    assert [codes(r) for r in invalid] == [
        ["CANNOT_FOLLOW_SELF"],
        ["CANNOT_FOLLOW_SELF"],
        ["INVALID_INPUT"],
        ["INVALID_INPUT"],
        ["INVALID_INPUT"],
    ]
    assert [r["changed"] for r in valid] == [True, True, True, False]


async def test_unfollow_and_remove_fan_are_not_limited(app: Served, served_redis: Client) -> None:
    for target in TARGETS[:3]:
        await follow(app, "me", target)
    unfollow = "mutation($id: ID!) { unfollow(input: {userId: $id}) { changed errors { code } } }"

    responses = [await app.post(unfollow, {"id": target}, as_user="me") for target in TARGETS[:3]]

    assert [r.json()["data"]["unfollow"] for r in responses] == [{"changed": True, "errors": []}] * 3
    # Unfollowing gives no budget back: the window counts follows made.
    assert codes(await follow(app, "me", "t5")) == ["RATE_LIMITED"]


async def test_the_limit_can_be_turned_off(served_redis: Client, settings: Settings) -> None:
    async with serve(replace(settings, follow_rate_limit="off"), served_redis) as unlimited:
        await unlimited.register("me", *TARGETS)
        results = [await follow(unlimited, "me", target) for target in TARGETS[:10]]

    assert all(r["changed"] and r["errors"] == [] for r in results)
    assert [key async for key in served_redis.scan_iter(match="fg:limits*")] == []


def test_the_default_limit_is_400_a_day() -> None:
    assert Settings().follow_rate_limit == "400/day"
    assert Settings.from_env(environ={}).follow_rate_limit == "400/day"
    assert Settings.from_env(
        environ={"FOLLOWGRAPH_FOLLOW_RATE_LIMIT": "20 per minute"}
    ).follow_rate_limit == ("20 per minute")


@pytest.mark.parametrize("value", ["lots", "3/fortnight", "-1/minute", "3 per", "3.5/minute", "/minute"])
def test_a_bad_rate_fails_at_start_naming_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match="FOLLOWGRAPH_FOLLOW_RATE_LIMIT"):
        Settings.from_env(environ={"FOLLOWGRAPH_FOLLOW_RATE_LIMIT": value})


@pytest.mark.parametrize("value", ["20/minute;400/day", "20/minute, 400/day"])
def test_several_rates_are_refused_not_cut_to_the_first(value: str) -> None:
    # The limiter enforces one rate: accepting "20/minute;400/day" would silently drop the daily cap.
    with pytest.raises(ConfigError, match="FOLLOWGRAPH_FOLLOW_RATE_LIMIT"):
        Settings.from_env(environ={"FOLLOWGRAPH_FOLLOW_RATE_LIMIT": value})


async def test_follow_requests_count_against_the_limit(app: Served, served_redis: Client) -> None:
    for target in TARGETS[:4]:
        await app.store.update_settings(target, locked=True)
    results = [await follow(app, "me", target) for target in TARGETS[:4]]
    assert [codes(r) for r in results] == [[], [], [], ["RATE_LIMITED"]]
    requested = set(cast("list[str]", await served_redis.zrange(app.store.keys.requests_out("me"), 0, -1)))
    assert requested == set(TARGETS[:3])
