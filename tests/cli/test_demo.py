"""The demo graph: deterministic, realistic in shape, and loaded whole into the real Redis."""

from __future__ import annotations

import itertools
import statistics
from collections import Counter

import pytest
import redis.asyncio as aioredis

from followgraph.cli.demo import (
    DAY_MS,
    DemoSpec,
    demo_edges,
    demo_users,
    is_empty,
    load_demo,
    load_demo_controls,
)
from followgraph.store import FollowStore, ListKind
from followgraph.store.graph.bulk import Edge, UserRow
from followgraph.store.graph.profiles import validate_avatar_url, validate_name
from followgraph.store.graph.repair import verify
from followgraph.transport.demo_viewer import DEMO_VIEWER

NOW = 1_760_000_000_000
SPEC = DemoSpec(users=2000, days=30)


@pytest.fixture(scope="module")
def users() -> list[UserRow]:
    return demo_users(SPEC)


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return list(demo_edges(SPEC, now_ms=NOW))


def test_same_seed_same_graph(users: list[UserRow], edges: list[Edge]) -> None:
    assert demo_users(SPEC) == users
    assert list(demo_edges(SPEC, now_ms=NOW)) == edges


def test_another_seed_another_graph(users: list[UserRow], edges: list[Edge]) -> None:
    other = DemoSpec(users=SPEC.users, days=SPEC.days, seed=SPEC.seed + 100)
    other_users = demo_users(other)
    other_edges = list(demo_edges(other, now_ms=NOW))
    assert [u.user_id for u in other_users] == [u.user_id for u in users]
    assert [u.name for u in other_users] != [u.name for u in users]
    pairs = {(e.follower, e.followee) for e in edges}
    other_pairs = {(e.follower, e.followee) for e in other_edges}
    assert other_pairs != pairs
    assert len(other_pairs & pairs) < 0.8 * len(pairs)


def test_users_are_numbered_with_valid_profiles(users: list[UserRow]) -> None:
    assert [u.user_id for u in users] == [str(i) for i in range(1, 2001)]
    for user in users:
        assert user.name is not None and validate_name(user.name) == user.name
        assert user.name.count(" ") == 1
        assert user.avatar_url == f"https://api.dicebear.com/9.x/thumbs/png?seed=fg{user.user_id}"
        assert validate_avatar_url(user.avatar_url) == user.avatar_url
        assert user.created_at is None
    assert len({u.name for u in users}) > 100


def test_edges_are_simple(edges: list[Edge]) -> None:
    ids = {str(i) for i in range(1, 2001)}
    pairs = [(e.follower, e.followee) for e in edges]
    assert len(pairs) == len(set(pairs))
    assert all(follower != followee for follower, followee in pairs)
    assert {u for pair in pairs for u in pair} <= ids
    # About mean_following follows each, plus follow-backs.
    assert 20 * 2000 * 0.8 < len(edges) < 20 * 2000 * 1.6


def test_fans_are_heavy_tailed_with_user_one_on_top(edges: list[Edge]) -> None:
    fans = Counter(e.followee for e in edges)
    counts = [fans[str(i)] for i in range(1, 2001)]
    top_user, top = fans.most_common(1)[0]
    assert top_user == "1"
    assert top == max(counts)
    median = statistics.median(counts)
    assert median > 0
    assert top > 20 * median
    # The ten biggest accounts hold a large share of all follows.
    assert sum(sorted(counts, reverse=True)[:10]) > 0.12 * len(edges)


def test_there_are_mutual_pairs(edges: list[Edge]) -> None:
    pairs = {(e.follower, e.followee) for e in edges}
    mutual = {frozenset(p) for p in pairs if (p[1], p[0]) in pairs}
    assert len(mutual) > 0.02 * len(edges)


def test_times_are_within_the_last_days(edges: list[Edge]) -> None:
    start = NOW - SPEC.days * DAY_MS
    times = [e.at for e in edges]
    assert all(t is not None and start <= t <= NOW for t in times)
    known = [t for t in times if t is not None]
    # Spread over the whole window, not bunched at one end.
    assert min(known) < start + DAY_MS
    assert max(known) > NOW - DAY_MS


