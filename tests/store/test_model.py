"""Model-based test: random follows, unfollows, fan removals and page walks against a plain model.

The same state machine runs on the real Redis server, the real cluster and fakeredis. After every step every
list (order and times), count, relationship, intersection and the set of keys in Redis must match
the model exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import fakeredis
import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer
from followgraph.store import (
    CannotFollowSelfError,
    Counts,
    FollowResult,
    FollowStore,
    Keys,
    ListKind,
    Page,
    Relation,
    Relationship,
    UserNotFoundError,
)
from followgraph.store.lua import Client
from tests.store.snapshot import dump

T = TypeVar("T")

# Ids chosen so that byte order differs from case-insensitive order and some are prefixes of others.
USERS = ("a", "ab", "abc", "B", "b-1", "Z_9", "_x", "9")
GHOSTS = ("ghost", "nobody")
ALL_IDS = (*USERS, *GHOSTS)
KEYS = Keys()

user_ids = st.sampled_from(USERS)
times = st.integers(min_value=0, max_value=5)
kinds = st.sampled_from(tuple(ListKind))
page_sizes = st.integers(min_value=1, max_value=4)

Row = tuple[str, int]


def order_key(row: Row) -> tuple[int, bytes]:
    return (row[1], row[0].encode("ascii"))


def ordered(times_by_member: dict[str, int]) -> list[Row]:
    """Newest first: (time, member) descending, members compared bytewise."""
    return sorted(times_by_member.items(), key=order_key, reverse=True)


def rows(page: Page) -> list[Row]:
    return [(entry.user_id, entry.at) for entry in page.entries]


class Graph:
    """The follow graph as plain dicts: follows[A][B] = the time A followed B."""

    def __init__(self) -> None:
        self.follows: dict[str, dict[str, int]] = {user: {} for user in USERS}
        self.fans_seen: set[str] = set()

    def follows_user(self, a: str, b: str) -> bool:
        return b in self.follows.get(a, {})

    def following(self, user: str) -> list[Row]:
        return ordered(self.follows.get(user, {}))

    def fans(self, user: str) -> list[Row]:
        return ordered({fan: out[user] for fan, out in self.follows.items() if user in out})

    def mutual(self, user: str) -> list[Row]:
        out = self.follows.get(user, {})
        return ordered(
            {b: max(at, self.follows[b][user]) for b, at in out.items() if self.follows_user(b, user)}
        )

    def rows_of(self, kind: ListKind, user: str) -> list[Row]:
        match kind:
            case ListKind.FOLLOWING:
                return self.following(user)
            case ListKind.FANS:
                return self.fans(user)
            case ListKind.MUTUAL:
                return self.mutual(user)
            case _:  # requests, blocks and mutes: this model makes none
                return []

    def relation(self, viewer: str | None, user: str) -> Relation:
        if viewer is None:
            return Relation(Relationship.NONE)
        if viewer == user:
            return Relation(Relationship.SELF)
        out = self.follows.get(viewer, {}).get(user)
        back = self.follows.get(user, {}).get(viewer)
        relationship = Relationship.of(viewer_follows=out is not None, follows_viewer=back is not None)
        return Relation(relationship, out, back)

    def common_following(self, user: str, other: str) -> list[Row]:
        theirs = self.follows.get(other, {})
        return [row for row in self.following(user) if row[0] in theirs]

    def fans_you_follow(self, viewer: str, user: str) -> list[Row]:
        mine = self.follows.get(viewer, {})
        return [row for row in self.fans(user) if row[0] in mine]

    def keys(self) -> set[str]:
        expected = {KEYS.profile(user) for user in USERS} | {KEYS.fans_seen(user) for user in self.fans_seen}
        for user in USERS:
            if self.following(user):
                expected.add(KEYS.following(user))
            if self.fans(user):
                expected.add(KEYS.fans(user))
            if self.mutual(user):
                expected.add(KEYS.mutual(user))
        return expected


class Loop:
    """A private event loop for the synchronous state machine, with one client made inside it."""

    def __init__(self, make_client: Callable[[], Client]) -> None:
        self.loop = asyncio.new_event_loop()

        async def create() -> Client:
            return make_client()

        self.client = self.loop.run_until_complete(create())

    def run(self, awaitable: Awaitable[T]) -> T:
        async def wrapper() -> T:
            return await awaitable

        return self.loop.run_until_complete(wrapper())

    def close(self) -> None:
        try:
            self.run(self.client.aclose())
        finally:
            self.loop.close()


@dataclass(frozen=True)
class SavedCursor:
    kind: ListKind
    user: str
    at: int
    member: str
    cursor: str


def expected_window(
    expected: list[Row], key: tuple[int, bytes] | None, k: int, *, backward: bool
) -> tuple[int, int]:
    """The ranks [start, stop) a keyset page of size k after (or before) `key` covers."""
    n = len(expected)
    before = 0 if key is None else sum(1 for row in expected if order_key(row) > key)
    present = key is not None and any(order_key(row) == key for row in expected)
    if backward:
        stop = n if key is None else before
        return max(stop - k, 0), stop
    start = before + (1 if present else 0)
    return start, min(start + k, n)


class FollowGraphMachine(RuleBasedStateMachine):
    def __init__(self, loop: Loop) -> None:
        super().__init__()
        self.loop = loop
        self.store = FollowStore(loop.client)
        self.model = Graph()
        self.saved: list[SavedCursor] = []
        self.loop.run(loop.client.flushall())

        async def register() -> None:
            for user in USERS:
                _, created = await self.store.upsert_user(user, name=f"User {user}", created_at=1)
                assert created is True

        self.loop.run(register())

    # -- writes ---------------------------------------------------------------------------------

    @initialize(
        edges=st.lists(st.tuples(user_ids, user_ids, times), max_size=8)
        | st.lists(st.tuples(user_ids, user_ids, times), min_size=25, max_size=60)
    )
    def seed_graph(self, edges: list[tuple[str, str, int]]) -> None:
        """Start from a random graph, often dense enough that ties and intersections are common."""
        for follower, followee, at in edges:
            self.follow(follower, followee, at)

    @rule(follower=user_ids, followee=user_ids, at=times)
    def follow(self, follower: str, followee: str, at: int) -> None:
        if follower == followee:
            before = self.loop.run(dump(self.loop.client))
            with pytest.raises(CannotFollowSelfError):
                self.loop.run(self.store.follow(follower=follower, followee=followee, at=at))
            assert self.loop.run(dump(self.loop.client)) == before
            return
        changed = not self.model.follows_user(follower, followee)
        result = self.loop.run(self.store.follow(follower=follower, followee=followee, at=at))
        if changed:
            self.model.follows[follower][followee] = at
        back = self.model.follows_user(followee, follower)
        assert result == FollowResult(changed, Relationship.MUTUAL if back else Relationship.FOLLOWING)

    @rule(follower=user_ids, followee=user_ids)
    def unfollow(self, follower: str, followee: str) -> None:
        if follower == followee:
            before = self.loop.run(dump(self.loop.client))
            with pytest.raises(CannotFollowSelfError):
                self.loop.run(self.store.unfollow(follower=follower, followee=followee))
            assert self.loop.run(dump(self.loop.client)) == before
            return
        changed = self.model.follows_user(follower, followee)
        result = self.loop.run(self.store.unfollow(follower=follower, followee=followee))
        self.model.follows[follower].pop(followee, None)
        back = self.model.follows_user(followee, follower)
        assert result == FollowResult(changed, Relationship.FOLLOWED_BY if back else Relationship.NONE)

    @rule(user=user_ids, fan=user_ids)
    def remove_fan(self, user: str, fan: str) -> None:
        if user == fan:
            before = self.loop.run(dump(self.loop.client))
            with pytest.raises(CannotFollowSelfError):
                self.loop.run(self.store.remove_fan(user=user, fan=fan))
            assert self.loop.run(dump(self.loop.client)) == before
            return
        changed = self.model.follows_user(fan, user)
        result = self.loop.run(self.store.remove_fan(user=user, fan=fan))
        self.model.follows[fan].pop(user, None)
        follows_fan = self.model.follows_user(user, fan)
        assert result == FollowResult(changed, Relationship.FOLLOWING if follows_fan else Relationship.NONE)

    @rule(
        op=st.sampled_from(["follow", "unfollow", "remove_fan"]),
        known=user_ids,
        ghost=st.sampled_from(GHOSTS),
        both_unknown=st.booleans(),
        unknown_first=st.booleans(),
        at=times,
    )
    def write_with_unknown_user(
        self, op: str, known: str, ghost: str, both_unknown: bool, unknown_first: bool, at: int
    ) -> None:
        other = next(g for g in GHOSTS if g != ghost) if both_unknown else known
        first, second = (ghost, other) if unknown_first else (other, ghost)
        before = self.loop.run(dump(self.loop.client))
        with pytest.raises(UserNotFoundError) as caught:
            if op == "follow":
                self.loop.run(self.store.follow(follower=first, followee=second, at=at))
            elif op == "unfollow":
                self.loop.run(self.store.unfollow(follower=first, followee=second))
            else:
                self.loop.run(self.store.remove_fan(user=first, fan=second))
        if both_unknown:
            assert caught.value.user_id in GHOSTS
        else:
            assert caught.value.user_id == ghost
        assert self.loop.run(dump(self.loop.client)) == before

    @rule(user=user_ids)
    def mark_fans_seen(self, user: str) -> None:
        mark = self.loop.run(self.store.mark_fans_seen(user))
        assert mark > 1_600_000_000_000
        self.model.fans_seen.add(user)

    # -- page walks -----------------------------------------------------------------------------

    @rule(kind=kinds, user=st.sampled_from(ALL_IDS), k=page_sizes, backward=st.booleans())
    def walk(self, kind: ListKind, user: str, k: int, backward: bool) -> None:
        expected = self.model.rows_of(kind, user)
        n = len(expected)
        walked: list[Row] = []
        cursor: str | None = None
        for _ in range(n + 2):
            if backward:
                page = self.loop.run(self.store.page(kind, user, last=k, before=cursor))
            else:
                page = self.loop.run(self.store.page(kind, user, first=k, after=cursor))
            stop = n - len(walked) if backward else min(len(walked) + k, n)
            start = max(stop - k, 0) if backward else len(walked)
            assert rows(page) == expected[start:stop]
            assert (page.total, page.has_previous, page.has_next) == (n, start > 0, stop < n)
            walked = rows(page) + walked if backward else walked + rows(page)
            more = page.has_previous if backward else page.has_next
            if not more:
                break
            cursor = page.start_cursor if backward else page.end_cursor
        assert walked == expected

    @rule(kind=kinds, user=user_ids, index=st.integers(min_value=0, max_value=63))
    def save_cursor(self, kind: ListKind, user: str, index: int) -> None:
        expected = self.model.rows_of(kind, user)
        if not expected:
            return
        i = index % len(expected)
        page = self.loop.run(self.store.page(kind, user, first=i + 1))
        assert rows(page) == expected[: i + 1]
        entry = page.entries[-1]
        self.saved = [*self.saved[-4:], SavedCursor(kind, user, entry.at, entry.user_id, entry.cursor)]

    @rule(
        kind=kinds,
        user=user_ids,
        index=st.integers(min_value=0, max_value=63),
        refollow_at=st.none() | times,
        k=page_sizes,
        backward=st.booleans(),
    )
    def cursor_after_its_entry_changes(
        self, kind: ListKind, user: str, index: int, refollow_at: int | None, k: int, backward: bool
    ) -> None:
        """Take a cursor, remove its entry (and maybe follow again at another time), page from it."""
        expected = self.model.rows_of(kind, user)
        if not expected:
            return
        i = index % len(expected)
        entry = self.loop.run(self.store.page(kind, user, first=i + 1)).entries[-1]
        assert (entry.user_id, entry.at) == expected[i]
        self.saved = [*self.saved[-4:], SavedCursor(kind, user, entry.at, entry.user_id, entry.cursor)]
        other = entry.user_id
        if kind is ListKind.FANS:
            self.remove_fan(user, other)
            if refollow_at is not None:
                self.follow(other, user, refollow_at)
        else:
            self.unfollow(user, other)
            if refollow_at is not None:
                self.follow(user, other, refollow_at)
        self.page_from_saved_cursor(len(self.saved) - 1, k, backward)

    @precondition(lambda self: bool(self.saved))
    @rule(pick=st.integers(min_value=0, max_value=4), k=page_sizes, backward=st.booleans())
    def page_from_saved_cursor(self, pick: int, k: int, backward: bool) -> None:
        """A cursor taken earlier still pages from its position, even if its entry changed or left."""
        saved = self.saved[pick % len(self.saved)]
        expected = self.model.rows_of(saved.kind, saved.user)
        key = (saved.at, saved.member.encode("ascii"))
        start, stop = expected_window(expected, key, k, backward=backward)
        if backward:
            page = self.loop.run(self.store.page(saved.kind, saved.user, last=k, before=saved.cursor))
        else:
            page = self.loop.run(self.store.page(saved.kind, saved.user, first=k, after=saved.cursor))
        assert rows(page) == expected[start:stop]
        assert (page.total, page.has_previous, page.has_next) == (
            len(expected),
            start > 0,
            stop < len(expected),
        )

    @rule(
        which=st.sampled_from(["common_following", "fans_you_follow"]),
        a=user_ids,
        b=user_ids,
        k=page_sizes,
    )
    def walk_intersection(self, which: str, a: str, b: str, k: int) -> None:
        if which == "common_following":
            expected = self.model.common_following(a, b)
        else:
            expected = self.model.fans_you_follow(a, b)
        n = len(expected)
        walked: list[Row] = []
        cursor: str | None = None
        for _ in range(n + 2):
            if which == "common_following":
                page = self.loop.run(self.store.common_following(a, b, first=k, after=cursor))
            else:
                page = self.loop.run(self.store.fans_you_follow(a, b, first=k, after=cursor))
            start, stop = len(walked), min(len(walked) + k, n)
            assert rows(page) == expected[start:stop]
            assert (page.total, page.has_previous, page.has_next) == (n, start > 0, stop < n)
            walked += rows(page)
            if not page.has_next:
                break
            cursor = page.end_cursor
        assert walked == expected

    # -- the whole state, after every step ------------------------------------------------------

    @invariant()
    def everything_matches_the_model(self) -> None:
        self.loop.run(self._check_everything())

    async def _check_everything(self) -> None:
        store, model = self.store, self.model
        queries = [store.list_query(kind, user, first=1000) for user in ALL_IDS for kind in ListKind]
        for query, page in zip(queries, await store.pages(queries), strict=True):
            expected = model.rows_of(query.kind, query.user_id)
            assert (query.kind, query.user_id, rows(page)) == (query.kind, query.user_id, expected)
            assert (page.total, page.has_previous, page.has_next) == (len(expected), False, False)

        counts = await store.counts(ALL_IDS)
        assert counts == [
            Counts(len(model.following(u)), len(model.fans(u)), len(model.mutual(u))) for u in ALL_IDS
        ]

        viewers = (*ALL_IDS, None)
        relations = await asyncio.gather(*(store.relations(viewer, ALL_IDS) for viewer in viewers))
        for viewer, seen in zip(viewers, relations, strict=True):
            assert seen == [model.relation(viewer, user) for user in ALL_IDS], viewer
        assert await store.relations("a", []) == []

        new_fans = await asyncio.gather(*(store.new_fans_count(user) for user in USERS))
        assert new_fans == [0 if u in model.fans_seen else len(model.fans(u)) for u in USERS]

        pairs = [(a, b) for a in USERS for b in USERS]
        # Two batches: a client's pool holds at most 100 connections at once.
        intersections = await asyncio.gather(*(store.common_following(a, b, first=1000) for a, b in pairs))
        intersections += await asyncio.gather(*(store.fans_you_follow(a, b, first=1000) for a, b in pairs))
        wanted = [model.common_following(a, b) for a, b in pairs]
        wanted += [model.fans_you_follow(a, b) for a, b in pairs]
        assert [(rows(p), p.total, p.has_next) for p in intersections] == [(e, len(e), False) for e in wanted]
        anonymous = await store.fans_you_follow(None, "a", first=1000)
        assert (anonymous.entries, anonymous.total) == ([], 0)
        for ghost in GHOSTS:
            for page in await asyncio.gather(
                store.common_following("a", ghost), store.common_following(ghost, "a"),
                store.fans_you_follow("a", ghost), store.fans_you_follow(ghost, "a"),
            ):  # fmt: skip
                assert (page.entries, page.total, page.has_next) == ([], 0, False)

        assert {key async for key in self.loop.client.scan_iter()} == model.keys()


# Shrinking a stateful example against a server takes minutes, longer than the per-test timeout,
# so it is left out: a failure prints its full step sequence (and a blob for @reproduce_failure).
# To shrink one, add Phase.shrink here and run this module with --timeout=0.
MODEL_SETTINGS = settings(
    max_examples=16,
    stateful_step_count=30,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def run_model(make_client: Callable[[], Client]) -> None:
    loop = Loop(make_client)

    class FollowGraphOnLoop(FollowGraphMachine):
        def __init__(self) -> None:
            super().__init__(loop)

    try:
        run_state_machine_as_test(FollowGraphOnLoop, settings=MODEL_SETTINGS)
    finally:
        loop.close()


# The real server is the proof: this variant carries no marker, so `-m "not slow"` still runs it.
def test_model_on_real_redis(redis_server: RedisServer) -> None:
    run_model(lambda: aioredis.Redis(unix_socket_path=str(redis_server.socket_path), decode_responses=True))


def test_model_on_a_cluster(redis_cluster: LocalCluster) -> None:
    run_model(lambda: connect(redis_cluster.url, timeout=10.0))


@pytest.mark.slow
def test_model_on_fakeredis() -> None:
    run_model(lambda: fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True))
