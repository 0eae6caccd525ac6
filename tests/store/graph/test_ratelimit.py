"""The follow rate limit inside the follow script: counted atomically with the follow, on the
follower's slot, requests included."""

from __future__ import annotations

import time

import pytest
from redis.crc import key_slot

from followgraph.store import (
    BlockedError,
    FollowLimit,
    FollowResult,
    FollowStore,
    ListKind,
    Parts,
    RateLimitedError,
    Relationship,
    UserNotFoundError,
)
from followgraph.store.redis.lua import Client

LIMIT = FollowLimit.parse("3/minute")


@pytest.fixture
async def users(store: FollowStore) -> FollowStore:
    for user_id in ("me", "you", "t0", "t1", "t2", "t3", "t4"):
        await store.upsert_user(user_id, name=user_id)
    return store


async def following(store: FollowStore, user_id: str) -> list[str]:
    return [entry.user_id for entry in (await store.page(ListKind.FOLLOWING, user_id, first=10)).entries]


def test_a_rate_is_read_and_named_by_the_limits_library() -> None:
    assert LIMIT == FollowLimit(3, 60_000, "3 per 1 minute")
    assert FollowLimit.parse("400/day").window_ms == 86_400_000
    with pytest.raises(ValueError):
        FollowLimit.parse("lots")


async def test_the_fourth_follow_in_the_window_is_refused_writes_nothing_and_says_when(
    users: FollowStore,
) -> None:
    for target in ("t0", "t1", "t2"):
        assert (await users.follow(follower="me", followee=target, limit=LIMIT)).changed
    started = int(time.time() * 1000)

    with pytest.raises(RateLimitedError) as refused:
        await users.follow(follower="me", followee="t3", limit=LIMIT)

    assert refused.value.code == "RATE_LIMITED"
    assert str(refused.value) == "Too many follows: the limit is 3 per 1 minute."
    # The oldest of the three leaves the window a minute after it was made.
    assert started - 60_000 <= refused.value.retry_at - 60_000 <= started
    assert await following(users, "me") == ["t2", "t1", "t0"]


async def test_requests_and_refused_follows_of_known_users_count(users: FollowStore) -> None:
    await users.update_settings("t0", locked=True)
    await users.block(blocker="t1", blocked="me")

    assert (await users.follow(follower="me", followee="t0", limit=LIMIT)).pending
    with pytest.raises(BlockedError):
        await users.follow(follower="me", followee="t1", limit=LIMIT)
    with pytest.raises(UserNotFoundError):  # not a follow between users: not counted
        await users.follow(follower="me", followee="nobody", limit=LIMIT)
    await users.follow(follower="me", followee="t2", limit=LIMIT)

    with pytest.raises(RateLimitedError):
        await users.follow(follower="me", followee="t3", limit=LIMIT)


async def test_each_follower_has_a_window_of_its_own_and_imports_are_not_limited(
    users: FollowStore,
) -> None:
    for target in ("t0", "t1", "t2"):
        await users.follow(follower="me", followee=target, limit=LIMIT)
    await users.follow(follower="you", followee="t0", limit=LIMIT)
    await users.follow(follower="me", followee="t3", at=1000)  # an import: no limit given
    with pytest.raises(RateLimitedError):
        await users.follow(follower="me", followee="t4", limit=LIMIT)
    assert await following(users, "me") == ["t2", "t1", "t0", "t3"]


async def test_the_window_lives_on_the_followers_slot_and_expires_with_it(
    users: FollowStore, backend: Client
) -> None:
    await users.follow(follower="me", followee="t0", limit=LIMIT)
    key = users.keys.follow_limit("me")
    assert key_slot(key.encode()) == users.keys.slot("me")
    assert await backend.llen(key) == 1
    assert 0 < await backend.pttl(key) <= 60_000
    assert key.startswith(users.keys.rate_limit_prefix())


async def test_a_follow_read_with_its_users_runs_once_when_the_server_forgot_the_scripts(
    users: FollowStore, backend: Client
) -> None:
    await backend.script_flush()
    parts = Parts(profile=True, relation=True, counts=True, controls=True)

    result, (followee, follower) = await users.follow_reading(
        follower="me", followee="t0", limit=LIMIT, parts=parts
    )

    assert isinstance(result, FollowResult) and result.changed
    assert await backend.llen(users.keys.follow_limit("me")) == 1
    assert followee.counts is not None and followee.counts.fans == 1
    assert follower.relation.relationship is Relationship.SELF
