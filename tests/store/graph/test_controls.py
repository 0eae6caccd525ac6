"""Blocks, mutes, locked accounts and follow requests in the store, on real Redis, on the real
cluster and on fakeredis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest
import redis.asyncio as aioredis

from followgraph.server.redis_cluster import LocalCluster
from followgraph.store import (
    BlockedError,
    Controls,
    FollowResult,
    FollowStore,
    ListKind,
    Relationship,
    UserNotFoundError,
)
from followgraph.store.graph import control_scripts as cs
from followgraph.store.graph import scripts
from followgraph.store.graph.repair import Problem, verify
from followgraph.store.redis.lua import AnyPipeline, LuaScript, run_pipeline
from tests.conftest import Backend

T = TypeVar("T")


@pytest.fixture
async def users(store: FollowStore) -> FollowStore:
    for user_id in ("ann", "bob", "cat", "dan"):
        await store.upsert_user(user_id, name=user_id.title())
    return store


async def members(store: FollowStore, kind: ListKind, user_id: str) -> list[str]:
    page = await store.page(kind, user_id, first=100)
    return [entry.user_id for entry in page.entries]


async def controls(store: FollowStore, viewer: str, other: str) -> Controls:
    [facts] = await store.user_facts(
        viewer, [other], profile=False, relation=False, counts=False, controls=True
    )
    return facts.controls


async def lock(store: FollowStore, user_id: str, locked: bool = True) -> bool:
    _, unlocked = await store.update_settings(user_id, locked=locked)
    return unlocked


def pause_after_owner_steps(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Pause each batch between its owner's step and its requesters' steps; set once one ran.

    The pause is where a caller gives up (a request timeout, a disconnect) or a server is told
    to stop; `monkeypatch.undo()` ends it.
    """
    owner_step = cs.ACCEPT_OLDEST_SCRIPT.run
    owner_done = asyncio.Event()

    async def then_pause(*args: Any) -> Any:
        reply = await owner_step(*args)
        owner_done.set()
        await asyncio.sleep(0.05)
        return reply

    monkeypatch.setattr(cs.ACCEPT_OLDEST_SCRIPT, "run", then_pause)
    return owner_done


async def test_a_block_ends_follows_and_requests_both_ways(users: FollowStore) -> None:
    await users.follow(follower="ann", followee="bob")
    await users.follow(follower="bob", followee="ann")
    await lock(users, "cat")
    await users.follow(follower="bob", followee="cat")  # a request

    first = await users.block(blocker="ann", blocked="bob")
    again = await users.block(blocker="ann", blocked="bob")
    await users.block(blocker="cat", blocked="bob")

    assert (first.changed, again.changed) == (True, False)
    for kind in (ListKind.FOLLOWING, ListKind.FANS, ListKind.MUTUAL):
        assert await members(users, kind, "ann") == []
        assert await members(users, kind, "bob") == []
    assert await members(users, ListKind.REQUESTS_IN, "cat") == []
    assert await members(users, ListKind.REQUESTS_OUT, "bob") == []
    assert await members(users, ListKind.BLOCKING, "ann") == ["bob"]
    counts = await users.counts(["ann", "bob"])
    assert [(n.following, n.fans, n.mutual) for n in counts] == [(0, 0, 0), (0, 0, 0)]
    assert await controls(users, "ann", "bob") == Controls(viewer_blocks=True)
    assert await controls(users, "bob", "ann") == Controls(blocks_viewer=True)


@pytest.mark.parametrize(("follower", "followee"), [("ann", "bob"), ("bob", "ann")])
async def test_nobody_follows_across_a_block(users: FollowStore, follower: str, followee: str) -> None:
    await users.block(blocker="ann", blocked="bob")
    with pytest.raises(BlockedError):
        await users.follow(follower=follower, followee=followee)
    await lock(users, followee)
    with pytest.raises(BlockedError):
        await users.follow(follower=follower, followee=followee)
    assert await members(users, ListKind.FOLLOWING, follower) == []
    assert await members(users, ListKind.REQUESTS_OUT, follower) == []


