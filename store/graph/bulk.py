"""Bulk loading and scanning of the graph: imports, exports and demo data.

Writes go through the same idempotent scripts as single follows, many to a pipeline, so an
import never leaves a half-written edge and can be re-run after an interruption.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from followgraph.store.graph import control_scripts as cs
from followgraph.store.graph.events import logged
from followgraph.store.graph.follows import Edge, unfollow_out_call, upsert_args
from followgraph.store.graph.keys import Keys
from followgraph.store.graph.model import Profile
from followgraph.store.graph.scripts import UNFOLLOW_OUT_SCRIPT, UPSERT_USER_SCRIPT
from followgraph.store.graph.store import FollowStore
from followgraph.store.redis.channel import KeyedReads
from followgraph.store.redis.channels import open_keyed_reads
from followgraph.store.redis.lua import (
    AnyPipeline,
    KeyedRead,
    ReadCommand,
    ScriptCall,
    run_pipeline,
    run_scripts,
)

__all__ = [
    "Control",
    "ControlKind",
    "ControlStatus",
    "Edge",
    "EdgeStatus",
    "UserRow",
    "control_many",
    "follow_many",
    "load_control_scripts",
    "scan_controls",
    "scan_edges",
    "scan_following",
    "scan_users",
    "upsert_many",
]

SCAN_COUNT = 500
# Sorted sets are read FIRST_READ entries each in one pipeline (most sets are smaller), the rest of
# a larger set CHUNK entries a round trip: a celebrity's millions of fans never travel in one reply.
FIRST_READ = 1000
CHUNK = 10_000


@functools.cache
def _first_entries(count: int) -> KeyedRead:
    """The read of the first `count` entries of each of its keys' sets, each score as Redis gives it."""
    return KeyedRead(ReadCommand("ZRANGE", 0, count - 1, "WITHSCORES"))


class EdgeStatus(enum.IntEnum):
    REQUESTED = 2  # the followee is locked and the edge had no time: a pending request, as follow() makes
    ADDED = 1
    EXISTED = 0
    FOLLOWER_UNKNOWN = -1
    FOLLOWEE_UNKNOWN = -2
    BLOCKED = -3


@dataclass(frozen=True, slots=True)
class UserRow:
    user_id: str
    name: str | None = None
    avatar_url: str | None = None
    created_at: int | None = None
    # The settings to set (True) or clear (False); None leaves one as it is.
    locked: bool | None = None
    hide_following: bool | None = None
    hide_fans: bool | None = None

    @property
    def settings_args(self) -> list[str] | None:
        """UPDATE_SETTINGS' arguments, or None when the row sets none."""
        flags = (self.locked, self.hide_following, self.hide_fans)
        if all(flag is None for flag in flags):
            return None
        return ["" if flag is None else "1" if flag else "0" for flag in flags]


class ControlKind(enum.Enum):
    """A social control between two users, named by the actor's set that is its source of truth."""

    BLOCK = "BLOCK"  # actor blocks target (blocking; blocked_by mirrors it)
    MUTE = "MUTE"  # actor mutes target (muting)
    REQUEST = "REQUEST"  # actor asked to follow target, pending (requests_out; requests_in mirrors it)


# The actor's set of each kind, by its key name.
_SOURCE = {ControlKind.BLOCK: "blocking", ControlKind.MUTE: "muting", ControlKind.REQUEST: "requests_out"}


@dataclass(frozen=True, slots=True)
class Control:
    """A control to apply or an exported one; `at` is epoch ms (None: now, for an import)."""

    kind: ControlKind
    actor: str
    target: str
    at: int | None = None


class ControlStatus(enum.IntEnum):
    ADDED = 1
    EXISTED = 0
    ACTOR_UNKNOWN = -1
    TARGET_UNKNOWN = -2
    BLOCKED = -3  # a request across a block
    FOLLOWING = -4  # a request of a follow that already is one


async def follow_many(store: FollowStore, edges: Sequence[Edge]) -> list[EdgeStatus]:
    """Apply `edges` in one round trip (three on a cluster). Ids and times must be valid and no edge a
    self-follow."""
    results = await store.follow_edges(edges)
    return [
        EdgeStatus.REQUESTED
        if status == 0 and changed and pending
        else EdgeStatus(changed if status == 0 else status)
        for status, changed, _, _, pending in results
    ]


