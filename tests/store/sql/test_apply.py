"""What each event does to the copy, and that old or repeated events do nothing."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.graph.events import EventKind as K
from followgraph.store.sql.apply import _transient, apply_events
from followgraph.store.sql.effects import EventDataError
from followgraph.store.sql.tables import FollowStatus, RequestStatus
from tests.store.sql.rows import dump, event, row

FOLLOWING, UNFOLLOWED = int(FollowStatus.FOLLOWING), int(FollowStatus.UNFOLLOWED)


def pick(found: dict[str, Any], *columns: str) -> tuple[Any, ...]:
    return tuple(found[column] for column in columns)


async def status(engine: AsyncEngine, table: str, a: str, b: str) -> object:
    found = await row(engine, table, a, b)
    assert found is not None, f"no {table} row ({a}, {b})"
    return found["active"] if "active" in found else found["status"]


async def test_follow_then_unfollow(engine: AsyncEngine) -> None:
    await apply_events(engine, [event(K.FOLLOW, "alice", "bob", 100)])
    assert await row(engine, "follows", "alice", "bob") == {
        "follower": "alice",
        "followee": "bob",
        "status": FOLLOWING,
        "followed_at": 100,
        "changed_at": 100,
        "v_ms": 100,
        "v_seq": 0,
    }
    assert await row(engine, "follows", "bob", "alice") is None
    await apply_events(engine, [event(K.UNFOLLOW, "alice", "bob", 200)])
    unfollowed = await row(engine, "follows", "alice", "bob")
    assert unfollowed is not None
    assert pick(unfollowed, "status", "followed_at", "changed_at") == (UNFOLLOWED, 100, 200)


async def test_remove_fan_ends_the_fans_follow(engine: AsyncEngine) -> None:
    await apply_events(engine, [event(K.FOLLOW, "fan", "star", 100), event(K.REMOVE_FAN, "star", "fan", 200)])
    assert await status(engine, "follows", "fan", "star") == UNFOLLOWED
    assert await row(engine, "follows", "star", "fan") is None


async def test_a_request_accepted(engine: AsyncEngine) -> None:
    await apply_events(engine, [event(K.FOLLOW_REQUEST, "asker", "locked", 100)])
    assert await status(engine, "follow_requests", "asker", "locked") == RequestStatus.PENDING
    assert await row(engine, "follows", "asker", "locked") is None
    await apply_events(engine, [event(K.ACCEPT_FOLLOW_REQUEST, "locked", "asker", 200)])
    assert await status(engine, "follow_requests", "asker", "locked") == RequestStatus.ACCEPTED
    follow = await row(engine, "follows", "asker", "locked")
    assert follow is not None
    assert (follow["status"], follow["followed_at"]) == (FOLLOWING, 200)


@pytest.mark.parametrize(
    ("ending", "expected"),
    [
        (event(K.REJECT_FOLLOW_REQUEST, "locked", "asker", 200), RequestStatus.REJECTED),
        (event(K.UNFOLLOW, "asker", "locked", 200), RequestStatus.WITHDRAWN),
        (event(K.FOLLOW, "asker", "locked", 200), RequestStatus.FOLLOWED),
        (event(K.BLOCK, "locked", "asker", 200), RequestStatus.BLOCKED),
        (event(K.BLOCK, "asker", "locked", 200), RequestStatus.BLOCKED),
    ],
)
async def test_how_a_request_ends(engine: AsyncEngine, ending: object, expected: RequestStatus) -> None:
    assert isinstance(ending, type(event(K.FOLLOW, "a", "b", 1)))
    await apply_events(engine, [event(K.FOLLOW_REQUEST, "asker", "locked", 100), ending])
    assert await status(engine, "follow_requests", "asker", "locked") == expected


async def test_block_ends_follows_both_ways_and_unblock_keeps_them_ended(engine: AsyncEngine) -> None:
    await apply_events(
        engine,
        [
            event(K.FOLLOW, "a", "b", 100),
            event(K.FOLLOW, "b", "a", 110),
            event(K.FOLLOW_REQUEST, "a", "c", 120),
            event(K.BLOCK, "a", "b", 200),
        ],
    )
    assert await status(engine, "blocks", "a", "b") is True
    assert await row(engine, "blocks", "b", "a") is None
    assert await status(engine, "follows", "a", "b") == UNFOLLOWED
    assert await status(engine, "follows", "b", "a") == UNFOLLOWED
    assert await status(engine, "follow_requests", "a", "c") == RequestStatus.PENDING
    await apply_events(engine, [event(K.UNBLOCK, "a", "b", 300)])
    block = await row(engine, "blocks", "a", "b")
    assert block is not None
    assert (block["active"], block["at"]) == (False, 300)
    assert await status(engine, "follows", "a", "b") == UNFOLLOWED


async def test_mute_and_unmute(engine: AsyncEngine) -> None:
    await apply_events(engine, [event(K.MUTE, "a", "b", 100)])
    assert await status(engine, "mutes", "a", "b") is True
    await apply_events(engine, [event(K.UNMUTE, "a", "b", 200)])
    assert await status(engine, "mutes", "a", "b") is False
    assert await row(engine, "follows", "a", "b") is None


async def test_user_profile_keeps_absent_fields(engine: AsyncEngine) -> None:
    await apply_events(
        engine, [event(K.USER, "alice", None, 100, name="Alice", avatarUrl="https://x/a.png", createdAt="5")]
    )
    await apply_events(engine, [event(K.USER, "alice", None, 200, name="Alicia")])
    user = await row(engine, "users", "alice")
    assert user is not None
    assert (user["name"], user["avatar_url"], user["created_at"]) == ("Alicia", "https://x/a.png", 5)
    assert (user["locked"], user["hide_following"], user["hide_fans"]) == (False, False, False)
    assert (user["profile_v_ms"], user["settings_v_ms"]) == (200, 0)


async def test_settings_and_profile_are_versioned_apart(engine: AsyncEngine) -> None:
    settings = event(K.SETTINGS, "bob", None, 300, locked="1", hideFollowing="0", hideFans="1")
    await apply_events(engine, [settings])
    # An older profile still lands: only a newer profile would make it stale.
    await apply_events(engine, [event(K.USER, "bob", None, 100, name="Bob")])
    user = await row(engine, "users", "bob")
    assert user is not None
    assert pick(user, "name", "locked", "hide_following", "hide_fans") == ("Bob", True, False, True)
    older = event(K.SETTINGS, "bob", None, 200, locked="0", hideFollowing="1", hideFans="0")
    await apply_events(engine, [older])
    assert await row(engine, "users", "bob") == user


async def test_ids_are_case_sensitive(engine: AsyncEngine) -> None:
    await apply_events(engine, [event(K.FOLLOW, "Ann", "bob", 100), event(K.UNFOLLOW, "ann", "bob", 200)])
    assert await status(engine, "follows", "Ann", "bob") == FOLLOWING
    assert await status(engine, "follows", "ann", "bob") == UNFOLLOWED


async def test_applying_a_batch_twice_changes_nothing(engine: AsyncEngine) -> None:
    batch = [
        event(K.USER, "a", None, 50, name="A", createdAt="1"),
        event(K.FOLLOW, "a", "b", 100),
        event(K.FOLLOW_REQUEST, "b", "c", 110),
        event(K.MUTE, "c", "a", 120),
        event(K.BLOCK, "c", "b", 130),
    ]
    await apply_events(engine, batch)
    once = await dump(engine)
    await apply_events(engine, batch)
    await apply_events(engine, batch[::-1])
    assert await dump(engine) == once


async def test_an_older_event_after_a_newer_one_changes_nothing(engine: AsyncEngine) -> None:
    await apply_events(engine, [event(K.UNFOLLOW, "a", "b", 200), event(K.UNMUTE, "a", "b", 200)])
    newer = await dump(engine)
    await apply_events(engine, [event(K.FOLLOW, "a", "b", 100), event(K.MUTE, "a", "b", 100)])
    await apply_events(engine, [event(K.USER, "a", None, 10, name="late")])
    users_before = newer.pop("users")
    after = await dump(engine)
    assert after.pop("users") != users_before  # the profile had no newer version: it lands
    # Only the time of the last follow is learnt (as if the events had come in order).
    (follow,) = newer["follows"]
    newer["follows"] = [(*follow[:3], 100, *follow[4:])]
    assert after == newer


async def test_the_same_time_is_ordered_by_the_stream_id(engine: AsyncEngine) -> None:
    # Same `at`, later id: the id decides.
    later, earlier = event(K.UNFOLLOW, "a", "b", 100, seq=1), event(K.FOLLOW, "a", "b", 100, seq=0)
    await apply_events(engine, [later, earlier])
    assert await status(engine, "follows", "a", "b") == UNFOLLOWED


async def test_malformed_events_are_refused_before_anything_is_written(engine: AsyncEngine) -> None:
    good = event(K.FOLLOW, "a", "b", 100)
    with pytest.raises(EventDataError, match="has no target"):
        await apply_events(engine, [good, event(K.FOLLOW, "a", None, 100)])
    with pytest.raises(EventDataError, match="locked"):
        await apply_events(engine, [good, event(K.SETTINGS, "a", None, 100, locked="yes")])
    assert await row(engine, "follows", "a", "b") is None


async def test_an_empty_batch_does_nothing(engine: AsyncEngine) -> None:
    await apply_events(engine, [])
    assert all(rows == [] for rows in (await dump(engine)).values())


class _FakeDriverError(Exception):
    def __init__(self, *args: object, sqlstate: str | None = None) -> None:
        super().__init__(*args)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("orig", "retried"),
    [
        (_FakeDriverError("deadlock", sqlstate="40P01"), True),
        (_FakeDriverError("serialization", sqlstate="40001"), True),
        (_FakeDriverError(1213, "Deadlock found"), True),
        (_FakeDriverError(1205, "Lock wait timeout"), True),
        (_FakeDriverError(1062, "Duplicate entry"), False),
        (_FakeDriverError("unique", sqlstate="23505"), False),
    ],
)
def test_deadlocks_are_retried_by_their_codes(orig: Exception, retried: bool) -> None:
    assert _transient(DBAPIError("UPDATE ...", None, orig)) is retried


async def test_a_deleted_account_leaves_no_row(engine: AsyncEngine) -> None:
    await apply_events(
        engine,
        [
            event(K.USER, "ann", None, 100, name="Ann", createdAt="1"),
            event(K.USER, "bob", None, 100, name="Bob", createdAt="1"),
            event(K.FOLLOW, "ann", "bob", 110),
            event(K.FOLLOW, "bob", "ann", 120),
            event(K.BLOCK, "cat", "ann", 130),
            event(K.MUTE, "bob", "ann", 140),
            event(K.FOLLOW_REQUEST, "ann", "dan", 150),
        ],
    )
    # Deactivations change nothing here: the copy keeps the follows the account's own sets keep.
    await apply_events(engine, [event(K.ACCOUNT, "ann", None, 160, state="DEACTIVATED")])
    assert await status(engine, "follows", "bob", "ann") == FOLLOWING
    await apply_events(engine, [event(K.ACCOUNT, "ann", None, 200, state="DELETED")])
    tables = await dump(engine)
    assert all("ann" not in str(rows) for rows in tables.values()), tables
    assert await row(engine, "users", "bob") is not None