async def test_an_unblock_lets_follows_start_again_but_restores_none(users: FollowStore) -> None:
    await users.follow(follower="bob", followee="ann")
    await users.block(blocker="ann", blocked="bob")
    result = await users.unblock(blocker="ann", blocked="bob")
    assert (result.changed, result.relationship) == (True, Relationship.NONE)
    assert not (await users.unblock(blocker="ann", blocked="bob")).changed
    assert await members(users, ListKind.FANS, "ann") == []
    assert await controls(users, "bob", "ann") == Controls()
    assert (await users.follow(follower="bob", followee="ann")).changed


async def test_only_the_blocker_lifts_a_block(users: FollowStore) -> None:
    await users.block(blocker="ann", blocked="bob")
    assert not (await users.unblock(blocker="bob", blocked="ann")).changed
    with pytest.raises(BlockedError):
        await users.follow(follower="bob", followee="ann")


async def test_a_mute_changes_nothing_else(users: FollowStore) -> None:
    await users.follow(follower="ann", followee="bob")
    muted = await users.mute(muter="ann", muted="bob")
    assert (muted.changed, muted.relationship) == (True, Relationship.FOLLOWING)
    assert not (await users.mute(muter="ann", muted="bob")).changed
    assert await members(users, ListKind.MUTING, "ann") == ["bob"]
    assert await members(users, ListKind.FOLLOWING, "ann") == ["bob"]
    assert await controls(users, "ann", "bob") == Controls(viewer_mutes=True)
    assert await controls(users, "bob", "ann") == Controls()  # a mute is not shown to the muted
    assert (await users.mute(muter="ann", muted="bob", on=False)).changed
    assert await members(users, ListKind.MUTING, "ann") == []


async def test_a_follow_of_a_locked_account_is_a_request_until_accepted(users: FollowStore) -> None:
    await lock(users, "bob")
    asked = await users.follow(follower="ann", followee="bob")
    assert (asked.changed, asked.pending, asked.relationship) == (True, True, Relationship.NONE)
    again = await users.follow(follower="ann", followee="bob")
    assert (again.changed, again.pending) == (False, True)
    assert await members(users, ListKind.REQUESTS_IN, "bob") == ["ann"]
    assert await members(users, ListKind.REQUESTS_OUT, "ann") == ["bob"]
    assert await members(users, ListKind.FANS, "bob") == []
    assert await controls(users, "ann", "bob") == Controls(viewer_requested=True)
    assert await controls(users, "bob", "ann") == Controls(requested_viewer=True)
    assert await users.pending_count("bob") == 1

    accepted = await users.accept_request(user="bob", requester="ann")
    assert (accepted.changed, accepted.relationship) == (True, Relationship.FOLLOWED_BY)
    assert not (await users.accept_request(user="bob", requester="ann")).changed
    assert await members(users, ListKind.FANS, "bob") == ["ann"]
    assert await members(users, ListKind.FOLLOWING, "ann") == ["bob"]
    assert await members(users, ListKind.REQUESTS_IN, "bob") == []
    assert await members(users, ListKind.REQUESTS_OUT, "ann") == []
    # Already a fan: following again changes nothing and asks nothing.
    assert not (await users.follow(follower="ann", followee="bob")).pending


async def test_a_rejected_or_withdrawn_request_leaves_nothing(users: FollowStore) -> None:
    await lock(users, "bob")
    await users.follow(follower="ann", followee="bob")
    await users.follow(follower="cat", followee="bob")
    assert (await users.reject_request(user="bob", requester="ann")).changed
    assert not (await users.reject_request(user="bob", requester="ann")).changed
    assert (await users.unfollow(follower="cat", followee="bob")).changed
    for user_id in ("ann", "bob", "cat"):
        for kind in ListKind:
            assert await members(users, kind, user_id) == []


async def test_an_import_is_never_a_request(users: FollowStore) -> None:
    await lock(users, "bob")
    result = await users.follow(follower="ann", followee="bob", at=1_000)
    assert not result.pending
    assert await members(users, ListKind.FANS, "bob") == ["ann"]


async def test_unlocking_accepts_every_pending_request_in_batches(users: FollowStore) -> None:
    await lock(users, "dan")
    fans = [f"fan{i}" for i in range(7)]
    for fan in fans:
        await users.upsert_user(fan)
        await users.follow(follower=fan, followee="dan")
    await users.follow(follower="dan", followee="fan3")
    settings, unlocked = await users.update_settings("dan", locked=False, hide_fans=True)
    assert unlocked and not settings.locked and settings.hide_fans
    steps = [n async for n in users.accept_pending("dan", batch=3)]
    assert steps == [3, 3, 1]
    assert sorted(await members(users, ListKind.FANS, "dan")) == fans
    assert await members(users, ListKind.MUTUAL, "dan") == ["fan3"]
    assert await users.pending_count("dan") == 0
    for fan in fans:
        assert await members(users, ListKind.FOLLOWING, fan) == ["dan"]
        assert await members(users, ListKind.REQUESTS_OUT, fan) == []


