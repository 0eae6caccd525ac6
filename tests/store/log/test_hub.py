"""The process's change-log reader and its subscribers: dispatch by user, bounded buffers, and the
reader on the real Redis server (blocking XREAD) and the real cluster (polling per slot)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from followgraph.store import FollowStore
from followgraph.store.graph.events import Event, EventKind
from followgraph.store.log.hub import EventHub, FellBehindError, Subscriber
from followgraph.store.log.stream import EventLog
from followgraph.store.redis.lua import Client


def event(n: int, kind: EventKind, actor: str, target: str | None) -> Event:
    return Event(f"{n}-0", kind, actor, target, n)


async def first_event(
    store: FollowStore, user: str, change: Callable[[], Awaitable[object]]
) -> tuple[Event, Subscriber]:
    """The first event a reader started before `change` dispatches to `user`, and their subscriber."""
    hub = EventHub(EventLog(store), poll_seconds=0.01)
    await hub.start()
    subscriber = hub.subscribe(user)
    try:
        await change()
        # On a cluster a new slot stream is found when the streams are next listed (at most 5 s).
        async with asyncio.timeout(10):
            return await subscriber.get(), subscriber
    finally:
        await hub.stop()


def test_relation_events_go_to_the_subscribers_of_both_users_once_and_others_to_nobody(
    backend: Client,
) -> None:
    hub = EventHub(EventLog(FollowStore(backend)), buffer=10)
    alice, bob, carol = hub.subscribe("alice"), hub.subscribe("bob"), hub.subscribe("carol")
    alice_again = hub.subscribe("alice")

    hub.dispatch(event(1, EventKind.FOLLOW, "alice", "bob"))
    hub.dispatch(event(2, EventKind.USER, "alice", None))
    hub.dispatch(event(3, EventKind.SETTINGS, "bob", None))

    assert [e.id for e in [alice.queue.get_nowait()]] == ["1-0"]
    assert alice.queue.empty() and alice_again.queue.qsize() == 1
    assert bob.queue.qsize() == 1 and carol.queue.empty()
    hub.unsubscribe(alice)
    hub.unsubscribe(alice_again)
    assert hub.subscribers == 2


async def test_a_full_buffer_ends_the_subscriber_with_fell_behind(backend: Client) -> None:
    hub = EventHub(EventLog(FollowStore(backend)), buffer=2)
    bob = hub.subscribe("bob")
    for n in range(3):
        hub.dispatch(event(n + 1, EventKind.FOLLOW, f"fan{n}", "bob"))

    with pytest.raises(FellBehindError, match="fell behind"):
        await bob.get()


async def test_the_reader_dispatches_what_is_written_after_it_started(served_redis: Client) -> None:
    store = FollowStore(served_redis)
    await store.upsert_user("alice", name="Alice")
    await store.upsert_user("bob", name="Bob")
    await store.follow(follower="alice", followee="bob")  # before the start: not dispatched
    got, bob = await first_event(store, "bob", lambda: store.unfollow(follower="alice", followee="bob"))
    assert (got.kind, got.actor, got.target) == (EventKind.UNFOLLOW, "alice", "bob")
    assert bob.queue.empty()


async def test_a_reader_started_on_an_empty_log_sees_the_first_streams_events(served_redis: Client) -> None:
    store = FollowStore(served_redis)

    async def first_follow() -> None:
        await store.upsert_user("alice", name="Alice")
        await store.upsert_user("bob", name="Bob")
        await store.follow(follower="alice", followee="bob")

    got, _ = await first_event(store, "bob", first_follow)
    assert (got.kind, got.actor, got.target) == (EventKind.FOLLOW, "alice", "bob")
