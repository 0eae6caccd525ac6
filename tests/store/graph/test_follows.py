from __future__ import annotations

import pytest

from followgraph.store import (
    CannotFollowSelfError,
    FollowStore,
    Keys,
    ListKind,
    Relationship,
    UserNotFoundError,
)


@pytest.fixture
async def users(store: FollowStore) -> FollowStore:
    for user_id in ("alice", "bob", "carol"):
        await store.upsert_user(user_id, name=user_id.title())
    return store


async def members(store: FollowStore, kind: ListKind, user_id: str) -> list[str]:
    page = await store.page(kind, user_id, first=100)
    return [entry.user_id for entry in page.entries]


async def test_follow_is_idempotent_and_reports_the_relationship(users: FollowStore) -> None:
    first = await users.follow(follower="alice", followee="bob")
    again = await users.follow(follower="alice", followee="bob")
    assert (first.changed, first.relationship) == (True, Relationship.FOLLOWING)
    assert (again.changed, again.relationship) == (False, Relationship.FOLLOWING)
    assert await members(users, ListKind.FOLLOWING, "alice") == ["bob"]
    assert await members(users, ListKind.FANS, "bob") == ["alice"]


async def test_following_back_makes_both_mutual(users: FollowStore) -> None:
    await users.follow(follower="alice", followee="bob", at=100)
    result = await users.follow(follower="bob", followee="alice", at=250)
    assert result.relationship is Relationship.MUTUAL
    for me, other in (("alice", "bob"), ("bob", "alice")):
        page = await users.page(ListKind.MUTUAL, me)
        assert [(e.user_id, e.at) for e in page.entries] == [(other, 250)]
    counts = await users.counts(["alice", "bob", "carol"])
    assert [(c.following, c.fans, c.mutual) for c in counts] == [(1, 1, 1), (1, 1, 1), (0, 0, 0)]


async def test_mutual_time_is_the_later_follow_even_when_imported_out_of_order(users: FollowStore) -> None:
    await users.follow(follower="alice", followee="bob", at=900)
    await users.follow(follower="bob", followee="alice", at=300)
    for me in ("alice", "bob"):
        page = await users.page(ListKind.MUTUAL, me)
        assert [e.at for e in page.entries] == [900]


async def test_follow_keeps_the_first_time(users: FollowStore) -> None:
    await users.follow(follower="alice", followee="bob", at=100)
    await users.follow(follower="alice", followee="bob", at=999)
    page = await users.page(ListKind.FANS, "bob")
    assert [e.at for e in page.entries] == [100]


async def test_live_follows_take_the_redis_clock(users: FollowStore, backend: object) -> None:
    await users.follow(follower="alice", followee="bob")
    following = (await users.page(ListKind.FOLLOWING, "alice")).entries[0]
    fan = (await users.page(ListKind.FANS, "bob")).entries[0]
    assert following.at == fan.at > 1_600_000_000_000


async def test_unfollow_removes_both_directions_and_the_mutual(users: FollowStore) -> None:
    await users.follow(follower="alice", followee="bob")
    await users.follow(follower="bob", followee="alice")
    result = await users.unfollow(follower="alice", followee="bob")
    assert (result.changed, result.relationship) == (True, Relationship.FOLLOWED_BY)
    again = await users.unfollow(follower="alice", followee="bob")
    assert (again.changed, again.relationship) == (False, Relationship.FOLLOWED_BY)
    assert await members(users, ListKind.FOLLOWING, "alice") == []
    assert await members(users, ListKind.FANS, "bob") == []
    assert await members(users, ListKind.MUTUAL, "alice") == []
    assert await members(users, ListKind.MUTUAL, "bob") == []
    assert await members(users, ListKind.FOLLOWING, "bob") == ["alice"]


async def test_remove_fan_stops_the_fan_following(users: FollowStore) -> None:
    await users.follow(follower="bob", followee="alice")
    await users.follow(follower="alice", followee="bob")
    result = await users.remove_fan(user="alice", fan="bob")
    assert (result.changed, result.relationship) == (True, Relationship.FOLLOWING)
    assert await members(users, ListKind.FANS, "alice") == []
    assert await members(users, ListKind.FOLLOWING, "bob") == []
    lone = await users.remove_fan(user="carol", fan="bob")
    assert (lone.changed, lone.relationship) == (False, Relationship.NONE)


async def test_self_follow_and_unknown_users_write_nothing(users: FollowStore, backend: object) -> None:
    with pytest.raises(CannotFollowSelfError):
        await users.follow(follower="alice", followee="alice")
    with pytest.raises(UserNotFoundError) as unknown_followee:
        await users.follow(follower="alice", followee="nobody")
    assert unknown_followee.value.user_id == "nobody"
    with pytest.raises(UserNotFoundError) as unknown_follower:
        await users.follow(follower="ghost", followee="alice")
    assert unknown_follower.value.user_id == "ghost"
    with pytest.raises(UserNotFoundError):
        await users.unfollow(follower="alice", followee="nobody")
    keys = Keys()
    for user_id in ("alice", "nobody", "ghost"):
        for key in (keys.following(user_id), keys.fans(user_id), keys.mutual(user_id)):
            assert await users.redis.exists(key) == 0


async def test_new_fans_count_counts_from_the_last_mark(users: FollowStore) -> None:
    await users.follow(follower="bob", followee="alice")
    assert await users.new_fans_count("alice") == 1
    seen = await users.mark_fans_seen("alice")
    assert seen > 1_600_000_000_000
    assert await users.new_fans_count("alice") == 0
    await users.follow(follower="carol", followee="alice", at=seen + 5)
    assert await users.new_fans_count("alice") == 1
