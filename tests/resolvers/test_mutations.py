"""What the mutations do beyond one store call: unlocking within the request's time."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

import pytest

from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.graph import controls
from followgraph.store.redis.lua import Client
from tests.served import Served, serve

UNLOCK = """
mutation($locked: Boolean) {
  updateSettings(input: {locked: $locked}) {
    settings { locked }
    viewer { fansCount followRequestCount }
    errors { code message }
  }
}
"""
FANS = 6


async def set_locked(api: Served, locked: bool) -> dict[str, Any]:
    payload: dict[str, Any] = (await api.data(UNLOCK, {"locked": locked}, as_user="owner"))["updateSettings"]
    return payload


async def locked_with_requests(api: Served, n: int) -> None:
    """The owner's account locked, with a pending request from each of `n` fans."""
    fans = [f"fan{i}" for i in range(n)]
    await api.register("owner", *fans)
    await set_locked(api, locked=True)
    for fan in fans:
        await api.store.follow(follower=fan, followee="owner")


async def counts(api: Served) -> tuple[int, int]:
    data = await api.data("{ viewer { fansCount followRequestCount } }", as_user="owner")
    return data["viewer"]["fansCount"], data["viewer"]["followRequestCount"]


@pytest.fixture
def slow_acceptance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step of an acceptance accepts one request and takes 0.2 s: a backlog of FANS requests
    takes longer than a request's 1 s."""
    step = controls._accept_batch

    async def slow(store: FollowStore, user_id: str, batch: int) -> int:
        await asyncio.sleep(0.2)
        return await step(store, user_id, 1)

    monkeypatch.setattr(controls, "_accept_batch", slow)


@pytest.mark.usefixtures("slow_acceptance")
async def test_unlocking_a_long_backlog_answers_in_time_and_the_acceptance_goes_on(
    served_redis: Client, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    async with serve(replace(settings, request_timeout=1.0), served_redis) as api:
        await locked_with_requests(api, FANS)
        assert await counts(api) == (0, FANS)

        with caplog.at_level(logging.INFO, logger="followgraph.resolvers.mutations"):
            unlocked = await set_locked(api, locked=False)
        # Answered (not a 503 at the request's deadline) with the account unlocked, part of the
        # requests accepted and the rest still pending, as the payload's viewer shows.
        assert unlocked["settings"] == {"locked": False} and unlocked["errors"] == []
        viewer = unlocked["viewer"]
        assert viewer["followRequestCount"] > 0 and viewer["fansCount"] + viewer["followRequestCount"] == FANS
        assert "still being accepted" in caplog.text

        for _ in range(100):
            if await counts(api) == (FANS, 0):
                break
            await asyncio.sleep(0.1)
        assert await counts(api) == (FANS, 0)


@pytest.mark.usefixtures("slow_acceptance")
async def test_unlocking_a_backlog_that_fits_in_time_answers_once_all_are_accepted(
    served_redis: Client, settings: Settings
) -> None:
    async with serve(settings, served_redis) as api:  # 0.6 s of acceptance in a 10 s request
        await locked_with_requests(api, 3)
        unlocked = await set_locked(api, locked=False)
        assert unlocked["viewer"] == {"fansCount": 3, "followRequestCount": 0}
