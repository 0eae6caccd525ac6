"""Accounts switched off, back on and deleted, in the store: on real Redis, on the real cluster and
on fakeredis, in one script and in batches."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from followgraph.store import (
    AccountInactiveError,
    AccountState,
    FollowStore,
    ListKind,
    UserNotFoundError,
)
from followgraph.store.graph import lifecycle
from followgraph.store.graph.repair import Problem, verify
from followgraph.store.redis.lua import Client


@pytest.fixture(params=["one script", "batches"])
async def users(
    request: pytest.FixtureRequest, store: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[FollowStore]:
    if request.param == "batches":
        monkeypatch.setattr(lifecycle, "ATOMIC_LIMIT", 0)
        monkeypatch.setattr(lifecycle, "BATCH", 2)
    for user_id in ("ann", "bob", "cat", "dan", "eve"):
        await store.upsert_user(user_id, name=user_id.title())
    yield store


async def members(store: FollowStore, kind: ListKind, user_id: str) -> dict[str, int]:
    page = await store.page(kind, user_id, first=100)
    return {entry.user_id: entry.at for entry in page.entries}


async def counts(store: FollowStore, user_id: str) -> tuple[int, int, int]:
    [c] = await store.counts([user_id])
    return c.following, c.fans, c.mutual


async def snapshot(store: FollowStore, user_ids: list[str]) -> dict[tuple[str, str], dict[str, int]]:
    return {
        (kind.value, user_id): await members(store, kind, user_id)
        for user_id in user_ids
        for kind in (ListKind.FOLLOWING, ListKind.FANS, ListKind.MUTUAL)
    }


async def keys_naming(redis: Client, user_id: str) -> list[str]:
    """Every key whose name or members name `user_id`."""
    found = []
    async for key in redis.scan_iter(match="*", count=1000):
        kind = await redis.type(key)
        if f"{{u:{user_id}}}" in key:
            found.append(key)
        elif kind == "zset" and await redis.zscore(key, user_id) is not None:
            found.append(key)
        elif kind == "set" and await redis.sismember(key, user_id):
            found.append(key)
        elif kind == "hash" and user_id in await redis.hvals(key):
            found.append(key)
    return found


async def test_deactivation_takes_the_account_out_of_every_other_users_sets(users: FollowStore) -> None:
    s = users
    for a, b in (("ann", "bob"), ("bob", "ann"), ("cat", "ann"), ("ann", "dan")):
        await s.follow(follower=a, followee=b)
    before = await snapshot(s, ["ann", "bob", "cat", "dan"])

    assert await s.deactivate("ann") is AccountState.ACTIVE

    assert await s.account_state("ann") is AccountState.DEACTIVATED
    assert await s.profiles(["ann"]) == [None]
    assert await counts(s, "bob") == (0, 0, 0)
    assert await counts(s, "cat") == (0, 0, 0)
    assert await counts(s, "dan") == (0, 0, 0)
    assert await members(s, ListKind.FANS, "bob") == {}
    assert (await verify(s)).clean  # what ann's sets keep is no problem
    await s.redis.zadd(s.keys.fans("bob"), {"ann": 1})
    report = await verify(s, fix=True)
    assert report.problems == {Problem.OFF_ACCOUNT_LISTED: 1}
    assert (await verify(s)).clean
    # Nobody can follow an account that is off, nor can it act.
    with pytest.raises(UserNotFoundError):
        await s.follow(follower="eve", followee="ann")
    with pytest.raises(UserNotFoundError):
        await s.follow(follower="ann", followee="eve")

    await s.reactivate("ann")

    assert await s.account_state("ann") is AccountState.ACTIVE
    assert await snapshot(s, ["ann", "bob", "cat", "dan"]) == before
    assert (await verify(s)).clean


async def test_what_ended_meanwhile_stays_ended(users: FollowStore) -> None:
    s = users
    for a, b in (("ann", "bob"), ("bob", "ann"), ("cat", "ann"), ("ann", "dan"), ("eve", "ann")):
        await s.follow(follower=a, followee=b)
    await s.deactivate("ann")

    with pytest.raises(UserNotFoundError):  # bob unfollows: ann is not there to him...
        await s.unfollow(follower="bob", followee="ann")
    with pytest.raises(UserNotFoundError):  # ...and dan removes ann as a fan
        await s.remove_fan(user="dan", fan="ann")
    await s.delete_account("cat")
    await s.reactivate("ann")

    assert set(await members(s, ListKind.FOLLOWING, "ann")) == {"bob"}
    assert set(await members(s, ListKind.FANS, "ann")) == {"eve"}
    assert await members(s, ListKind.MUTUAL, "ann") == {}
    assert set(await members(s, ListKind.FANS, "bob")) == {"ann"}
    assert await counts(s, "ann") == (1, 1, 0)
    assert (await verify(s)).clean


async def test_a_follow_between_two_accounts_that_are_off_comes_back_with_both(users: FollowStore) -> None:
    s = users
    await s.follow(follower="ann", followee="bob")
    await s.follow(follower="bob", followee="ann")
    before = await snapshot(s, ["ann", "bob"])

    await s.deactivate("ann")
    await s.deactivate("bob")
    await s.reactivate("ann")
    assert await counts(s, "ann") == (0, 0, 0)  # bob is still off
    await s.deactivate("ann")
    await s.reactivate("bob")
    assert await counts(s, "bob") == (0, 0, 0)
    await s.reactivate("ann")

    assert await snapshot(s, ["ann", "bob"]) == before
    assert (await verify(s)).clean


async def test_suspension_is_lifted_by_an_admin_only(users: FollowStore) -> None:
    s = users
    await s.follow(follower="bob", followee="ann")
    await s.deactivate("ann")
    assert await s.deactivate("ann", state=AccountState.SUSPENDED, reason="spam") is AccountState.DEACTIVATED
    assert await s.deactivate("ann") is AccountState.SUSPENDED  # a user cannot turn it into a deactivation
    [account] = await s.accounts(["ann"])
    assert account is not None and account["state"] == "SUSPENDED" and account["stateReason"] == "spam"

    with pytest.raises(AccountInactiveError, match="Only an admin"):
        await s.reactivate("ann")
    await s.reactivate("ann", lifting=AccountState.SUSPENDED)

    assert set(await members(s, ListKind.FOLLOWING, "bob")) == {"ann"}
    with pytest.raises(AccountInactiveError, match="not suspended"):
        await s.deactivate("ann")  # deactivated...
        await s.reactivate("ann", lifting=AccountState.SUSPENDED)  # ...is not suspended


async def test_pending_requests_end_with_a_deactivation(users: FollowStore) -> None:
    s = users
    await s.update_settings("ann", locked=True)
    await s.follow(follower="bob", followee="ann")
    await s.update_settings("cat", locked=True)
    await s.follow(follower="ann", followee="cat")
    await s.deactivate("ann")
    await s.reactivate("ann")
    assert await members(s, ListKind.REQUESTS_IN, "ann") == {}
    assert await members(s, ListKind.REQUESTS_OUT, "bob") == {}
    assert await members(s, ListKind.REQUESTS_IN, "cat") == {}
    assert (await verify(s)).clean


@pytest.mark.parametrize("off_first", [False, True])
async def test_a_deletion_leaves_no_key_and_no_member_naming_the_user(
    users: FollowStore, backend: Client, off_first: bool
) -> None:
    s = users
    for a, b in (("ann", "bob"), ("bob", "ann"), ("cat", "ann"), ("ann", "dan")):
        await s.follow(follower=a, followee=b)
    await s.update_settings("eve", locked=True)
    await s.follow(follower="ann", followee="eve")
    await s.block(blocker="ann", blocked="cat")
    await s.block(blocker="dan", blocked="ann")
    await s.mute(muter="ann", muted="bob")
    await s.mute(muter="eve", muted="ann")
    await s.mark_fans_seen("ann")
    await s.deactivate("bob")  # bob's sets keep ann
    if off_first:
        await s.deactivate("ann")

    await s.delete_account("ann")

    assert await s.account_state("ann") is None
    assert await keys_naming(backend, "ann") == []
    with pytest.raises(UserNotFoundError):
        await s.delete_account("ann")
    await s.reactivate("bob")
    assert await counts(s, "bob") == (0, 0, 0)
    assert (await verify(s)).clean


async def test_unknown_users(users: FollowStore) -> None:
    with pytest.raises(UserNotFoundError):
        await users.deactivate("zed")
    with pytest.raises(UserNotFoundError):
        await users.reactivate("zed")
    assert await users.account_state("zed") is None
    await users.reactivate("ann")  # on already: nothing to do
