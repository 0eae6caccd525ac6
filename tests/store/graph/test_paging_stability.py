"""Walking a long fans list page by page while it changes: keyset cursors neither repeat nor skip.

One user has 1,000 fans, most of them at a few equal follow times (one tie is longer than the
page script's tie chunk of 256). While the list is walked, fans are removed (including the entry
the cursor points at) and new fans arrive before and after the cursor. The deterministic tests
replay the walk on a model and compare every page; the concurrent ones check what must hold
whatever the interleaving.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import redis.asyncio as aioredis

from followgraph.server.redis_server import RedisServer
from followgraph.store import FollowStore, ListKind, Page

STAR = "star"
PAGE_SIZE = 37
INITIAL = 1000
NEWCOMERS = 400


def fan_id(i: int) -> str:
    # Mixed first characters, so ties are ordered bytewise across upper case, digits, '_' and '-'.
    return f"{'aZ_9-'[i % 5]}fan{i:04d}"


def fan_time(i: int) -> int:
    """3/5 of the fans share one time (a tie longer than 256); the rest spread over 20 times."""
    return 10 if i % 5 < 3 else i % 20


def newcomer_id(i: int) -> str:
    return f"{'Nn_'[i % 3]}new{i:04d}"


Key = tuple[int, bytes]


def key_of(member: str, at: int) -> Key:
    return (at, member.encode("ascii"))


@dataclass
class Walk:
    """What happened during one walk: the fans' times, removals and arrivals, and the pages."""

    times: dict[str, int] = field(default_factory=dict)
    initial: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    added: set[str] = field(default_factory=set)
    walked: list[tuple[str, int]] = field(default_factory=list)

    def check(self, *, backward: bool) -> None:
        ids = [member for member, _ in self.walked]
        counts = Counter(ids)
        assert [m for m, n in counts.items() if n > 1] == [], "a fan appeared twice"
        keys = [key_of(member, at) for member, at in self.walked]
        assert keys == sorted(keys, reverse=not backward), "the walk is out of order"
        assert set(ids) <= self.initial | self.added, "the walk has users who were never fans"
        assert set(ids) - self.initial <= self.added
        assert [m for m in sorted(self.initial - self.removed) if counts[m] != 1] == []
        assert all(self.times[member] == at for member, at in self.walked)


@pytest.fixture
async def store(real_redis: aioredis.Redis, redis_server: RedisServer) -> AsyncIterator[FollowStore]:
    """A store on the flushed real server, on a pool of a few connections."""
    client = aioredis.Redis.from_pool(
        aioredis.BlockingConnectionPool.from_url(redis_server.url, decode_responses=True, max_connections=8)
    )
    yield FollowStore(client)
    await client.aclose()


async def populate(store: FollowStore) -> Walk:
    users = [STAR, *(fan_id(i) for i in range(INITIAL)), *(newcomer_id(i) for i in range(NEWCOMERS))]
    registered = await asyncio.gather(*(store.upsert_user(user, name=user) for user in users))
    assert all(created for _, created in registered)
    results = await asyncio.gather(
        *(store.follow(follower=fan_id(i), followee=STAR, at=fan_time(i)) for i in range(INITIAL))
    )
    assert all(result.changed for result in results)
    state = Walk(times={fan_id(i): fan_time(i) for i in range(INITIAL)})
    state.initial = set(state.times)
    first = await store.page(ListKind.FANS, STAR, first=5)
    assert first.total == INITIAL
    assert [(e.user_id, e.at) for e in first.entries] == sorted(
        state.times.items(), key=lambda row: key_of(*row), reverse=True
    )[:5]
    return state


async def fetch(store: FollowStore, cursor: str | None, *, backward: bool) -> Page:
    if backward:
        return await store.page(ListKind.FANS, STAR, last=PAGE_SIZE, before=cursor)
    return await store.page(ListKind.FANS, STAR, first=PAGE_SIZE, after=cursor)