async def upsert_many(store: FollowStore, users: Sequence[UserRow]) -> None:
    """Register or update `users` in one round trip. Fields must be valid already."""
    if not users:
        return

    def fill(pipe: AnyPipeline) -> None:
        for user in users:
            k, profile = store.keys, [store.keys.profile(user.user_id)]
            args = upsert_args(user.name, user.avatar_url, user.created_at)
            both = [*profile, k.account(user.user_id)]
            calls = [logged(k, user.user_id, (UPSERT_USER_SCRIPT, both, args))]
            settings = user.settings_args
            if settings is not None:  # after the upsert: the same key, so in order on a cluster too
                calls.append(logged(k, user.user_id, (cs.UPDATE_SETTINGS_SCRIPT, profile, settings)))
            for script, keys, script_args in calls:
                script.queue(pipe, keys, script_args)

    await run_pipeline(store.redis, fill, [UPSERT_USER_SCRIPT, cs.UPDATE_SETTINGS_SCRIPT])


@contextlib.asynccontextmanager
async def keyed_reads(store: FollowStore) -> AsyncIterator[KeyedReads | None]:
    """A read channel of its own for a scan's many sets (store/redis/channels.py open_keyed_reads),
    closed after; None where the reads go through redis-py (TLS, a fake)."""
    reads = open_keyed_reads(store.redis)
    try:
        yield reads
    finally:
        if reads is not None:
            await reads.aclose()


async def scan_edges(store: FollowStore) -> AsyncIterator[list[Edge]]:
    """Every follow, a batch of followers at a time (SCAN: consistent enough for a live export)."""
    async with keyed_reads(store) as reads:
        batch: list[str] = []
        async for key in store.redis.scan_iter(match=store.keys.pattern("following"), count=SCAN_COUNT):
            batch.append(key)
            if len(batch) >= SCAN_COUNT:
                yield await _edges_of(store, batch, reads)
                batch = []
        if batch:
            yield await _edges_of(store, batch, reads)


# Keys a SCAN step of an export looks at: a user has a dozen keys, of which one is its following set.
EXPORT_SCAN_COUNT = 10_000


async def scan_following(store: FollowStore) -> AsyncIterator[list[tuple[str, str, str]]]:
    """(follower, followee, time: epoch ms digits) of every follow, about CHUNK at a time, for
    exports: read as Redis sends them, without an object or a float per follow. The first entries of
    each SCAN step's sets come in one round trip on a read channel of their own (the nodes of a
    cluster at once), whose replies hiredis parses a batch at a time: through redis-py's pipeline
    each reply cost the export a timeout of its own: about half of its time."""
    async with keyed_reads(store) as reads:
        batch: list[str] = []
        pattern = store.keys.pattern("following")
        async for key in store.redis.scan_iter(match=pattern, count=EXPORT_SCAN_COUNT):
            batch.append(key)
            if len(batch) >= SCAN_COUNT:
                async for entries in _raw_entries(store, reads, batch):
                    yield entries
                batch = []
        if batch:
            async for entries in _raw_entries(store, reads, batch):
                yield entries


def _digits(score: str | float) -> str:
    return score if isinstance(score, str) and score.isdigit() else str(int(float(score)))


async def _raw_entries(
    store: FollowStore, reads: KeyedReads | None, keys: list[str]
) -> AsyncIterator[list[tuple[str, str, str]]]:
    """set_entries' entries with each score as Redis gave it (whole numbers: their digits): the
    first ones of every set through `reads` (redis-py's pipeline when there is no channel)."""
    first = _first_entries(FIRST_READ)
    if reads is None:
        [firsts] = await run_scripts(store.redis, [(first, keys, ())])
    else:
        firsts = await reads.run_keyed(first, keys)
    batch: list[tuple[str, str, str]] = []
    for key, flat in zip(keys, firsts, strict=True):
        owner = store.keys.user_of(key)
        start, size = 0, FIRST_READ
        while True:
            # Pairs as RESP3 sends them, or a flat list as RESP2 does.
            pairs: Any = flat if flat and isinstance(flat[0], list) else zip(*[iter(flat)] * 2, strict=True)
            batch += [(owner, member, _digits(score)) for member, score in pairs]
            if len(batch) >= CHUNK:
                yield batch
                batch = []
            if len(flat) < (size if flat and isinstance(flat[0], list) else 2 * size):
                break
            start, size = start + size, CHUNK
            # A plain command: redis-py turns the pairs into floats only when told WITHSCORES by option.
            flat = await store.redis.execute_command("ZRANGE", key, start, start + size - 1, "WITHSCORES")
    if batch:
        yield batch


async def set_entries(
    store: FollowStore, keys: list[str], reads: KeyedReads | None = None
) -> AsyncIterator[list[tuple[str, str, int]]]:
    """(owner, member, score) of every entry of the sorted sets `keys`, about CHUNK at a time; the
    first entries of each through `reads` when given (keyed_reads), else redis-py."""
    async for batch in _raw_entries(store, reads, keys):
        yield [(owner, member, int(at)) for owner, member, at in batch]


