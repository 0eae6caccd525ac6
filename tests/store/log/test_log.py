"""The change log: what each change appends, and reading it through consumer groups, on real
Redis, on the real cluster and on fakeredis."""

from __future__ import annotations

import fakeredis
import pytest

from followgraph.store import FollowStore
from followgraph.store.graph.events import Event, EventKind
from followgraph.store.graph.keys import Keys
from followgraph.store.log.stream import EventLog
from followgraph.store.redis.lua import Client


@pytest.fixture
async def users(store: FollowStore) -> FollowStore:
    for user_id in ("ann", "bob", "cat"):
        await store.upsert_user(user_id, name=user_id.title())
    return store


Told = list[tuple[str, str, str | None]]


def told(events: list[Event]) -> Told:
    return [(e.kind.value, e.actor, e.target) for e in events]


def in_order(store: FollowStore, events: Told) -> Told:
    """`events` as compared: in order on one Redis (one stream); on a cluster, events of different
    slots appended within one millisecond have no order between them, so only which were told."""
    return sorted(events, key=str) if store.cluster else events


async def test_every_change_appends_one_event(users: FollowStore) -> None:
    store, log = users, EventLog(users)
    start = await log.last_id()
    await store.follow(follower="ann", followee="bob")
    await store.follow(follower="ann", followee="bob")  # no change: no event
    await store.remove_fan(user="bob", fan="ann")
    await store.follow(follower="bob", followee="ann")
    await store.unfollow(follower="bob", followee="ann")
    await store.unfollow(follower="bob", followee="ann")  # no change
    await store.block(blocker="cat", blocked="ann")
    await store.block(blocker="cat", blocked="ann")
    await store.unblock(blocker="cat", blocked="ann")
    await store.mute(muter="ann", muted="cat")
    await store.mute(muter="ann", muted="cat", on=False)
    await store.update_settings("cat", locked=True)
    await store.update_settings("cat", locked=True)  # no change
    await store.follow(follower="bob", followee="cat")
    await store.accept_request(user="cat", requester="bob")
    await store.follow(follower="ann", followee="cat")
    await store.reject_request(user="cat", requester="ann")
    await store.upsert_user("ann", name="Ann")  # the same name: no change
    await store.upsert_user("ann", name="Ann B.")

    events = await log.read(start)
    assert in_order(store, told(events)) == in_order(
        store,
        [
            ("FOLLOW", "ann", "bob"),
            ("REMOVE_FAN", "bob", "ann"),
            ("FOLLOW", "bob", "ann"),
            ("UNFOLLOW", "bob", "ann"),
            ("BLOCK", "cat", "ann"),
            ("UNBLOCK", "cat", "ann"),
            ("MUTE", "ann", "cat"),
            ("UNMUTE", "ann", "cat"),
            ("SETTINGS", "cat", None),
            ("FOLLOW_REQUEST", "bob", "cat"),
            ("ACCEPT_FOLLOW_REQUEST", "cat", "bob"),
            ("FOLLOW_REQUEST", "ann", "cat"),
            ("REJECT_FOLLOW_REQUEST", "cat", "ann"),
            ("USER", "ann", None),
        ],
    )
    [follow] = [e for e in events if e.kind is EventKind.FOLLOW and e.actor == "bob"]
    assert follow.at > 1_600_000_000_000
    [settings] = [e for e in events if e.kind is EventKind.SETTINGS]
    assert settings.data == {"locked": "1", "hideFollowing": "0", "hideFans": "0"}
    [user] = [e for e in events if e.kind is EventKind.USER]
    assert user.data == {"name": "Ann B.", "createdAt": user.data["createdAt"]}


async def test_refused_changes_append_nothing(users: FollowStore) -> None:
    log = EventLog(users)
    before = await log.length()
    await users.block(blocker="ann", blocked="bob")
    with pytest.raises(Exception, match="block"):
        await users.follow(follower="bob", followee="ann")
    with pytest.raises(Exception, match="ghost"):
        await users.follow(follower="ann", followee="ghost")
    assert await log.length() == before + 1  # the block alone


async def test_event_json(users: FollowStore) -> None:
    log = EventLog(users)
    start = await log.last_id()
    await users.follow(follower="ann", followee="bob", at=1_700_000_000_123)
    [event] = await log.read(start)
    assert event.json() == {
        "id": event.id,
        "kind": "FOLLOW",
        "actor": "ann",
        "target": "bob",
        "at": 1_700_000_000_123,
    }
    assert event.kind is EventKind.FOLLOW and event.kind.relation


