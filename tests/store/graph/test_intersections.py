from __future__ import annotations

import pytest

from followgraph.store import FollowStore, InvalidCursorError

USERS = ["a", "b", "v", "x1", "x2", "x3", "x4", "x5"]


@pytest.fixture
async def graph(store: FollowStore) -> FollowStore:
    for user_id in USERS:
        await store.upsert_user(user_id)
    # a and b both follow x1..x4 (a at times 10..40, b in another order); only a follows x5.
    for i, target in enumerate(["x1", "x2", "x3", "x4", "x5"], start=1):
        await store.follow(follower="a", followee=target, at=i * 10)
    for i, target in enumerate(["x4", "x3", "x2", "x1"], start=1):
        await store.follow(follower="b", followee=target, at=i)
    # fans of a: x1..x4; v follows x2 and x4 only.
    for i, fan in enumerate(["x1", "x2", "x3", "x4"], start=1):
        await store.follow(follower=fan, followee="a", at=100 + i)
    await store.follow(follower="v", followee="x2")
    await store.follow(follower="v", followee="x4")
    return store


async def test_common_following_is_ordered_by_the_first_users_follow_time(graph: FollowStore) -> None:
    page = await graph.common_following("a", "b", first=10)
    assert [(e.user_id, e.at) for e in page.entries] == [("x4", 40), ("x3", 30), ("x2", 20), ("x1", 10)]
    assert page.total == 4
    flipped = await graph.common_following("b", "a", first=10)
    assert [e.user_id for e in flipped.entries] == ["x1", "x2", "x3", "x4"]


async def test_common_following_pages_with_cursors(graph: FollowStore) -> None:
    first = await graph.common_following("a", "b", first=3)
    assert [e.user_id for e in first.entries] == ["x4", "x3", "x2"]
    assert (first.has_next, first.has_previous) == (True, False)
    rest = await graph.common_following("a", "b", first=3, after=first.end_cursor)
    assert [e.user_id for e in rest.entries] == ["x1"]
    assert (rest.has_next, rest.has_previous) == (False, True)
    with pytest.raises(InvalidCursorError):
        await graph.common_following("b", "a", first=3, after=first.end_cursor)


async def test_fans_you_follow(graph: FollowStore) -> None:
    page = await graph.fans_you_follow("v", "a")
    assert [(e.user_id, e.at) for e in page.entries] == [("x4", 104), ("x2", 102)]
    assert page.total == 2
    anonymous = await graph.fans_you_follow(None, "a")
    assert (anonymous.entries, anonymous.total) == ([], 0)


async def test_intersection_walks_in_chunks(graph: FollowStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("followgraph.store.graph.reads.INTERSECTION_CHUNK", 2)
    page = await graph.common_following("a", "b", first=10)
    assert [e.user_id for e in page.entries] == ["x4", "x3", "x2", "x1"]