async def test_a_lock_that_comes_back_stops_the_acceptance(users: FollowStore) -> None:
    await lock(users, "dan")
    for user_id in ("ann", "bob"):
        await users.follow(follower=user_id, followee="dan")
    assert await lock(users, "dan", locked=False)
    assert not await lock(users, "dan", locked=True)
    assert [n async for n in users.accept_pending("dan")] == []
    assert await users.pending_count("dan") == 2


async def marked(store: FollowStore) -> list[str]:
    """The users marked as having an acceptance under way (Keys.accepting)."""
    return sorted(await store.redis.smembers(store.keys.accepting()))  # type: ignore[arg-type]


async def test_an_unlock_is_marked_until_its_acceptance_ends(users: FollowStore) -> None:
    await lock(users, "dan")
    for requester in ("ann", "bob"):
        await users.follow(follower=requester, followee="dan")
    assert await marked(users) == []
    assert await lock(users, "dan", locked=False)
    assert await marked(users) == ["dan"]
    assert await users.accept_all("dan") == 2
    assert await marked(users) == []


async def test_opening_an_open_account_leaves_no_mark_unless_an_acceptance_is_under_way(
    users: FollowStore,
) -> None:
    # As updateSettings opens an account: the acceptance follows, whether it was locked or not.
    assert not await lock(users, "ann", locked=False)
    assert await users.accept_all("ann") == 0
    assert await marked(users) == []
    with pytest.raises(UserNotFoundError):
        await lock(users, "ghost", locked=False)
    assert await marked(users) == []
    # Unlocked with requests still pending (their acceptance under way): asked again, the mark stays.
    await lock(users, "dan")
    await users.follow(follower="bob", followee="dan")
    assert await lock(users, "dan", locked=False)
    assert not await lock(users, "dan", locked=False)
    assert await marked(users) == ["dan"]
    assert await users.accept_all("dan") == 1
    assert await marked(users) == []


