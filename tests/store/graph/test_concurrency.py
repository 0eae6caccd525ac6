"""Concurrent writes on the real Redis server leave following, fans and mutual sets consistent.

Many tasks on several connections follow, unfollow and remove fans at random, with a few hot
pairs racing in both directions. Afterwards the raw sorted sets and the store's reads must agree
with each other, and the `changed` flags must add up to the edges that remain.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator
from typing import cast

import pytest
import redis.asyncio as aioredis

from followgraph.server.redis_server import RedisServer
from followgraph.store import Counts, FollowStore, Keys, ListKind, Relation, Relationship

USERS = [f"u{i:02d}" for i in range(20)]
HOT = USERS[:4]
TASKS = 16
OPS_PER_TASK = 150
CLIENTS = 4
CONNECTIONS_PER_CLIENT = 6
KEYS = Keys()

Scores = dict[str, dict[str, int]]


@pytest.fixture
async def clients(
    real_redis: aioredis.Redis, redis_server: RedisServer
) -> AsyncIterator[list[aioredis.Redis]]:
    """Separate clients on the flushed real server, each with its own pool of a few connections."""
    made = [
        aioredis.Redis.from_pool(
            aioredis.BlockingConnectionPool.from_url(
                redis_server.url, decode_responses=True, max_connections=CONNECTIONS_PER_CLIENT
            )
        )
        for _ in range(CLIENTS)
    ]
    yield made
    for client in made:
        await client.aclose()


async def read_raw(client: aioredis.Redis, key_of: str) -> Scores:
    """Every user's set of one kind, read with ZRANGE WITHSCORES on the raw keys."""
    out: Scores = {}
    for user in USERS:
        key = getattr(KEYS, key_of)(user)
        rows = cast("list[tuple[str, float]]", await client.zrange(key, 0, -1, withscores=True))
        assert all(score == int(score) for _, score in rows), (key, rows)
        out[user] = {member: int(score) for member, score in rows}
    return out


