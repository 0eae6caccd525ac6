"""The log's consumer: at least once through failures of its handler, on real Redis, the real
cluster and fakeredis."""

from __future__ import annotations

import asyncio
import logging

import pytest

from followgraph.store import FollowStore
from followgraph.store.graph.events import Event
from followgraph.store.log.consumer import Consumer, ConsumerOptions
from followgraph.store.log.stream import EventLog


async def test_a_failing_or_stuck_handler_gets_its_batch_again(
    store: FollowStore, caplog: pytest.LogCaptureFixture
) -> None:
    for user in ("ann", "bob", "cat"):
        await store.upsert_user(user, name=user)
    await store.follow(follower="ann", followee="bob")
    await store.follow(follower="bob", followee="cat")
    calls = 0
    # Ids are unique within a stream only (a cluster has one per slot): events are told apart by
    # id and actor here.
    applied: list[tuple[str, str]] = []

    async def handle(events: list[Event]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the database is down")
        if calls == 2:
            await asyncio.sleep(3600)  # stuck: given up on after handler_seconds
        applied.extend((e.id, e.actor) for e in events)

    options = ConsumerOptions(group="g", consumer="c", wait_ms=50, retry_seconds=0.01, handler_seconds=0.2)
    consumer = Consumer(EventLog(store), handle, options)
    stop = asyncio.Event()
    everything = sorted((e.id, e.actor) for e in await EventLog(store).read())
    assert len(everything) == 5
    with caplog.at_level(logging.WARNING):
        task = asyncio.create_task(consumer.run(stop))
        async with asyncio.timeout(20):
            while sorted(set(applied)) != everything:
                await asyncio.sleep(0.02)
        stop.set()
        await task
    assert (await EventLog(store).lag("g")).events == 0
    messages = [r.getMessage() for r in caplog.records]
    assert any("a batch failed" in m for m in messages)
    assert any(
        "took over 0.2 s" in (r.exc_text or "") or "took over" in m
        for r, m in zip(caplog.records, messages, strict=True)
    )
