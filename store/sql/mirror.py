"""Redis and its SQL copy side by side: Redis rebuilt from the copy, and the two compared (and the
copy rewritten from Redis where they differ).

A rebuild goes through the store's own import paths (store.bulk), so it keeps every rule of a
live graph: follows keep their times, mutual sets and counts follow from the follows, blocks are
loaded before follows and requests (which a block would refuse). The writes log their events
like any other; the copy's consumer then finds them already applied.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.graph import bulk
from followgraph.store.graph.bulk import Control, ControlKind
from followgraph.store.graph.events import Event, EventKind
from followgraph.store.graph.follows import Edge
from followgraph.store.graph.model import Profile
from followgraph.store.graph.store import FollowStore
from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.snapshot import (
    active_blocks,
    active_follows,
    active_mutes,
    all_users,
    pending_requests,
)

# Called with what was just loaded ("users", "follows", ...) and how many.
Progress = Callable[[str, int], None]
# Examples kept per kind of difference.
EXAMPLES = 5


def _nothing(what: str, count: int) -> None:
    pass


@dataclass
class RebuildReport:
    loaded: dict[str, int] = field(default_factory=dict)
    # Rows Redis refused (a follow across a block, a request of a follow...), by kind.
    refused: dict[str, int] = field(default_factory=dict)


async def rebuild(store: FollowStore, engine: AsyncEngine, *, progress: Progress = _nothing) -> RebuildReport:
    """Load the copy into `store`, which should be empty (the caller checks)."""
    report = RebuildReport()

    def count(what: str, loaded: int, refused: int = 0) -> None:
        report.loaded[what] = report.loaded.get(what, 0) + loaded
        if refused:
            report.refused[what] = report.refused.get(what, 0) + refused
        progress(what, loaded)

    async for users in all_users(engine):
        rows = [
            bulk.UserRow(u.id, u.name, u.avatar_url, u.created_at, u.locked, u.hide_following, u.hide_fans)
            for u in users
        ]
        await bulk.upsert_many(store, rows)
        count("users", len(rows))
    await bulk.load_control_scripts(store)
    now_ms = int(time.time() * 1000)
    for kind, read in ((ControlKind.BLOCK, active_blocks), (ControlKind.MUTE, active_mutes)):
        async for pairs in read(engine):
            statuses = await bulk.control_many(
                store, [Control(kind, p.actor, p.target, p.at) for p in pairs], now_ms
            )
            count(kind.value.lower() + "s", len(pairs), sum(1 for s in statuses if s < 0))
    async for follows in active_follows(engine):
        edges = [Edge(f.follower, f.followee, f.followed_at) for f in follows]
        added = await bulk.follow_many(store, edges)
        count("follows", len(edges), sum(1 for s in added if s < 0))
    async for pairs in pending_requests(engine):
        controls = [Control(ControlKind.REQUEST, p.actor, p.target, p.at) for p in pairs]
        statuses = await bulk.control_many(store, controls, now_ms)
        count("requests", len(pairs), sum(1 for s in statuses if s < 0))
    return report


# -- reconcile ------------------------------------------------------------------------------------

Pair = tuple[str, str]
# What each side holds, comparably: users by id (profile and settings), the four relations by pair
# (their times).
UserState = tuple[str | None, str | None, int | None, bool, bool, bool]


@dataclass
class Side:
    users: dict[str, UserState] = field(default_factory=dict)
    follows: dict[Pair, int] = field(default_factory=dict)
    blocks: dict[Pair, int] = field(default_factory=dict)
    mutes: dict[Pair, int] = field(default_factory=dict)
    requests: dict[Pair, int] = field(default_factory=dict)

    def relation(self, what: str) -> dict[Pair, int]:
        relations: dict[str, dict[Pair, int]] = {
            "follows": self.follows,
            "blocks": self.blocks,
            "mutes": self.mutes,
            "requests": self.requests,
        }
        return relations[what]


RELATIONS = ("follows", "blocks", "mutes", "requests")


async def read_sql(engine: AsyncEngine) -> Side:
    side = Side()
    async for users in all_users(engine):
        for u in users:
            side.users[u.id] = (u.name, u.avatar_url, u.created_at, u.locked, u.hide_following, u.hide_fans)
    async for follows in active_follows(engine):
        side.follows.update({(f.follower, f.followee): f.followed_at for f in follows})
    for target, read in (
        (side.blocks, active_blocks),
        (side.mutes, active_mutes),
        (side.requests, pending_requests),
    ):
        async for pairs in read(engine):
            target.update({(p.actor, p.target): p.at for p in pairs})
    return side


def _user_row(p: Profile) -> UserState:
    s = p.settings
    return (p.name, p.avatar_url, p.created_at, s.locked, s.hide_following, s.hide_fans)


async def read_redis(store: FollowStore) -> Side:
    side = Side()
    async for profiles in bulk.scan_users(store):
        side.users.update((p.user_id, _user_row(p)) for p in profiles)
    off: list[str] = []
    async for accounts in bulk.scan_accounts_off(store):
        side.users.update((p.user_id, _user_row(p)) for p in accounts)
        off += [p.user_id for p in accounts]
    async for edges in bulk.scan_edges(store):
        side.follows.update({(e.follower, e.followee): int(e.at or 0) for e in edges})
    # The copy keeps the follows of accounts that are off, as their own sets do.
    async for kept in bulk.kept_fans(store, off):
        side.follows.update({(fan, account): at for account, fan, at in kept})
    kinds = {ControlKind.BLOCK: side.blocks, ControlKind.MUTE: side.mutes, ControlKind.REQUEST: side.requests}
    async for controls in bulk.scan_controls(store):
        for c in controls:
            kinds[c.kind][c.actor, c.target] = int(c.at or 0)
    return side


@dataclass
class Differences:
    """Where the copy differs from Redis, by kind: "follows only in Redis", "follows with another
    time in SQL", "users only in SQL"..., with a few examples each."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, what: str, example: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1
        shown = self.examples.setdefault(what, [])
        if len(shown) < EXAMPLES:
            shown.append(example)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def compare(sql: Side, redis: Side) -> Differences:
    found = Differences()
    for user, state in redis.users.items():
        if user not in sql.users:
            found.add("users only in Redis", user)
        elif sql.users[user] != state:
            found.add("users that differ", f"{user}: SQL {sql.users[user]} / Redis {state}")
    for user in sql.users.keys() - redis.users.keys():
        found.add("users only in SQL", user)
    for what in RELATIONS:
        ours, theirs = redis.relation(what), sql.relation(what)
        for pair, at in ours.items():
            if pair not in theirs:
                found.add(f"{what} only in Redis", f"{pair[0]} -> {pair[1]}")
            elif theirs[pair] != at:
                found.add(
                    f"{what} with another time in SQL", f"{pair[0]} -> {pair[1]}: {theirs[pair]} / {at}"
                )
        for pair in theirs.keys() - ours.keys():
            found.add(f"{what} only in SQL", f"{pair[0]} -> {pair[1]}")
    return found


