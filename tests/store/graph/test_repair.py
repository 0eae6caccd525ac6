from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

import pytest

from followgraph.server.redis_cluster import LocalCluster
from followgraph.store import Counts, FollowStore, ListKind, Relationship
from followgraph.store.graph import bulk, scripts
from followgraph.store.graph.bulk import Edge, follow_many, scan_edges, set_entries
from followgraph.store.graph.repair import Problem, verify
from followgraph.store.redis.lua import LuaScript
from tests.conftest import Backend
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


# -- a crash between the two steps of a change, on the real cluster ---------------------------------


class Crash(ConnectionError):
    """The process died after the first step: the second never reached Redis."""


@pytest.fixture
async def cluster_graph(redis_cluster: LocalCluster) -> AsyncIterator[FollowStore]:
    client = await Backend("cluster", redis_cluster.url).clean_client()
    store = FollowStore(client)
    assert store.cluster
    for user in USERS:
        await store.upsert_user(user)
    await store.follow(follower="a", followee="b", at=10)
    yield store
    await client.aclose()


async def cut_between_steps(
    monkeypatch: pytest.MonkeyPatch, second_step: LuaScript, change: Awaitable[object]
) -> None:
    """Run `change` as if the process died after its first step: the second never reaches Redis."""

    async def crash(*args: object) -> None:
        raise Crash("lost before the second step")

    with monkeypatch.context() as patch:
        patch.setattr(second_step, "run", crash)
        patch.setattr(second_step, "queue", crash)
        with pytest.raises(Crash):
            await change


async def test_a_follow_cut_between_its_steps_is_found_and_repaired(
    cluster_graph: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = cluster_graph
    # b's side written, a's not
    await cut_between_steps(
        monkeypatch, scripts.FOLLOW_IN_SCRIPT, store.follow(follower="b", followee="a", at=20)
    )

    report = await verify(store)
    assert dict(report.problems) == {Problem.FAN_MISSING: 1, Problem.MUTUAL_MISSING: 1}
    assert "fan entry missing: b follows a" in report.examples
    assert (await store.relations("a", ["b"]))[0].relationship is Relationship.FOLLOWING

    assert (await verify(store, fix=True)).repaired == 2
    assert (await verify(store)).clean
    repaired = await dump(store.redis)
    assert (await store.relations("a", ["b"]))[0].relationship is Relationship.MUTUAL
    # Repair wrote exactly what the whole follow writes: running it again changes nothing.
    assert not (await store.follow(follower="b", followee="a", at=20)).changed
    assert await dump(store.redis) == repaired


async def test_retrying_a_cut_follow_completes_it_without_repair(
    cluster_graph: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = cluster_graph
    await cut_between_steps(
        monkeypatch, scripts.FOLLOW_IN_SCRIPT, store.follow(follower="c", followee="b", at=30)
    )

    retried = await store.follow(follower="c", followee="b", at=99)
    assert not retried.changed  # the first step had landed, with its own time
    assert (await verify(store)).clean
    page = await store.page(ListKind.FANS, "b")
    assert [(e.user_id, e.at) for e in page.entries] == [("c", 30), ("a", 10)]


async def test_an_unfollow_cut_between_its_steps_is_found_and_repaired(
    cluster_graph: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = cluster_graph
    await store.follow(follower="b", followee="a", at=20)
    # a's side gone, b's left behind
    await cut_between_steps(
        monkeypatch, scripts.UNFOLLOW_IN_SCRIPT, store.unfollow(follower="a", followee="b")
    )

    report = await verify(store)
    assert dict(report.problems) == {Problem.FAN_STALE: 1, Problem.MUTUAL_STALE: 1}
    assert (await verify(store, fix=True)).repaired == 2
    assert (await verify(store)).clean
    assert (await store.counts(["a", "b"])) == [Counts(0, 1, 0), Counts(1, 0, 0)]


async def test_large_sets_are_read_in_chunks_and_checked_whole(
    store: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "FIRST_READ", 3)
    monkeypatch.setattr(bulk, "CHUNK", 5)
    fans = [f"f{i}" for i in range(23)]
    for user in ["star", *fans]:
        await store.upsert_user(user)
    await follow_many(store, [Edge(fan, "star", 1000 + i) for i, fan in enumerate(fans)])
    await store.redis.zrem(store.keys.fans("star"), "f0")  # the oldest fan: the last chunk's

    keys = [store.keys.fans("star"), store.keys.following("f1")]
    chunks = [chunk async for chunk in set_entries(store, keys)]
    assert len(chunks) > 2 and all(len(chunk) <= 5 + 3 for chunk in chunks)
    assert sorted(member for chunk in chunks for _, member, _ in chunk) == sorted([*fans[1:], "star"])

    report = await verify(store)
    assert (report.follows, dict(report.problems)) == (23, {Problem.FAN_MISSING: 1})
    assert (await verify(store, fix=True)).repaired == 1
    assert (await store.counts(["star"]))[0].fans == 23
    exported = [edge async for batch in scan_edges(store) for edge in batch]
    assert len(exported) == 23