def newest_first(scores: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(scores.items(), key=lambda row: (row[1], row[0].encode()), reverse=True)


async def walk(store: FollowStore, kind: ListKind, user: str, size: int) -> list[tuple[str, int]]:
    rows: list[tuple[str, int]] = []
    cursor: str | None = None
    while True:
        page = await store.page(kind, user, first=size, after=cursor)
        rows += [(entry.user_id, entry.at) for entry in page.entries]
        if not page.has_next:
            return rows
        cursor = page.end_cursor


async def check_consistent(store: FollowStore, client: aioredis.Redis) -> Scores:
    """The invariants of the three sets, raw and through the store. Returns the following sets."""
    following = await read_raw(client, "following")
    fans = await read_raw(client, "fans")
    mutual = await read_raw(client, "mutual")

    for a in USERS:
        assert a not in following[a] and a not in fans[a] and a not in mutual[a]
        for b, at in following[a].items():
            assert fans[b].get(a) == at, f"{a} follows {b} at {at} but fans:{b} has {fans[b].get(a)}"
        for b, at in fans[a].items():
            assert following[b].get(a) == at, f"fans:{a} has {b} at {at}, following:{b} has {following[b]}"
        expected_mutual = {b: max(at, following[b][a]) for b, at in following[a].items() if a in following[b]}
        assert mutual[a] == expected_mutual, a

    counts = await store.counts(USERS)
    assert counts == [Counts(len(following[u]), len(fans[u]), len(mutual[u])) for u in USERS]

    for user in USERS:
        for kind, raw in ((ListKind.FOLLOWING, following), (ListKind.FANS, fans), (ListKind.MUTUAL, mutual)):
            assert await walk(store, kind, user, 7) == newest_first(raw[user]), (kind, user)
        relations = await store.relations(user, USERS)
        for other, relation in zip(USERS, relations, strict=True):
            if other == user:
                assert relation == Relation(Relationship.SELF)
                continue
            out, back = following[user].get(other), following[other].get(user)
            kind_of = Relationship.of(viewer_follows=out is not None, follows_viewer=back is not None)
            assert relation == Relation(kind_of, out, back)
    return following


async def register(store: FollowStore) -> None:
    results = await asyncio.gather(*(store.upsert_user(user, name=f"User {user}") for user in USERS))
    assert [created for _, created in results] == [True] * len(USERS)


async def test_concurrent_random_writes_keep_the_sets_consistent(
    real_redis: aioredis.Redis, clients: list[aioredis.Redis]
) -> None:
    stores = [FollowStore(client) for client in clients]
    await register(stores[0])
    # Per edge: follows that added it minus unfollows / fan removals that removed it.
    net: Counter[tuple[str, str]] = Counter()
    # Per edge: the times of the follows that added it; the final score must be one of them.
    added_at: dict[tuple[str, str], set[int]] = {}

    async def worker(number: int) -> None:
        rnd = random.Random(number)
        store = stores[number % len(stores)]
        for _ in range(OPS_PER_TASK):
            a, b = rnd.sample(HOT if rnd.random() < 0.4 else USERS, 2)
            roll = rnd.random()
            if roll < 0.5:
                at = rnd.randint(0, 9)
                result = await store.follow(follower=a, followee=b, at=at)
                if result.changed:
                    net[(a, b)] += 1
                    added_at.setdefault((a, b), set()).add(at)
            elif roll < 0.75:
                result = await store.unfollow(follower=a, followee=b)
                net[(a, b)] -= result.changed
            else:
                result = await store.remove_fan(user=b, fan=a)
                net[(a, b)] -= result.changed
            if rnd.random() < 0.3:
                await asyncio.sleep(0)

    await asyncio.gather(*(worker(n) for n in range(TASKS)))

    info = await real_redis.info("clients")
    assert info["connected_clients"] > CLIENTS, "the tasks did not use concurrent connections"

    following = await check_consistent(stores[1], real_redis)
    edges = {(a, b) for a in USERS for b in following[a]}
    assert edges, "the random writes left no edges at all"
    for edge, n in net.items():
        assert n == (1 if edge in edges else 0), (edge, n)
    for a, b in edges:
        assert following[a][b] in added_at[(a, b)]


async def test_racing_follow_backs_always_end_mutual(
    real_redis: aioredis.Redis, clients: list[aioredis.Redis]
) -> None:
    """A->B and B->A at the same moment, on different connections: both end mutual, at the later time."""
    first, second = FollowStore(clients[0]), FollowStore(clients[1])
    await register(first)
    pairs = [(a, b) for i, a in enumerate(USERS) for b in USERS[i + 1 :]]
    results = await asyncio.gather(
        *(
            coroutine
            for n, (a, b) in enumerate(pairs)
            for coroutine in (
                first.follow(follower=a, followee=b, at=n % 3),
                second.follow(follower=b, followee=a, at=n % 5),
            )
        )
    )
    assert all(result.changed for result in results)
    # Exactly one side of each race saw the other's follow already in place.
    for n in range(len(pairs)):
        ab, ba = results[2 * n], results[2 * n + 1]
        assert sorted([ab.relationship.value, ba.relationship.value]) == ["FOLLOWING", "MUTUAL"]
    following = await check_consistent(first, real_redis)
    mutual = await read_raw(real_redis, "mutual")
    for n, (a, b) in enumerate(pairs):
        assert (following[a][b], following[b][a]) == (n % 3, n % 5)
        assert mutual[a][b] == mutual[b][a] == max(n % 3, n % 5)

    # And racing unfollows against follow-backs leave no half-mutual pair either.
    await asyncio.gather(
        *(
            coroutine
            for n, (a, b) in enumerate(pairs)
            for coroutine in (
                first.unfollow(follower=a, followee=b),
                second.remove_fan(user=a, fan=b) if n % 2 else second.follow(follower=b, followee=a, at=7),
            )
        )
    )
    following = await check_consistent(second, real_redis)
    for n, (a, b) in enumerate(pairs):
        assert b not in following[a]
        assert (a in following[b]) == (n % 2 == 0)
    assert await read_raw(real_redis, "mutual") == {user: {} for user in USERS}