async def _edges_of(store: FollowStore, keys: list[str], reads: KeyedReads | None) -> list[Edge]:
    return [Edge(a, b, at) async for chunk in set_entries(store, keys, reads) for a, b, at in chunk]


async def scan_users(store: FollowStore) -> AsyncIterator[list[Profile]]:
    """Every registered user's profile, a batch at a time."""
    batch: list[str] = []
    async for key in store.redis.scan_iter(match=store.keys.pattern("profile"), count=SCAN_COUNT):
        batch.append(store.keys.user_of(key))
        if len(batch) >= SCAN_COUNT:
            yield [p for p in await store.profiles(batch) if p is not None]
            batch = []
    if batch:
        yield [p for p in await store.profiles(batch) if p is not None]


async def scan_accounts_off(store: FollowStore) -> AsyncIterator[list[Profile]]:
    """Every account that is off (store/graph/lifecycle.py), with its state, a batch at a time."""
    batch: list[str] = []
    async for key in store.redis.scan_iter(match=store.keys.pattern("account"), count=SCAN_COUNT):
        batch.append(store.keys.user_of(key))
        if len(batch) >= SCAN_COUNT:
            yield [p for p in await store.account_profiles(batch) if p is not None]
            batch = []
    if batch:
        yield [p for p in await store.account_profiles(batch) if p is not None]


async def kept_fans(store: FollowStore, user_ids: list[str]) -> AsyncIterator[list[tuple[str, str, int]]]:
    """(account, fan, time) of the follows of accounts that are off kept in their own fans sets: with
    every following set, they make every follow there is (lifecycle.py says whose sets hold what)."""
    async for entries in set_entries(store, [store.keys.fans(user_id) for user_id in user_ids]):
        yield entries


async def scan_controls(store: FollowStore) -> AsyncIterator[list[Control]]:
    """Every block, mute and pending request from the actors' sets (blocking, muting,
    requests_out), a batch at a time, like scan_edges."""
    async with keyed_reads(store) as reads:
        for kind, name in _SOURCE.items():
            batch: list[str] = []
            async for key in store.redis.scan_iter(match=store.keys.pattern(name), count=SCAN_COUNT):
                batch.append(key)
                if len(batch) >= SCAN_COUNT:
                    async for chunk in set_entries(store, batch, reads):
                        yield [Control(kind, a, b, at) for a, b, at in chunk]
                    batch = []
            if batch:
                async for chunk in set_entries(store, batch, reads):
                    yield [Control(kind, a, b, at) for a, b, at in chunk]


# Every script control_many may run.
_CONTROL_SCRIPTS = (
    cs.BLOCK_AT_SCRIPT,
    cs.BLOCK_AT_OUT_SCRIPT,
    cs.BLOCK_IN_SCRIPT,
    cs.MUTE_AT_SCRIPT,
    cs.MIRROR_SCRIPT,
    cs.REQUEST_AT_SCRIPT,
    cs.REQUEST_AT_OUT_SCRIPT,
    cs.REQUEST_AT_IN_SCRIPT,
    UNFOLLOW_OUT_SCRIPT,
)


async def load_control_scripts(store: FollowStore) -> None:
    """Load control_many's scripts. A pipeline that mixes scripts the server knows with one it does
    not is run again whole once that one is loaded, so the others run twice: harmless to the graph,
    but their statuses then say EXISTED. Loading them before the first batch keeps the counts right."""
    await asyncio.gather(*(script.load(store.redis) for script in _CONTROL_SCRIPTS))


async def control_many(store: FollowStore, controls: Sequence[Control], now_ms: int) -> list[ControlStatus]:
    """Apply `controls` at their times (`now_ms` for those without one), idempotently: an existing
    control keeps its time. A block ends follows and requests between the pair, as `block` does; a
    request across a block, or of a follow that already is one, is refused.

    The blocks of the batch go first, then the rest in their order: a block only removes, and a
    request is refused across one, so the graph is the one of any order, and the statuses are the
    same on a single Redis and on a cluster. Ids must be valid and no control between a user and
    itself. Call load_control_scripts first (once).

    One round trip on a single Redis (one atomic script each). On a cluster five: whether the users
    exist, the blockers' steps, the blocked users' steps, the other actors' steps, the requested
    users' steps (and a sixth, rarely, to drop a request a block overtook between its steps).
    """
    k = store.keys
    order = sorted(range(len(controls)), key=lambda i: controls[i].kind is not ControlKind.BLOCK)
    items = [(controls[i], str(now_ms if controls[i].at is None else controls[i].at)) for i in order]
    replies: list[list[Any]]
    if not store.cluster:
        replies = await run_scripts(store.redis, [_single_call(k, c, at) for c, at in items])
    else:
        statuses = await store.pair_statuses([(c.actor, c.target) for c, _ in items])
        replies = [[status, 0] for status in statuses]
        known = [
            (i, c, at) for i, ((c, at), status) in enumerate(zip(items, statuses, strict=True)) if not status
        ]
        await _cluster_steps(store, [x for x in known if x[1].kind is ControlKind.BLOCK], replies)
        await _cluster_steps(store, [x for x in known if x[1].kind is not ControlKind.BLOCK], replies)
    result: list[ControlStatus] = [ControlStatus.EXISTED] * len(controls)
    for i, reply in zip(order, replies, strict=True):
        result[i] = _status(reply)
    return result