async def test_group_delivers_once_and_again_after_a_crash(users: FollowStore) -> None:
    log = EventLog(users)
    await log.join("g", start="$")
    await users.follow(follower="ann", followee="bob")
    await users.follow(follower="bob", followee="cat")

    first = await log.read_group("g", "one", count=10, block_ms=100)
    assert told(first.events) == [("FOLLOW", "ann", "bob"), ("FOLLOW", "bob", "cat")]
    # Not acknowledged: nothing new for anyone, but "one" gets them again as its pending batch.
    assert (await log.read_group("g", "two", count=10, block_ms=10)).events == []
    again = await log.read_group("g", "one", count=10, block_ms=0, pending=True)
    assert [e.id for e in again.events] == [e.id for e in first.events]
    lag = await log.lag("g")
    assert (lag.events, lag.lost) == (2, 0)

    # Another consumer takes over what "one" left idle.
    claimed = await log.claim("g", "two", min_idle_ms=0, count=10)
    assert [e.id for e in claimed.events] == [e.id for e in first.events]
    await log.ack("g", claimed)
    assert (await log.read_group("g", "one", count=10, block_ms=0, pending=True)).events == []
    assert (await log.lag("g")).events == 0


async def test_a_stream_new_to_the_group_costs_the_others_none_of_their_events(users: FollowStore) -> None:
    # On a cluster a slot's stream appears with its first event, and the group is created there when
    # a read finds it missing; the read of the other streams in that same call must not be lost.
    log = EventLog(users)
    await log.join("g")
    await log.ack("g", await log.read_group("g", "one", count=100, block_ms=0))
    await users.upsert_user("dan", name="Dan")  # a slot with no stream yet, on a cluster
    await users.follow(follower="ann", followee="bob")
    await log.streams(fresh=True)

    read = await log.read_group("g", "one", count=100, block_ms=0)
    expected: Told = [("USER", "dan", None), ("FOLLOW", "ann", "bob")]
    assert sorted(told(read.events), key=str) == sorted(expected, key=str)
    await log.ack("g", read)
    assert (await log.lag("g")).events == 0


async def test_trim_keeps_what_a_group_has_not_acknowledged(users: FollowStore) -> None:
    log = EventLog(users)
    await log.join("fast", start="$")
    await log.join("slow", start="$")
    await users.follow(follower="ann", followee="bob")
    await users.follow(follower="ann", followee="cat")
    fast = await log.read_group("fast", "f", count=10, block_ms=0)
    await log.ack("fast", fast)
    await log.trim()
    # What came before both groups goes; "slow" has read nothing of the rest yet.
    assert [e.id for e in await log.read()] == [e.id for e in fast.events]
    slow = await log.read_group("slow", "s", count=1, block_ms=0)
    await log.ack("slow", slow)
    # Read by every group, but younger than what is to be kept: it stays.
    assert await log.trim(keep_ms=60_000) == 0
    assert await log.trim() == 1
    assert [e.id for e in await log.read()] == [fast.events[1].id]


async def test_the_cap_drops_unread_events_and_lag_says_so(backend: Client) -> None:
    store = FollowStore(backend, keys=Keys(log_cap=1000))
    for user in ("ann", "bob"):
        await store.upsert_user(user, name=user)
    log = EventLog(store)
    await log.join("late", start="$")
    for _ in range(1500):
        await store.follow(follower="ann", followee="bob")
        await store.unfollow(follower="ann", followee="bob")
    lag = await log.lag("late")
    kept = await log.length()
    assert kept < 3000
    assert kept - 2 <= lag.events <= kept  # all that is left but the two profiles is still to read
    # Redis 7 counts what was trimmed unread too (6.2 cannot; fakeredis does not keep that count).
    counts_added = "entries-added" in await backend.xinfo_stream(store.keys.log("ann"))
    if counts_added and not isinstance(backend, fakeredis.FakeAsyncRedis):
        assert lag.lost == 3000 - lag.events


async def test_tail_follows_every_stream_from_an_id(users: FollowStore) -> None:
    log = EventLog(users)
    start = await log.last_id()
    for a, b in (("ann", "bob"), ("bob", "cat"), ("cat", "ann")):
        await users.follow(follower=a, followee=b)
    seen = [e async for e in log.tail(start, follow=False)]
    expected: Told = [("FOLLOW", "ann", "bob"), ("FOLLOW", "bob", "cat"), ("FOLLOW", "cat", "ann")]
    assert in_order(users, told(seen)) == in_order(users, expected)
    assert [e async for e in log.tail(None, follow=False)] == []