async def remove(store: FollowStore, fan: str, how: int) -> None:
    if how % 2:
        result = await store.remove_fan(user=STAR, fan=fan)
    else:
        result = await store.unfollow(follower=fan, followee=STAR)
    assert result.changed


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
async def test_walk_with_mutations_between_pages_matches_the_model(
    store: FollowStore, backward: bool
) -> None:
    state = await populate(store)
    current = dict(state.times)  # the model of the fans list
    rnd = random.Random(2024 + backward)
    newcomers = [newcomer_id(i) for i in range(NEWCOMERS)]
    cursor: str | None = None
    position: Key | None = None  # the key of the last entry walked so far
    pages = 0

    def remaining() -> list[tuple[str, int]]:
        """The model's entries still ahead of the cursor, in walking order."""
        rows = sorted(current.items(), key=lambda row: key_of(*row), reverse=not backward)
        if position is None:
            return rows
        if backward:
            return [row for row in rows if key_of(*row) > position]
        return [row for row in rows if key_of(*row) < position]

    while True:
        ahead = remaining()
        page = await fetch(store, cursor, backward=backward)
        pages += 1
        rows = [(entry.user_id, entry.at) for entry in page.entries]
        expected = ahead[:PAGE_SIZE]
        assert rows == (expected[::-1] if backward else expected), f"page {pages}"
        assert page.total == len(current)
        more = page.has_previous if backward else page.has_next
        assert more == (len(ahead) > PAGE_SIZE)
        state.walked += rows[::-1] if backward else rows
        if not more:
            break
        cursor = page.start_cursor if backward else page.end_cursor
        last = rows[0] if backward else rows[-1]
        position = key_of(*last)

        # Between two pages: remove the cursor's own entry every other time, one fan already
        # walked, one still ahead; and let newcomers follow at times around the cursor's.
        ahead_now = remaining()
        behind_now = [m for m in current if m not in dict(ahead_now) and m != last[0]]
        victims = [rnd.choice(behind_now), rnd.choice(ahead_now)[0]]
        if pages % 2:
            victims.append(last[0])
        for n, victim in enumerate(dict.fromkeys(victims)):
            await remove(store, victim, n + pages)
            del current[victim]
            state.removed.add(victim)
        for _ in range(3):
            newcomer = newcomers.pop()
            at = rnd.choice([last[1], last[1], rnd.randint(0, 20)])
            assert (await store.follow(follower=newcomer, followee=STAR, at=at)).changed
            current[newcomer] = state.times[newcomer] = at
            state.added.add(newcomer)

    assert pages > INITIAL // PAGE_SIZE
    state.check(backward=backward)
    walked = {m for m, _ in state.walked}
    assert state.removed & walked, "no fan was removed after being walked"
    assert state.added & walked, "no newcomer arrived ahead of the cursor"
    assert state.added - walked, "no newcomer arrived behind the cursor"
    final = await store.page(ListKind.FANS, STAR, first=1000)
    expected_final = sorted(current.items(), key=lambda row: key_of(*row), reverse=True)
    assert final.total == len(expected_final) > 1000
    assert [(e.user_id, e.at) for e in final.entries] == expected_final[:1000]


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
async def test_walk_during_concurrent_mutations(store: FollowStore, backward: bool) -> None:
    state = await populate(store)
    newcomers = [newcomer_id(i) for i in range(NEWCOMERS)]
    candidates = sorted(state.initial)
    done = asyncio.Event()

    async def walker() -> None:
        cursor: str | None = None
        try:
            while True:
                page = await fetch(store, cursor, backward=backward)
                rows = [(entry.user_id, entry.at) for entry in page.entries]
                state.walked += rows[::-1] if backward else rows
                if not (page.has_previous if backward else page.has_next):
                    return
                cursor = page.start_cursor if backward else page.end_cursor
                await asyncio.sleep(0)
        finally:
            done.set()

    async def remover(seed: int) -> None:
        rnd = random.Random(seed)
        while not done.is_set() and candidates:
            fan = candidates.pop(rnd.randrange(len(candidates)))
            state.removed.add(fan)
            await remove(store, fan, seed)

    async def arrivals(seed: int) -> None:
        rnd = random.Random(seed)
        while not done.is_set() and newcomers:
            newcomer = newcomers.pop()
            at = rnd.randint(0, 20)
            state.times[newcomer] = at
            state.added.add(newcomer)
            assert (await store.follow(follower=newcomer, followee=STAR, at=at)).changed

    await asyncio.gather(walker(), remover(1), remover(2), arrivals(3), arrivals(4))

    state.check(backward=backward)
    assert state.removed, "nothing was removed during the walk"
    assert state.added, "nobody followed during the walk"
    assert len(state.walked) >= INITIAL - len(state.removed)
