"""No read of the store writes: every read leaves every key and its contents exactly as they were.

Each read runs twice on a populated graph, first with an empty script cache (so it also loads its
scripts) and then warm. On the real server the database's change counter
(rdb_changes_since_last_save; the server runs without snapshots) must not move, and no command
with the `write` flag may run, not even inside a script. On both servers a full, type-aware dump
of the database must be unchanged.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import fakeredis
import pytest
from redis.asyncio import RedisCluster

from followgraph.store import FollowStore, InvalidCursorError, Keys, ListKind, Relationship
from followgraph.store.redis.lua import Client
from tests.store.snapshot import dump

USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "Grace", "_h", "9i", "j-j"]
GHOST = "ghost"
# The lists this graph fills (it makes no requests, blocks or mutes).
PAGED = [kind for kind in ListKind if kind.public]
MARKED = "bob"  # has a fans_seen mark, with fans before and after it
KEYS = Keys()


@dataclass(frozen=True)
class Cursors:
    """Cursors from earlier pages, to read from the middle of lists."""

    forward: dict[ListKind, str]  # end cursor of alice's first page of each list
    backward: dict[ListKind, str]  # start cursor of alice's last page of each list
    departed: str  # a cursor of dave's fans whose entry has since left the list
    common: str  # end cursor of the first page of common_following(alice, bob)
    fans_you_follow: str  # end cursor of the first page of fans_you_follow(alice, carol)


def follows(i: int, j: int) -> bool:
    return i != j and ((i + 2 * j) % 3 != 0 or (i < j and i * j % 4 == 2))


async def populate(store: FollowStore) -> Cursors:
    for n, user in enumerate(USERS):
        _, created = await store.upsert_user(
            user, name=f"User {user}", avatar_url=f"https://example.com/{n}.png", created_at=1000 + n
        )
        assert created
    for i, a in enumerate(USERS):
        for j, b in enumerate(USERS):
            if follows(i, j):
                result = await store.follow(follower=a, followee=b, at=(i + j) % 4 if (i + j) % 3 else None)
                assert result.changed
    mark = await store.mark_fans_seen(MARKED)
    await asyncio.sleep(0.005)
    late = [u for u in USERS if u != MARKED and not follows(USERS.index(u), USERS.index(MARKED))]
    assert late
    for user in late:
        assert (await store.follow(follower=user, followee=MARKED)).changed
    assert await store.new_fans_count(MARKED) == len(late)
    assert mark > 1_600_000_000_000

    forward, backward = {}, {}
    for kind in PAGED:
        first = await store.page(kind, "alice", first=2)
        last = await store.page(kind, "alice", last=2)
        assert len(first.entries) == len(last.entries) == 2 and first.has_next and last.has_previous
        forward[kind] = cast("str", first.end_cursor)
        backward[kind] = cast("str", last.start_cursor)

    fans = await store.page(ListKind.FANS, "dave", first=3)
    assert len(fans.entries) == 3 and fans.has_next
    gone = fans.entries[-1]
    assert (await store.remove_fan(user="dave", fan=gone.user_id)).changed

    common = await store.common_following("alice", "bob", first=1)
    fyf = await store.fans_you_follow("alice", "carol", first=1)
    assert common.has_next and fyf.has_next
    return Cursors(
        forward, backward, gone.cursor, cast("str", common.end_cursor), cast("str", fyf.end_cursor)
    )


async def read_profiles(store: FollowStore, cursors: Cursors) -> None:
    profiles = await store.profiles([*USERS, GHOST])
    assert [p.user_id if p else None for p in profiles] == [*USERS, None]
    assert await store.profiles([]) == []


async def read_registered(store: FollowStore, cursors: Cursors) -> None:
    assert await store.registered([*USERS, GHOST]) == [True] * len(USERS) + [False]


def page_arguments(cursors: Cursors) -> list[tuple[ListKind, str, dict[str, Any]]]:
    calls: list[tuple[ListKind, str, dict[str, Any]]] = []
    for kind in PAGED:
        for user in ("alice", GHOST):
            calls += [(kind, user, {"first": 5}), (kind, user, {"last": 5}), (kind, user, {"first": 0})]
        calls += [
            (kind, "alice", {"first": 3, "after": cursors.forward[kind]}),
            (kind, "alice", {"last": 3, "before": cursors.backward[kind]}),
            (kind, "alice", {"first": 1000}),
        ]
    calls += [
        (ListKind.FANS, "dave", {"first": 2, "after": cursors.departed}),
        (ListKind.FANS, "dave", {"last": 2, "before": cursors.departed}),
    ]
    return calls


async def read_page(store: FollowStore, cursors: Cursors) -> None:
    for kind, user, arguments in page_arguments(cursors):
        page = await store.page(kind, user, **arguments)
        if user == GHOST:
            assert (page.entries, page.total) == ([], 0)
        elif arguments.get("first") != 0:
            assert page.entries, (kind, user, arguments)


async def read_pages(store: FollowStore, cursors: Cursors) -> None:
    calls = page_arguments(cursors)
    queries = [store.list_query(kind, user, **arguments) for kind, user, arguments in calls]
    pages = await store.pages(queries)
    singles = [await store.page(kind, user, **arguments) for kind, user, arguments in calls]
    assert pages == singles
    assert await store.pages([]) == []


async def read_with_bad_cursor(store: FollowStore, cursors: Cursors) -> None:
    wrong_list = cursors.forward[ListKind.FOLLOWING]
    with pytest.raises(InvalidCursorError):
        await store.page(ListKind.FANS, "alice", first=3, after=wrong_list)
    with pytest.raises(InvalidCursorError):
        await store.page(ListKind.FOLLOWING, "alice", first=3, after=wrong_list[:-2] + "AA")


async def read_relations(store: FollowStore, cursors: Cursors) -> None:
    ids = [*USERS, GHOST]
    mine = await store.relations("alice", ids)
    assert mine[0].relationship is Relationship.SELF
    assert {r.relationship for r in mine[1:]} >= {Relationship.MUTUAL, Relationship.NONE}
    assert [r.relationship for r in await store.relations(None, ids)] == [Relationship.NONE] * len(ids)
    ghost = await store.relations(GHOST, ids)
    assert [r.relationship for r in ghost] == [Relationship.NONE] * len(USERS) + [Relationship.SELF]
    assert await store.relations("alice", []) == []


async def read_counts(store: FollowStore, cursors: Cursors) -> None:
    counts = await store.counts([*USERS, GHOST])
    assert sum(c.following for c in counts) == sum(c.fans for c in counts) > 0
    assert (counts[-1].following, counts[-1].fans, counts[-1].mutual) == (0, 0, 0)
    assert await store.counts([]) == []


async def read_new_fans_count(store: FollowStore, cursors: Cursors) -> None:
    assert 0 < await store.new_fans_count(MARKED) < (await store.counts([MARKED]))[0].fans
    assert await store.new_fans_count("alice") == (await store.counts(["alice"]))[0].fans
    assert await store.new_fans_count(GHOST) == 0


async def read_common_following(store: FollowStore, cursors: Cursors) -> None:
    page = await store.common_following("alice", "bob", first=100)
    assert page.total > 1
    rest = await store.common_following("alice", "bob", first=100, after=cursors.common)
    assert [e.user_id for e in rest.entries] == [e.user_id for e in page.entries[1:]]
    assert (await store.common_following("alice", GHOST)).total == 0
    assert (await store.common_following(GHOST, "alice")).total == 0
    assert (await store.common_following("alice", "alice")).total > 0


async def read_fans_you_follow(store: FollowStore, cursors: Cursors) -> None:
    page = await store.fans_you_follow("alice", "carol", first=100)
    assert page.total > 1
    rest = await store.fans_you_follow("alice", "carol", first=100, after=cursors.fans_you_follow)
    assert [e.user_id for e in rest.entries] == [e.user_id for e in page.entries[1:]]
    assert (await store.fans_you_follow(None, "carol")).total == 0
    assert (await store.fans_you_follow(GHOST, "carol")).total == 0
    assert (await store.fans_you_follow("alice", GHOST)).total == 0


READS: dict[str, Callable[[FollowStore, Cursors], Awaitable[None]]] = {
    "profiles": read_profiles,
    "registered": read_registered,
    "page": read_page,
    "pages": read_pages,
    "bad_cursor": read_with_bad_cursor,
    "relations": read_relations,
    "counts": read_counts,
    "new_fans_count": read_new_fans_count,
    "common_following": read_common_following,
    "fans_you_follow": read_fans_you_follow,
}


async def infos(client: Client, section: str) -> list[dict[str, Any]]:
    """INFO `section` of the server, or of every node of a cluster."""
    if isinstance(client, RedisCluster):
        return [await client.info(section, target_nodes=node) for node in client.get_nodes()]
    return [await client.info(section)]


async def reset_stats(client: Client) -> None:
    nodes = client.get_nodes() if isinstance(client, RedisCluster) else [None]
    for node in nodes:
        assert await (client.config_resetstat(target_nodes=node) if node else client.config_resetstat())


async def changes(client: Client) -> int:
    return sum(int(info["rdb_changes_since_last_save"]) for info in await infos(client, "persistence"))


async def write_commands_run(client: Client) -> dict[str, int]:
    """Commands flagged `write` in INFO commandstats since CONFIG RESETSTAT (script calls included),
    summed over the nodes of a cluster."""
    calls: Counter[str] = Counter()
    for stats in await infos(client, "commandstats"):
        for name, s in cast("dict[str, dict[str, int]]", stats).items():
            calls[name.removeprefix("cmdstat_").split("|")[0]] += int(s["calls"])
    table: dict[str, dict[str, Any]] = await client.command()
    return {name: n for name, n in calls.items() if "write" in {str(f) for f in table[name]["flags"]}}


@pytest.mark.parametrize("read", sorted(READS))
async def test_read_writes_nothing(backend: Client, read: str) -> None:
    store = FollowStore(backend)
    cursors = await populate(store)
    real = not isinstance(backend, fakeredis.FakeAsyncRedis)
    assert await backend.script_flush()

    before = await dump(backend)
    assert len(before) > 3 * len(USERS)
    changes_before = await changes(backend) if real else 0
    if real:
        await reset_stats(backend)

    await READS[read](store, cursors)  # with an empty script cache
    await READS[read](store, cursors)  # and warm

    if real:
        assert await write_commands_run(backend) == {}
        assert await changes(backend) == changes_before
    assert await dump(backend) == before


async def test_the_change_counter_does_see_writes(served_redis: Client) -> None:
    """The counters the read test relies on move for a store write, even a follow of one edge, and
    on a cluster on whichever nodes the write went to."""
    store = FollowStore(served_redis)
    await store.upsert_user("alice")
    await store.upsert_user("bob")
    start = await changes(served_redis)
    await reset_stats(served_redis)
    assert (await store.follow(follower="alice", followee="bob")).changed
    assert await changes(served_redis) > start
    assert set(await write_commands_run(served_redis)) == {"zadd", "xadd"}  # the follow and its event