def test_a_follow_back_comes_after_the_follow(edges: list[Edge]) -> None:
    # demo_edges yields a follow-back right after the follow it answers.
    backs = 0
    for previous, edge in itertools.pairwise(edges):
        if (edge.follower, edge.followee) == (previous.followee, previous.follower):
            assert edge.at is not None and previous.at is not None
            assert edge.at >= previous.at
            backs += 1
    assert backs > 100


async def test_load_demo_writes_every_user_and_edge(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    spec = DemoSpec(users=300, seed=11)
    expected_users = demo_users(spec)
    expected_edges = list(demo_edges(spec, now_ms=NOW))
    assert await is_empty(store)
    progress: list[tuple[int, int]] = []

    loaded = await load_demo(store, spec, now_ms=NOW, progress=lambda u, f: progress.append((u, f)))

    assert loaded == (300, len(expected_edges))
    # The users whose follows are written, and the follows, each growing to the whole graph.
    assert len(progress) > 1
    assert progress == sorted(progress)
    assert all(0 < users <= 300 for users, _ in progress)
    assert progress[-1] == (300, len(expected_edges))
    assert not await is_empty(store)
    ids = [str(i) for i in range(1, 301)]
    assert await store.registered(ids) == [True] * 300
    profiles = await store.profiles(ids)
    assert [(p.name, p.avatar_url) for p in profiles if p is not None] == [
        (u.name, u.avatar_url) for u in expected_users
    ]
    counts = await store.counts(ids)
    assert sum(c.following for c in counts) == len(expected_edges)
    assert sum(c.fans for c in counts) == len(expected_edges)
    assert counts[0].fans == max(c.fans for c in counts)

    # Every follow is there with its time, seen from both sides.
    queries = [
        store.list_query(kind, u, first=1000) for u in ids for kind in (ListKind.FOLLOWING, ListKind.FANS)
    ]
    following: set[tuple[str, str, int]] = set()
    fans: set[tuple[str, str, int]] = set()
    for query, page in zip(queries, await store.pages(queries), strict=True):
        assert not page.has_next
        for entry in page.entries:
            if query.kind is ListKind.FOLLOWING:
                following.add((query.user_id, entry.user_id, entry.at))
            else:
                fans.add((entry.user_id, query.user_id, entry.at))
    expected = {(e.follower, e.followee, e.at) for e in expected_edges}
    assert following == expected
    assert fans == expected
    pairs = {(e.follower, e.followee) for e in expected_edges}
    assert sum(c.mutual for c in counts) == sum(1 for a, b in pairs if (b, a) in pairs)


async def test_the_demo_shows_every_social_control(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    spec = DemoSpec(users=800, seed=5)
    await load_demo(store, spec, now_ms=NOW)
    assert await load_demo_controls(store, spec) == 3 + 1 + 1 + 12 + 2 + 1

    async def members(kind: ListKind, user_id: str) -> list[str]:
        return [e.user_id for e in (await store.page(kind, user_id, first=100)).entries]

    assert await members(ListKind.REQUESTS_OUT, DEMO_VIEWER) == ["700"]
    assert sorted(await members(ListKind.REQUESTS_IN, "701")) == [str(u) for u in range(705, 716)]
    assert await members(ListKind.BLOCKING, DEMO_VIEWER) == ["720"]
    assert await members(ListKind.BLOCKING, "721") == [DEMO_VIEWER]
    assert await members(ListKind.MUTING, DEMO_VIEWER) == ["722"]
    profiles = {p.user_id: p.settings for p in await store.profiles(["700", "703", "704"]) if p}
    assert profiles["700"].locked and profiles["703"].hide_following and profiles["704"].hide_fans
    assert (await verify(store)).clean


async def test_a_small_demo_has_no_social_controls(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    spec = DemoSpec(users=300, seed=5)
    await load_demo(store, spec, now_ms=NOW)
    assert await load_demo_controls(store, spec) == 0
