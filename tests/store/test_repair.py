from __future__ import annotations

import pytest

from store import FollowStore
from store.repair import Problem, verify
from tests.store.snapshot import dump

USERS = ["a", "b", "c", "x", "z"]


@pytest.fixture
async def graph(store: FollowStore) -> FollowStore:
    for user in USERS:
        await store.upsert_user(user)
    await store.follow(follower="a", followee="b", at=10)
    await store.follow(follower="b", followee="a", at=20)
    await store.follow(follower="c", followee="a", at=30)
    await store.follow(follower="x", followee="b", at=40)
    return store


async def test_a_consistent_graph_verifies_clean(graph: FollowStore) -> None:
    report = await verify(graph)
    assert report.clean
    assert (report.users, report.follows) == (4, 4)


async def test_verify_finds_every_kind_of_divergence_and_repair_converges(graph: FollowStore) -> None:
    clean = await dump(graph.redis)
    k, r = graph.keys, graph.redis
    # A crash after the first step of b->a on a cluster: b's side written, a's fans and mutual not.
    await r.zrem(k.fans("a"), "b")
    await r.zrem(k.mutual("a"), "b")
    await r.zadd(k.fans("b"), {"x": 99})  # x followed b at 40
    await r.zadd(k.fans("c"), {"z": 5})  # z does not follow c
    await r.zadd(k.mutual("c"), {"a": 7})  # c and a are not mutual
    broken = await dump(r)

    report = await verify(graph)
    assert dict(report.problems) == {
        Problem.FAN_MISSING: 1,
        Problem.MUTUAL_MISSING: 1,
        Problem.FAN_TIME_WRONG: 1,
        Problem.FAN_STALE: 1,
        Problem.MUTUAL_STALE: 1,
    }
    assert "fan entry missing: b follows a" in report.examples
    assert await dump(r) == broken  # verify reads only

    repaired = await verify(graph, fix=True)
    assert repaired.repaired == 5
    assert (await verify(graph)).clean
    assert await dump(r) == clean


async def test_progress_is_reported(graph: FollowStore) -> None:
    seen: list[int] = []
    await verify(graph, progress=seen.append)
    assert seen and seen[-1] == 4