async def test_a_stopped_acceptance_ends_its_batch_and_the_next_start_accepts_the_rest(
    users: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    requesters = [f"r{i}" for i in range(7)]
    await lock(users, "dan")
    for requester in requesters:
        await users.upsert_user(requester)
        await users.follow(follower=requester, followee="dan")
    owner_done = pause_after_owner_steps(monkeypatch)
    assert await lock(users, "dan", locked=False)
    acceptance = asyncio.create_task(users.accept_all("dan", batch=2))
    await owner_done.wait()
    assert await users.finish_acceptances(timeout=5.0) == 0
    monkeypatch.undo()
    # The batch in flight was finished, both sides; the rest is pending, the owner still marked.
    assert await acceptance == 2
    assert await users.pending_count("dan") == 5
    assert await marked(users) == ["dan"]
    assert dict((await verify(users)).problems) == {Problem.REQUEST_TO_UNLOCKED: 5}

    # The next server's store (a process of its own) takes it up.
    restarted = FollowStore(users.redis, keys=users.keys)
    assert await restarted.resume_acceptances() == ["dan"]
    assert await restarted.pending_count("dan") == 0
    assert sorted(await members(restarted, ListKind.FANS, "dan")) == requesters
    assert await marked(restarted) == []
    assert (await verify(restarted)).clean


async def test_a_mark_of_an_account_locked_again_accepts_nothing(users: FollowStore) -> None:
    await lock(users, "dan")
    await users.follow(follower="ann", followee="dan")
    # Marked, then the server stopped before the unlock (or the owner locked again since).
    await users.redis.sadd(users.keys.accepting(), "dan")
    assert await users.resume_acceptances() == ["dan"]
    assert await users.pending_count("dan") == 1
    assert await marked(users) == []


async def test_settings_are_read_with_the_profile(users: FollowStore) -> None:
    settings, _ = await users.update_settings("ann", hide_following=True)
    [profile] = await users.profiles(["ann"])
    assert profile is not None and profile.settings == settings
    assert (settings.locked, settings.hide_following, settings.hide_fans) == (False, True, False)
    with pytest.raises(UserNotFoundError):
        await users.update_settings("ghost", locked=True)


@pytest.mark.parametrize(
    "action",
    [
        lambda s: s.block(blocker="ann", blocked="ghost"),
        lambda s: s.mute(muter="ann", muted="ghost"),
        lambda s: s.accept_request(user="ann", requester="ghost"),
        lambda s: s.reject_request(user="ghost", requester="ann"),
    ],
)
async def test_controls_name_registered_users(users: FollowStore, action: object) -> None:
    with pytest.raises(UserNotFoundError):
        await action(users)  # type: ignore[operator]


# -- on the real cluster: a block between the two steps of a follow --------------------------------


@pytest.fixture
async def cluster_users(redis_cluster: LocalCluster) -> AsyncIterator[FollowStore]:
    client = await Backend("cluster", redis_cluster.url).clean_client()
    store = FollowStore(client)
    assert store.cluster
    for user_id in ("ann", "bob"):
        await store.upsert_user(user_id)
    yield store
    await client.aclose()


async def between_steps(
    monkeypatch: pytest.MonkeyPatch,
    second_step: LuaScript,
    change: Awaitable[T],
    *,
    meanwhile: Callable[[], Awaitable[object]],
) -> T:
    """Run `change` (two steps on a cluster) with `meanwhile` done after its first step."""
    run = second_step.run

    async def meanwhile_first(*args: Any) -> Any:
        await meanwhile()
        return await run(*args)

    monkeypatch.setattr(second_step, "run", meanwhile_first)
    try:
        return await change
    finally:
        monkeypatch.undo()


async def test_a_block_between_the_steps_of_a_follow_undoes_it(
    cluster_users: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = cluster_users
    with pytest.raises(BlockedError):
        await between_steps(
            monkeypatch,
            scripts.FOLLOW_IN_SCRIPT,
            store.follow(follower="ann", followee="bob"),
            # bob blocks ann after ann's side of ann -> bob was written, before bob's side.
            meanwhile=lambda: store.block(blocker="bob", blocked="ann"),
        )
    for kind in (ListKind.FOLLOWING, ListKind.FANS, ListKind.MUTUAL):
        assert await members(store, kind, "ann") == []
        assert await members(store, kind, "bob") == []
    assert (await verify(store)).clean


@pytest.mark.parametrize("locked", [False, True], ids=["follow", "request"])
async def test_a_block_by_the_follower_between_the_steps_of_a_follow_undoes_it(
    cluster_users: FollowStore, monkeypatch: pytest.MonkeyPatch, locked: bool
) -> None:
    store = cluster_users
    if locked:
        await lock(store, "bob")
    with pytest.raises(BlockedError):
        await between_steps(
            monkeypatch,
            scripts.FOLLOW_IN_SCRIPT,
            store.follow(follower="ann", followee="bob"),
            # ann blocks bob after ann's side of ann -> bob was written, before bob's side.
            meanwhile=lambda: store.block(blocker="ann", blocked="bob"),
        )
    assert await state_of(store, "ann", "bob") == ([], [], [], [], [], [])
    assert await members(store, ListKind.BLOCKING, "ann") == ["bob"]
    assert (await verify(store)).clean


async def test_an_unlock_between_the_steps_of_a_request_makes_it_a_follow(
    cluster_users: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = cluster_users
    await lock(store, "bob")

    async def unlock() -> None:
        # bob unlocks, and accepts every pending request, after ann's side of the request was
        # written, before bob's side: there is nothing to accept yet.
        assert await lock(store, "bob", locked=False)
        assert [n async for n in store.accept_pending("bob")] == []

    result = await between_steps(
        monkeypatch, scripts.FOLLOW_IN_SCRIPT, store.follow(follower="ann", followee="bob"), meanwhile=unlock
    )
    assert (result.changed, result.pending, result.relationship) == (True, False, Relationship.FOLLOWING)
    assert await state_of(store, "ann", "bob") == (["bob"], ["ann"], [], [], [], [])
    assert (await verify(store)).clean


@pytest.mark.parametrize("between", ["withdrawal", "block"])
async def test_a_withdrawal_or_block_between_the_steps_of_an_accept_wins(
    cluster_users: FollowStore, monkeypatch: pytest.MonkeyPatch, between: str
) -> None:
    store = cluster_users
    await lock(store, "bob")
    await store.follow(follower="ann", followee="bob")

    async def end_the_request() -> None:
        # After bob's side of the accept was written, before ann's side.
        if between == "withdrawal":
            await store.unfollow(follower="ann", followee="bob")
        else:
            await store.block(blocker="ann", blocked="bob")

    await between_steps(
        monkeypatch,
        cs.ACCEPT_IN_SCRIPT,
        store.accept_request(user="bob", requester="ann"),
        meanwhile=end_the_request,
    )
    for kind in (ListKind.FOLLOWING, ListKind.FANS, ListKind.MUTUAL, ListKind.REQUESTS_OUT):
        assert await members(store, kind, "ann") == []
    for kind in (ListKind.FOLLOWING, ListKind.FANS, ListKind.MUTUAL, ListKind.REQUESTS_IN):
        assert await members(store, kind, "bob") == []
    assert (await verify(store)).clean


async def test_verify_knows_blocks_and_requests_and_repair_converges(users: FollowStore) -> None:
    k, r = users.keys, users.redis
    await users.block(blocker="ann", blocked="bob")
    await lock(users, "dan")
    await users.follow(follower="cat", followee="dan")
    assert (await verify(users)).clean
    # What a crash between steps, or a hand edit, could leave behind:
    await r.zrem(k.blocked_by("bob"), "ann")  # a block's second step lost
    await r.zadd(k.following("bob"), {"ann": 5})  # a follow across the block
    await r.zadd(k.fans("ann"), {"bob": 5})
    await r.zrem(k.requests_in("dan"), "cat")  # a request's second step lost
    await r.zadd(k.requests_in("ann"), {"dan": 7})  # a request nobody made
    await r.zadd(k.blocked_by("cat"), {"dan": 8})  # a block nobody made

    report = await verify(users)
    assert dict(report.problems) == {
        Problem.BLOCKED_BY_MISSING: 1,
        Problem.FOLLOW_ACROSS_BLOCK: 1,
        Problem.REQUEST_IN_MISSING: 1,
        Problem.REQUEST_IN_STALE: 1,
        Problem.BLOCKED_BY_STALE: 1,
    }
    await verify(users, fix=True)
    assert (await verify(users)).clean
    assert await controls(users, "bob", "ann") == Controls(blocks_viewer=True)
    assert await members(users, ListKind.FANS, "ann") == []
    assert await members(users, ListKind.REQUESTS_IN, "dan") == ["cat"]
    assert await members(users, ListKind.REQUESTS_IN, "ann") == []


async def test_repair_accepts_the_requests_an_unlocked_account_still_holds(users: FollowStore) -> None:
    k, r = users.keys, users.redis
    await lock(users, "bob")
    for requester in ("cat", "ann", "dan"):
        await users.follow(follower=requester, followee="bob")
    await users.follow(follower="bob", followee="dan")
    await lock(users, "bob", locked=False)  # and the acceptance never ran, or was cut short:
    # the oldest request's (cat's, or ann's when asked in the same ms) by a crash after the owner's
    # step of its batch (bob's side holds it as a fan); dan's with bob's side of the request lost
    # too; the other is simply still pending.
    owner = [k.profile("bob"), k.requests_in("bob"), k.fans("bob"), k.following("bob"), k.mutual("bob")]
    [oldest, accepted_at] = await cs.ACCEPT_OLDEST_SCRIPT.run(r, owner, [1])
    await r.zrem(k.requests_in("bob"), "dan")

    report = await verify(users)
    assert dict(report.problems) == {Problem.REQUEST_TO_UNLOCKED: 3, Problem.FAN_STALE: 1}
    await verify(users, fix=True)
    assert (await verify(users)).clean
    assert sorted(await members(users, ListKind.FANS, "bob")) == ["ann", "cat", "dan"]
    assert await members(users, ListKind.MUTUAL, "bob") == ["dan"]
    assert await members(users, ListKind.REQUESTS_IN, "bob") == []
    for requester in ("ann", "cat", "dan"):
        assert await members(users, ListKind.FOLLOWING, requester) == ["bob"]
        assert await members(users, ListKind.REQUESTS_OUT, requester) == []
    # The follow the owner's side recorded keeps its time.
    assert await r.zscore(k.following(oldest), "bob") == int(accepted_at)


async def test_an_unlock_cancelled_between_a_batch_s_steps_still_finishes_the_batch(
    users: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await lock(users, "bob")
    for requester in ("ann", "cat"):
        await users.follow(follower=requester, followee="bob")

    async def accept_all() -> None:
        async for _ in users.accept_pending("bob"):
            pass

    owner_done = pause_after_owner_steps(monkeypatch)
    assert await lock(users, "bob", locked=False)
    acceptance = asyncio.create_task(accept_all())
    await owner_done.wait()
    acceptance.cancel()
    with pytest.raises(asyncio.CancelledError):
        await acceptance
    monkeypatch.undo()
    for _ in range(500):
        if await members(users, ListKind.FOLLOWING, "cat") == ["bob"]:
            break
        await asyncio.sleep(0.01)
    assert await state_of(users, "ann", "bob") == (["bob"], ["cat", "ann"], [], [], [], [])
    assert await members(users, ListKind.FOLLOWING, "cat") == ["bob"]
    assert (await verify(users)).clean


async def test_an_unlock_s_acceptance_runs_to_its_end_when_its_caller_is_cancelled(
    users: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await lock(users, "dan")
    requesters = ["ann", "bob", "cat"]
    for requester in requesters:
        await users.follow(follower=requester, followee="dan")
    owner_step = cs.ACCEPT_OLDEST_SCRIPT.run
    first_done = asyncio.Event()

    async def signal(*args: Any) -> Any:
        reply = await owner_step(*args)
        first_done.set()
        return reply

    monkeypatch.setattr(cs.ACCEPT_OLDEST_SCRIPT, "run", signal)
    assert await lock(users, "dan", locked=False)
    acceptance = asyncio.create_task(users.accept_all("dan", batch=1))
    await first_done.wait()
    acceptance.cancel()  # a request timeout, a disconnect
    with pytest.raises(asyncio.CancelledError):
        await acceptance
    for _ in range(500):
        if await users.pending_count("dan") == 0 and await members(users, ListKind.FOLLOWING, "cat"):
            break
        await asyncio.sleep(0.01)
    monkeypatch.undo()
    assert sorted(await members(users, ListKind.FANS, "dan")) == requesters
    for requester in requesters:
        assert await members(users, ListKind.FOLLOWING, requester) == ["dan"]
    assert (await verify(users)).clean


async def _read_until(store: FollowStore, stop: asyncio.Event, seconds: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await store.page(ListKind.FANS, "reader", first=100)
        seconds.append(time.perf_counter() - started)
        await asyncio.sleep(0.001)


@pytest.mark.slow
async def test_unlocking_100_000_requests_accepts_all_while_reads_go_on(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    k, requests = store.keys, 100_000
    for user_id in ("owner", "reader"):
        await store.upsert_user(user_id)
    await lock(store, "owner")
    for start in range(0, requests, 10_000):
        chunk = range(start, start + 10_000)

        def fill(pipe: AnyPipeline, chunk: range = chunk) -> None:
            # What requests of the locked owner leave behind (run_pipeline: one round trip).
            pipe.zadd(k.requests_in("owner"), {f"r{i}": 1_000 + i for i in chunk})
            for i in chunk:
                pipe.zadd(k.requests_out(f"r{i}"), {"owner": 1_000 + i})

        await run_pipeline(real_redis, fill)
    await real_redis.zadd(k.fans("reader"), {f"f{i}": i for i in range(100)})

    async def reads_while(work: Any) -> tuple[list[float], Any]:
        seconds: list[float] = []
        stop = asyncio.Event()
        reader = asyncio.create_task(_read_until(store, stop, seconds))
        try:
            return seconds, await work
        finally:
            stop.set()
            await reader

    assert await lock(store, "owner", locked=False)
    during, accepted = await reads_while(store.accept_all("owner"))

    assert accepted == requests and await store.pending_count("owner") == 0
    assert await real_redis.zcard(k.fans("owner")) == requests
    assert await members(store, ListKind.FOLLOWING, "r99999") == ["owner"]
    # The event loop ran the reader between batches (how long the acceptance and the reads took
    # is measured by `python -m bench.unlock`, not asserted here).
    assert during


# -- who sees which list ------------------------------------------------------------------------------


async def page_as(
    store: FollowStore, kind: ListKind, owner: str, viewer: str | None
) -> tuple[bool, int, list[str]]:
    [page] = await store.pages([store.list_query(kind, owner, first=10, viewer=viewer, viewer_checked=True)])
    return page.hidden, page.total, [e.user_id for e in page.entries]


@pytest.fixture
async def graph(users: FollowStore) -> FollowStore:
    # ann follows bob and cat; bob and dan follow ann; ann and bob are mutual.
    for follower, followee in [("ann", "bob"), ("ann", "cat"), ("bob", "ann"), ("dan", "ann")]:
        await users.follow(follower=follower, followee=followee)
    return users


async def test_a_hidden_following_list_hides_the_mutual_list_too(graph: FollowStore) -> None:
    await graph.update_settings("ann", hide_following=True)
    for viewer in (None, "bob", "cat", "dan"):
        assert await page_as(graph, ListKind.FOLLOWING, "ann", viewer) == (True, 2, [])
        assert await page_as(graph, ListKind.MUTUAL, "ann", viewer) == (True, 1, [])
        assert (await page_as(graph, ListKind.FANS, "ann", viewer))[0] is False
    assert await page_as(graph, ListKind.FOLLOWING, "ann", "ann") == (False, 2, ["cat", "bob"])
    # The store's own reads (exports, repair) see everything.
    assert len((await graph.page(ListKind.FOLLOWING, "ann")).entries) == 2


async def test_hidden_fans_hide_the_mutual_list_too(graph: FollowStore) -> None:
    # A mutual is a fan: the mutual list would show some of the hidden fans by name.
    await graph.update_settings("ann", hide_fans=True)
    for viewer in (None, "bob", "cat", "dan"):
        assert await page_as(graph, ListKind.FANS, "ann", viewer) == (True, 2, [])
        assert await page_as(graph, ListKind.MUTUAL, "ann", viewer) == (True, 1, [])
        assert await page_as(graph, ListKind.FOLLOWING, "ann", viewer) == (False, 2, ["cat", "bob"])
    assert await page_as(graph, ListKind.MUTUAL, "ann", "ann") == (False, 1, ["bob"])


async def test_a_locked_account_shows_its_lists_to_its_fans_only(graph: FollowStore) -> None:
    await lock(graph, "ann")
    assert (await page_as(graph, ListKind.FANS, "ann", "bob"))[0] is False  # a fan
    assert (await page_as(graph, ListKind.FOLLOWING, "ann", "dan"))[0] is False  # a fan
    assert await page_as(graph, ListKind.FANS, "ann", "cat") == (True, 2, [])  # followed, not a fan
    assert await page_as(graph, ListKind.FANS, "ann", None) == (True, 2, [])


async def test_a_blocked_viewer_sees_no_list_of_the_blocker(graph: FollowStore) -> None:
    await graph.block(blocker="ann", blocked="dan")
    for kind in (ListKind.FOLLOWING, ListKind.FANS, ListKind.MUTUAL):
        hidden, _, entries = await page_as(graph, kind, "ann", "dan")
        assert hidden and entries == []
    # The block does not hide the blocked user's own lists from the blocker.
    assert (await page_as(graph, ListKind.FOLLOWING, "dan", "ann"))[0] is False


async def test_intersections_hide_what_would_reveal_a_hidden_list(graph: FollowStore) -> None:
    await graph.follow(follower="bob", followee="cat")
    common = await graph.common_following("ann", "bob", viewer="dan", viewer_checked=True)
    assert (common.hidden, common.total, [e.user_id for e in common.entries]) == (False, 1, ["cat"])
    await graph.update_settings("bob", hide_following=True)
    for user_id, other_id in (("ann", "bob"), ("bob", "ann")):
        common = await graph.common_following(user_id, other_id, viewer="dan", viewer_checked=True)
        # Hidden as a whole: its size would tell whether bob follows cat.
        assert (common.hidden, common.total, common.entries) == (True, 0, [])
    # bob sees his own.
    assert not (await graph.common_following("ann", "bob", viewer="bob", viewer_checked=True)).hidden

    await graph.follow(follower="cat", followee="dan")
    assert [e.user_id for e in (await graph.fans_you_follow("cat", "ann")).entries] == ["dan"]
    await graph.update_settings("ann", hide_fans=True)
    hidden = await graph.fans_you_follow("cat", "ann")
    assert (hidden.hidden, hidden.total, hidden.entries) == (True, 0, [])
    assert not (await graph.fans_you_follow("ann", "ann")).hidden


# -- suggestions -------------------------------------------------------------------------------------


async def test_suggestions_rank_friends_of_friends_and_exclude_what_they_must(users: FollowStore) -> None:
    for user_id in ("eve", "fay", "gus", "hal"):
        await users.upsert_user(user_id)
    # ann follows bob, cat, dan (dan most recently); they follow eve, fay, gus, hal.
    for followee in ("bob", "cat", "dan"):
        await users.follow(follower="ann", followee=followee)
    for follower, followee in [
        ("bob", "eve"), ("cat", "eve"), ("dan", "eve"),  # eve: 3
        ("bob", "fay"), ("dan", "fay"),  # fay: 2
        ("cat", "gus"),  # gus: 1
        ("bob", "hal"), ("cat", "hal"),  # hal: 2, blocked below
        ("bob", "ann"), ("dan", "cat"),  # the viewer herself, and someone she follows
    ]:  # fmt: skip
        await users.follow(follower=follower, followee=followee)
    await users.block(blocker="hal", blocked="ann")

    found = await users.suggestions("ann", first=10)
    assert [(s.user_id, s.followed_by_count, s.followed_by) for s in found] == [
        ("eve", 3, ["dan", "cat", "bob"]),
        ("fay", 2, ["dan", "bob"]),
        ("gus", 1, ["cat"]),
    ]
    assert [s.user_id for s in await users.suggestions("ann", first=1)] == ["eve"]

    # A user who hides whom they follow is no source of suggestions; a request excludes too.
    await users.update_settings("cat", hide_following=True)
    await lock(users, "fay")
    await users.follow(follower="ann", followee="fay")
    assert [(s.user_id, s.followed_by) for s in await users.suggestions("ann")] == [("eve", ["dan", "bob"])]
    assert await users.suggestions("gus") == []


# -- races ---------------------------------------------------------------------------------------------


State = tuple[list[str], ...]


async def state_of(store: FollowStore, follower: str, followee: str) -> State:
    """Everything a follow or a request of `follower` to `followee` writes, on both sides."""
    return (
        await members(store, ListKind.FOLLOWING, follower),
        await members(store, ListKind.FANS, followee),
        await members(store, ListKind.MUTUAL, follower),
        await members(store, ListKind.MUTUAL, followee),
        await members(store, ListKind.REQUESTS_OUT, follower),
        await members(store, ListKind.REQUESTS_IN, followee),
    )


@pytest.mark.parametrize("accept_first", [True, False])
async def test_an_accept_racing_a_withdrawal_leaves_a_follow_or_nothing(
    users: FollowStore, accept_first: bool
) -> None:
    await users.follow(follower="bob", followee="ann")  # an accepted follow is mutual at once
    await lock(users, "bob")
    follow: State = (["bob"], ["ann"], ["bob"], ["ann"], [], [])
    nothing: State = ([], [], [], [], [], [])
    for _ in range(4):
        assert (await users.follow(follower="ann", followee="bob")).pending
        accept = users.accept_request(user="bob", requester="ann")
        withdraw = users.unfollow(follower="ann", followee="bob")
        await asyncio.gather(*((accept, withdraw) if accept_first else (withdraw, accept)))
        assert await state_of(users, "ann", "bob") in (follow, nothing)
        assert (await verify(users)).clean
        await users.unfollow(follower="ann", followee="bob")
        assert await state_of(users, "ann", "bob") == nothing


@pytest.mark.parametrize("lock_first", [True, False])
async def test_a_lock_racing_a_follow_makes_a_follow_or_a_request(
    users: FollowStore, lock_first: bool
) -> None:
    follow: State = (["bob"], ["ann"], [], [], [], [])
    request: State = ([], [], [], [], ["bob"], ["ann"])
    for _ in range(4):
        lock_it = users.update_settings("bob", locked=True)
        ask = users.follow(follower="ann", followee="bob")
        if lock_first:
            _, result = await asyncio.gather(lock_it, ask)
        else:
            result, _ = await asyncio.gather(ask, lock_it)
        assert isinstance(result, FollowResult) and result.changed
        assert await state_of(users, "ann", "bob") == (request if result.pending else follow)
        assert (await verify(users)).clean
        await users.unfollow(follower="ann", followee="bob")
        await lock(users, "bob", locked=False)
