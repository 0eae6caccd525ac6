"""Compiled plans of follow and unfollow answer exactly as the general executor does, errors
included, and write once.

Writes change what the next request sees, so each side runs the same sequence of mutations from
the same freshly written graph: the general executor's app, then the compiled app, whose plans
were learnt from an earlier run of the sequence.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from followgraph.executor.execute import Executor
from followgraph.executor.mutation_plan import MutationPlan
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.lua import Client
from followgraph.transport.auth import mint_token
from tests.served import serve

USERS = ["ann", "bob", "cat", "dan", "eve"]
USER = "__typename userId name avatarUrl relationship followingCount fansCount isLocked viewerBlocks"
PAYLOAD = (
    f"__typename changed relationship pending errors {{ __typename code message field }} user {{ {USER} }}"
)
FOLLOW = f"mutation Follow($id: ID!) {{ follow(input: {{userId: $id}}) {{ {PAYLOAD} viewer {{ {USER} }} }} }}"
UNFOLLOW = f"mutation Unfollow($id: ID!) {{ unfollow(input: {{userId: $id}}) {{ {PAYLOAD} }} }}"
BARE = 'mutation { f: follow(input: {userId: "bob"}) { ok: changed relationship errors { code } } }'
# Each step: (document, variables, viewer). Covers a follow, its repeat, a request to a locked
# account, BLOCKED, USER_NOT_FOUND (the other user and the viewer), CANNOT_FOLLOW_SELF, an invalid
# id, and RATE_LIMITED (3 follows a minute).
STEPS: list[tuple[str, dict[str, Any], str]] = [
    (FOLLOW, {"id": "bob"}, "ann"),
    (FOLLOW, {"id": "bob"}, "ann"),
    (UNFOLLOW, {"id": "bob"}, "ann"),
    (UNFOLLOW, {"id": "bob"}, "ann"),
    (FOLLOW, {"id": "cat"}, "ann"),  # cat is locked: a request
    (FOLLOW, {"id": "eve"}, "dan"),  # dan blocks eve
    (FOLLOW, {"id": "nobody"}, "ann"),
    (FOLLOW, {"id": "ann"}, "stranger"),
    (FOLLOW, {"id": "ann"}, "ann"),
    (UNFOLLOW, {"id": "bob"}, "bob"),
    (FOLLOW, {"id": "not valid!"}, "ann"),
    (BARE, {}, "dan"),
    (FOLLOW, {"id": "ann"}, "dan"),
    (FOLLOW, {"id": "cat"}, "dan"),
    (FOLLOW, {"id": "eve"}, "bob"),
    (BARE, {}, "dan"),  # dan's fourth follow in the minute: RATE_LIMITED
    (FOLLOW, {"id": "bob"}, "dan"),
    (UNFOLLOW, {"id": "ann"}, "dan"),  # unfollows are not limited
]
RETRY_AT = re.compile(r"Try again after [0-9T:Z-]+\.")


async def seed(redis: Client) -> None:
    await redis.flushdb()
    store = FollowStore(redis)
    for user in USERS:
        await store.upsert_user(user, name=f"User {user}", avatar_url=f"https://a.example/{user}.png")
    await store.follow(follower="bob", followee="ann", at=1_700_000_000_000)
    await store.update_settings("cat", locked=True)
    await store.block(blocker="dan", blocked="eve")


class Side:
    def __init__(self, client: httpx.AsyncClient, settings: Settings) -> None:
        self.client = client
        self.settings = settings

    async def ask(self, query: str, variables: dict[str, Any], viewer: str) -> tuple[int, Any]:
        token = mint_token(self.settings.auth_config(), viewer)
        response = await self.client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {token}"},
        )
        body = response.json()
        for error in body.get("errors", []):
            error.get("extensions", {}).pop("requestId", None)
        # The time to retry a rate-limited follow depends on when the follows were made.
        return response.status_code, RETRY_AT.sub("Try again after ...", str(body))

    async def run(self, steps: list[tuple[str, dict[str, Any], str]]) -> list[tuple[int, Any]]:
        return [await self.ask(query, variables, viewer) for query, variables, viewer in steps]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return replace(settings, follow_rate_limit="3/minute")


@pytest.fixture
async def sides(served_redis: Client, settings: Settings) -> AsyncIterator[tuple[Side, Side, Executor]]:
    await seed(served_redis)
    async with (
        serve(settings, served_redis) as compiled,
        serve(replace(settings, compiled_queries=False), served_redis) as general,
    ):
        executor = compiled.app.state.endpoint.executor
        yield Side(compiled.client, settings), Side(general.client, settings), executor


def refuse_general(executor: Executor, monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(*args: object) -> None:
        raise AssertionError("the general executor ran")

    monkeypatch.setattr(executor, "_general", refuse)


async def test_follow_and_unfollow_plans_answer_as_the_general_executor_errors_included(
    sides: tuple[Side, Side, Executor], served_redis: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled, general, executor = sides
    expected = await general.run(STEPS)
    await seed(served_redis)
    await compiled.run(STEPS)  # learns the plans
    assert all(isinstance(executor.plan(q, None), MutationPlan) for q in (FOLLOW, UNFOLLOW, BARE))
    await seed(served_redis)
    # Every step but the one with an invalid id (which the plan leaves to the general executor
    # only when the request is refused before execution; here it is a user error) runs its plan.
    planned = await compiled.run(STEPS)
    assert planned == expected
    codes = " ".join(str(answer) for answer in expected)
    for code in ("BLOCKED", "USER_NOT_FOUND", "CANNOT_FOLLOW_SELF", "RATE_LIMITED", "INVALID_INPUT"):
        assert code in codes
    refuse_general(executor, monkeypatch)
    await seed(served_redis)
    assert await compiled.run(STEPS) == expected


async def test_requests_a_plan_cannot_answer_get_the_general_executors_error(
    sides: tuple[Side, Side, Executor],
) -> None:
    compiled, general, executor = sides
    await compiled.ask(FOLLOW, {"id": "bob"}, "ann")
    assert isinstance(executor.plan(FOLLOW, None), MutationPlan)
    for variables in ({}, {"id": None}, {"id": ["bob"]}):
        expected = await general.ask(FOLLOW, variables, "ann")
        assert "errors" in expected[1]
        assert await compiled.ask(FOLLOW, variables, "ann") == expected
    anonymous = await general.client.post("/graphql", json={"query": FOLLOW, "variables": {"id": "bob"}})
    again = await compiled.client.post("/graphql", json={"query": FOLLOW, "variables": {"id": "bob"}})
    assert (again.status_code, again.json()) == (anonymous.status_code, anonymous.json())
    # Over GET a mutation is refused, plan or no plan.
    params = {"query": FOLLOW, "variables": '{"id": "bob"}'}
    refused = await general.client.get("/graphql", params=params)
    assert (await compiled.client.get("/graphql", params=params)).status_code == refused.status_code


async def test_redis_failing_under_a_mutation_plan_is_answered_once_as_the_general_executor_does(
    sides: tuple[Side, Side, Executor], monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled, general, executor = sides
    await compiled.ask(FOLLOW, {"id": "bob"}, "ann")
    calls = []

    async def broken(*args: object, **kwargs: object) -> None:
        calls.append(args)
        raise RedisConnectionError("Connection reset by peer")

    monkeypatch.setattr(FollowStore, "follow_reading", broken)
    expected = await general.ask(FOLLOW, {"id": "cat"}, "ann")
    assert "SERVICE_UNAVAILABLE" in expected[1] and "'data': None" in expected[1]
    calls.clear()
    refuse_general(executor, monkeypatch)
    assert await compiled.ask(FOLLOW, {"id": "cat"}, "ann") == expected
    assert len(calls) == 1  # never written twice
