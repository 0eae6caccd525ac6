"""The reads a rebuild or a reconcile makes: current rows only, in key order, in batches."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.graph.events import EventKind as K
from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.snapshot import (
    Counts,
    FollowRow,
    PairRow,
    UserRow,
    active_blocks,
    active_follows,
    active_mutes,
    all_users,
    counts,
    pending_requests,
)
from tests.store.sql.rows import event

T = TypeVar("T")


async def collect(batches: AsyncIterator[list[T]]) -> tuple[list[T], list[int]]:
    rows: list[T] = []
    sizes = []
    async for batch in batches:
        rows.extend(batch)
        sizes.append(len(batch))
    return rows, sizes


async def test_reads_give_current_rows_in_key_order_and_batches(engine: AsyncEngine) -> None:
    followers = [f"u{n:02d}" for n in range(7)] + ["Z", "_x"]
    await apply_events(engine, [event(K.FOLLOW, f, "star", 100 + i) for i, f in enumerate(followers)])
    await apply_events(engine, [event(K.UNFOLLOW, "u03", "star", 200), event(K.FOLLOW, "star", "u00", 210)])
    follows, sizes = await collect(active_follows(engine, batch=3))
    expected = sorted(
        [FollowRow(f, "star", 100 + i) for i, f in enumerate(followers) if f != "u03"]
        + [FollowRow("star", "u00", 210)],
        key=lambda r: (r.follower, r.followee),
    )
    assert follows == expected  # bytewise: "Z" < "_x" < "star" < "u00"
    assert sizes == [3, 3, 3]


async def test_users_blocks_mutes_and_pending_requests(engine: AsyncEngine) -> None:
    await apply_events(
        engine,
        [
            event(K.USER, "bob", None, 10, name="Bob", createdAt="7"),
            event(K.SETTINGS, "alice", None, 20, locked="1", hideFollowing="1", hideFans="0"),
            event(K.BLOCK, "alice", "carol", 30),
            event(K.BLOCK, "bob", "carol", 31),
            event(K.UNBLOCK, "bob", "carol", 32),
            event(K.MUTE, "carol", "bob", 40),
            event(K.FOLLOW_REQUEST, "bob", "alice", 50),
            event(K.FOLLOW_REQUEST, "dave", "alice", 51),
            event(K.REJECT_FOLLOW_REQUEST, "alice", "dave", 52),
            event(K.FOLLOW, "bob", "dave", 60),
        ],
    )
    users, _ = await collect(all_users(engine, batch=1))
    assert users == [
        UserRow("alice", None, None, None, locked=True, hide_following=True, hide_fans=False),
        UserRow("bob", "Bob", None, 7, locked=False, hide_following=False, hide_fans=False),
    ]
    assert (await collect(active_blocks(engine)))[0] == [PairRow("alice", "carol", 30)]
    assert (await collect(active_mutes(engine)))[0] == [PairRow("carol", "bob", 40)]
    assert (await collect(pending_requests(engine)))[0] == [PairRow("bob", "alice", 50)]
    assert await counts(engine) == Counts(users=2, follows=1, blocks=1, mutes=1, pending_requests=1)


async def test_an_empty_copy(engine: AsyncEngine) -> None:
    assert await collect(active_follows(engine)) == ([], [])
    assert await counts(engine) == Counts(0, 0, 0, 0, 0)
