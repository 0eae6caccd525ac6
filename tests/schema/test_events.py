"""The viewerEvents field's stream: closing it where a client goes away lets go of its subscriber."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from followgraph.resolvers.context import Context
from followgraph.schema.events import Subscription
from followgraph.store import FollowStore
from followgraph.store.log.hub import EventHub
from followgraph.store.log.stream import EventLog


async def test_closing_the_stream_after_an_event_unsubscribes_at_once(store: FollowStore) -> None:
    # A client that leaves while its last event is being sent closes the stream at its yield, as
    # Strawberry's aclosing does: the subscriber must go then, not whenever the GC gets to it.
    for user in ("alice", "bob"):
        await store.upsert_user(user)
    hub = EventHub(EventLog(store), poll_seconds=0.01)
    context = Context.create(store, viewer_id="bob")
    context.hub = hub
    info: Any = SimpleNamespace(context=context)
    stream = Subscription().viewer_events(info)
    try:
        pending = asyncio.ensure_future(anext(stream))
        async with asyncio.timeout(10):
            while hub.subscribers == 0:
                await asyncio.sleep(0.01)
            await store.follow(follower="alice", followee="bob")
            event = await pending
        assert (event.kind.value, event.actor_id) == ("FOLLOW", "alice")

        await stream.aclose()

        assert hub.subscribers == 0
    finally:
        await hub.stop()