def corrections(sql: Side, redis: Side, now_ms: int) -> list[Event]:
    """Events that turn the copy into Redis's state when applied, newer than any event so far
    (ids at `now_ms`, Redis's clock): endings first, then what Redis holds. Users only in SQL are
    left (no change removes a user)."""
    # (kind, actor, target) of each ending.
    ends: list[tuple[EventKind, str, str]] = []
    starts: list[tuple[EventKind, str, str | None, int, dict[str, str]]] = []
    ending = {
        "follows": EventKind.UNFOLLOW,
        "blocks": EventKind.UNBLOCK,
        "mutes": EventKind.UNMUTE,
        "requests": EventKind.REJECT_FOLLOW_REQUEST,
    }
    starting = {
        "follows": EventKind.FOLLOW,
        "blocks": EventKind.BLOCK,
        "mutes": EventKind.MUTE,
        "requests": EventKind.FOLLOW_REQUEST,
    }
    for what in RELATIONS:
        ours, theirs = redis.relation(what), sql.relation(what)
        for a, b in sorted(theirs.keys() - ours.keys()):
            # A request ends as its owner's rejection: an unfollow would end a follow as well.
            ends.append(
                (EventKind.REJECT_FOLLOW_REQUEST, b, a) if what == "requests" else (ending[what], a, b)
            )
        for pair, at in sorted(ours.items()):
            if theirs.get(pair) != at:
                starts.append((starting[what], pair[0], pair[1], at, {}))
    for user, state in sorted(redis.users.items()):
        if sql.users.get(user) == state:
            continue
        name, avatar, created, *flags = state
        profile = {"name": name, "avatarUrl": avatar, "createdAt": None if created is None else str(created)}
        starts.append(
            (EventKind.USER, user, None, now_ms, {k: v for k, v in profile.items() if v is not None})
        )
        names = ("locked", "hideFollowing", "hideFans")
        starts.append(
            (
                EventKind.SETTINGS,
                user,
                None,
                now_ms,
                {n: "1" if f else "0" for n, f in zip(names, flags, strict=True)},
            )
        )
    events: list[Event] = []
    for kind, actor, target in ends:
        events.append(Event(f"{now_ms}-{len(events)}", kind, actor, target, now_ms))
    for kind, actor, maybe_target, at, data in starts:
        events.append(Event(f"{now_ms}-{len(events)}", kind, actor, maybe_target, at, data))
    return events


async def redis_now_ms(store: FollowStore) -> int:
    seconds, micros = await _time(store)
    return seconds * 1000 + micros // 1000


async def _time(store: FollowStore) -> tuple[int, int]:
    reply: Any = await store.redis.time()
    if isinstance(reply, dict):  # a cluster answers per node
        reply = max(reply.values())
    return int(reply[0]), int(reply[1])


async def repair_sql(engine: AsyncEngine, sql: Side, redis: Side, now_ms: int) -> int:
    """Rewrite the copy where it differs from Redis; returns how many corrections were applied."""
    events = corrections(sql, redis, now_ms)
    for start in range(0, len(events), 1000):
        await apply_events(engine, events[start : start + 1000])
    return len(events)
