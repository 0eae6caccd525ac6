"""The copy ends up the same whatever order, batching, repetition or concurrency the events come in."""

from __future__ import annotations

import asyncio
import random

from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.graph.events import Event, EventKind
from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.engine import create_engine
from tests.store.sql.rows import Tables, dump, event, wipe

USERS = ("a", "b", "c", "d")
RELATIONS = [kind for kind in EventKind if kind.relation]


def random_events(rng: random.Random, count: int) -> list[Event]:
    """Events among a few users, many on the same pairs, some at the same time (the id decides)."""
    events = []
    for n in range(count):
        at, seq = rng.randrange(1, count // 2), n  # seq: unique, so no two events tie
        actor = rng.choice(USERS)
        roll = rng.random()
        if roll < 0.08:
            profile = {"name": f"{actor}{n}", "avatarUrl": f"https://x/{n}.png", "createdAt": str(n)}
            events.append(event(EventKind.USER, actor, None, at, seq, **profile))
        elif roll < 0.16:
            on = {name: rng.choice("01") for name in ("locked", "hideFollowing", "hideFans")}
            events.append(event(EventKind.SETTINGS, actor, None, at, seq, **on))
        else:
            target = rng.choice([user for user in USERS if user != actor])
            events.append(event(rng.choice(RELATIONS), actor, target, at, seq))
    return events


def batches(rng: random.Random, events: list[Event]) -> list[list[Event]]:
    """`events` with some repeated, shuffled and cut into batches of random sizes."""
    shuffled = events + rng.sample(events, len(events) // 4)
    rng.shuffle(shuffled)
    cuts = sorted(rng.sample(range(1, len(shuffled)), rng.randrange(0, 8)))
    return [shuffled[i:j] for i, j in zip([0, *cuts], [*cuts, len(shuffled)], strict=True)]


async def in_version_order(engine: AsyncEngine, events: list[Event]) -> Tables:
    """The tables after applying `events` one at a time, oldest first."""
    await wipe(engine)
    for one in sorted(events, key=lambda e: e.version):
        await apply_events(engine, [one])
    return await dump(engine)


async def test_out_of_order_batches_end_as_in_order(engine: AsyncEngine) -> None:
    for seed in range(12):
        rng = random.Random(seed)
        events = random_events(rng, 60)
        expected = await in_version_order(engine, events)
        assert expected["follows"], "the events change something"
        await wipe(engine)
        for batch in batches(rng, events):
            await apply_events(engine, batch)
        assert await dump(engine) == expected, f"seed {seed}"


async def test_two_engines_applying_the_same_events_at_once(engine: AsyncEngine, sql_url: str) -> None:
    rng = random.Random(13)
    events = random_events(rng, 400)
    expected = await in_version_order(engine, events)
    await wipe(engine)
    other = create_engine(sql_url)
    try:

        async def feed(target: AsyncEngine, seed: int) -> None:
            mine = random.Random(seed)
            shuffled = mine.sample(events, len(events))
            for start in range(0, len(shuffled), 40):
                await apply_events(target, shuffled[start : start + 40])

        await asyncio.gather(feed(engine, 1), feed(other, 2), feed(engine, 3), feed(other, 4))
    finally:
        await other.dispose()
    assert await dump(engine) == expected