async def _cluster_steps(
    store: FollowStore, known: list[tuple[int, Control, str]], replies: list[list[Any]]
) -> None:
    """The actors' steps of `known` controls, then the targets' steps; each reply lands in
    `replies` at its index."""
    k = store.keys
    out = await run_scripts(store.redis, [_out_call(k, c, at) for _, c, at in known])
    for (i, _, _), reply in zip(known, out, strict=True):
        replies[i] = reply
    done = [(i, c) for i, c, _ in known if replies[i][0] == 0]
    accepted = await run_scripts(store.redis, [_in_call(k, c, str(replies[i][2])) for i, c in done])
    refused = [(i, c) for (i, c), ok in zip(done, accepted, strict=True) if not ok]
    # The actor's request was logged: withdraw it the way an unfollow does, logged too.
    await run_scripts(store.redis, [unfollow_out_call(k, c.actor, c.target) for _, c in refused])
    for i, _ in refused:
        replies[i] = [ControlStatus.BLOCKED, 0]


def _status(reply: list[Any]) -> ControlStatus:
    status, added = int(reply[0]), int(reply[1])
    return ControlStatus(added if status == 0 else status)


def _cut_keys(k: Keys, user: str) -> list[str]:
    return [k.following(user), k.fans(user), k.mutual(user), k.requests_in(user), k.requests_out(user)]


def _single_call(k: Keys, c: Control, at: str) -> ScriptCall:
    a, b = c.actor, c.target
    if c.kind is ControlKind.BLOCK:
        keys = [
            k.profile(a),
            k.profile(b),
            k.blocking(a),
            *_cut_keys(k, a),
            k.blocked_by(b),
            *_cut_keys(k, b),
        ]
        return logged(k, a, (cs.BLOCK_AT_SCRIPT, keys, [a, b, at]))
    if c.kind is ControlKind.MUTE:
        keys = [k.profile(a), k.muting(a), k.profile(b), k.muted_by(b)]
        return logged(k, a, (cs.MUTE_AT_SCRIPT, keys, [b, at]))
    keys = [k.profile(a), k.profile(b), k.blocking(a), k.blocked_by(a), k.following(a)]
    keys += [k.requests_out(a), k.requests_in(b)]
    return logged(k, a, (cs.REQUEST_AT_SCRIPT, keys, [a, b, at]))


def _out_call(k: Keys, c: Control, at: str) -> ScriptCall:
    """The actor's step on a cluster (a mute has no other)."""
    a, b = c.actor, c.target
    if c.kind is ControlKind.BLOCK:
        call: ScriptCall = (cs.BLOCK_AT_OUT_SCRIPT, [k.profile(a), k.blocking(a), *_cut_keys(k, a)], [b, at])
    elif c.kind is ControlKind.MUTE:
        call = (cs.MUTE_AT_SCRIPT, [k.profile(a), k.muting(a)], [b, at])
    else:
        keys = [k.profile(a), k.blocking(a), k.blocked_by(a), k.following(a), k.requests_out(a)]
        call = (cs.REQUEST_AT_OUT_SCRIPT, keys, [b, at])
    return logged(k, a, call)


def _in_call(k: Keys, c: Control, at: str) -> ScriptCall:
    """The target's step on a cluster, at the time the actor's step kept."""
    a, b = c.actor, c.target
    if c.kind is ControlKind.BLOCK:
        return cs.BLOCK_IN_SCRIPT, [k.blocked_by(b), *_cut_keys(k, b)], [a, at]
    if c.kind is ControlKind.MUTE:
        return cs.MIRROR_SCRIPT, [k.muted_by(b)], [a, at]
    return cs.REQUEST_AT_IN_SCRIPT, [k.requests_in(b), k.blocking(b), k.blocked_by(b)], [a, at]
