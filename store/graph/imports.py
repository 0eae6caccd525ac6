"""Bulk import of follows: a batch of thousands in a few script calls, one event for each batch.

On a single Redis a batch is one atomic script (lua/import_follows.lua): every follow as `follow`
makes it (both users' sets, the mutual sets at the later of the two times, blocks refused, a
pending request ended, a follow of a locked account without a time made a request), the users it
names registered where missing, and one IMPORT event for everything the batch changed
(events.py), all in the same call. Running a batch again changes nothing and logs nothing, so an
import cut short anywhere is completed by running it again (cli/checkpoints.py keeps where).

On a cluster a batch takes three steps, each one script per master sent to every master at once,
whose keys are all on that master: the users (registered where missing, each slot's in an event on
its own log), the followers' sets (each slot's follows in an event on its log, as a follow's event
is on the follower's slot), then the followees' sets. A crash between the steps leaves only the
derived entries behind, which the batch run again completes.

The keys are built inside the scripts from the layout Keys gives (`user_key_layout`), per user
rather than passed per follow: a batch names each user once.

What a batch learns of a user (registered or not, has blocks or requests, follows anyone) costs it
a lookup of twenty keys, and a random file names most users in many batches. On a single Redis an
import keeps what its batches learnt (KnownUsers: registered or not, blocks or requests). A follow
with a time, whose users it knows as registered with neither or does not know yet (the batch learns
those first), and whose users no follow of the batch without a time names, is plain: it needs no
rule but the follow back, and the script takes the plain follows in a loop with three commands a
follow and nothing else. The script believes the import only if the log's last event is still the
one the import saw: every other write that could change what it knows logs an event (a block, a
request, a registration, an account turned off or on), and then the plain follows go as the others
do, each user learnt again.

A plain follow is checked for the follow back (one command of the three) unless the followee is
known to follow nobody, or not the follower: a user the batch itself registers, until they follow
someone, and a user an earlier batch of the import registered, whose every follow since the import
sent (KnownUsers.fresh and .sent). Into an empty Redis that is nearly every follow.

An import's first batch asks whether the database holds any key. When it held none, a user the
import has not named yet was never seen while nothing else writes and the import forgets none of
the users it named (KnownUsers.empty): the script registers them without a lookup.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from redis.asyncio import RedisCluster
from redis.exceptions import NoScriptError, SlotNotCoveredError

from followgraph.store.graph.follows import Edge, unfollow_out_call
from followgraph.store.graph.known_users import Follows, KnownUsers
from followgraph.store.graph.scripts import FOLLOW_STEPS, LOG, NOW
from followgraph.store.graph.sources import source
from followgraph.store.graph.store import FollowStore
from followgraph.store.redis.lua import Arg, LuaScript, run_scripts

T = TypeVar("T")

# The keys a batch builds for each user, in the order the scripts read their layout.
USER_KEYS = (
    "profile",
    "account",
    "following",
    "fans",
    "mutual",
    "blocking",
    "blocked_by",
    "requests_out",
    "requests_in",
)

_USERS = source("parts/import_users")
_EVENT = source("parts/import_event")
FOLLOW_PART = source("parts/import_follow")
_BLOCKED = source("parts/blocked")
_REQUESTS = source("parts/request_steps")

IMPORT_FOLLOWS_SCRIPT = LuaScript(
    NOW + LOG + _BLOCKED + _REQUESTS + _USERS + _EVENT + FOLLOW_PART + source("import_follows")
)
IMPORT_USERS_AT_SCRIPT = LuaScript(NOW + _USERS + _EVENT + source("import_users_at"))
IMPORT_OUT_SCRIPT = LuaScript(NOW + FOLLOW_STEPS + _BLOCKED + _USERS + _EVENT + source("import_out"))
IMPORT_IN_SCRIPT = LuaScript(NOW + FOLLOW_STEPS + _BLOCKED + _USERS + source("import_in"))
SCRIPTS = (IMPORT_FOLLOWS_SCRIPT, IMPORT_USERS_AT_SCRIPT, IMPORT_OUT_SCRIPT, IMPORT_IN_SCRIPT)


class Outcome(enum.Enum):
    """What became of one follow of a batch: the letter the scripts answer with."""

    ADDED = "1"
    EXISTED = "0"
    REQUESTED = "r"  # the followee is locked and the follow had no time: a pending request
    BLOCKED = "b"
    FOLLOWER_UNKNOWN = "f"
    FOLLOWEE_UNKNOWN = "F"

    @property
    def refused(self) -> bool:
        return self in (Outcome.BLOCKED, Outcome.FOLLOWER_UNKNOWN, Outcome.FOLLOWEE_UNKNOWN)


REFUSED = frozenset(o.value for o in Outcome if o.refused)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """A letter per follow of the batch (Outcome's values), in order; with `stop`, the batch stopped
    after the first refused one, and later follows have none. `registered`: users it registered."""

    outcomes: str
    registered: int


async def load_import_scripts(store: FollowStore) -> None:
    """Load the scripts on the server (every master of a cluster), before the first batch."""
    await asyncio.gather(*(script.load(store.redis) for script in SCRIPTS))


async def import_batch(
    store: FollowStore,
    edges: Sequence[str],
    *,
    register: bool = True,
    stop: bool = False,
    known: KnownUsers | None = None,
) -> BatchResult:
    """Apply the follows of `edges`, flat: follower, followee, time (epoch ms digits, '' for now) of
    each, ids valid and no self-follow. `register` registers the users they name that are missing
    (not an account that is off); `stop` ends the batch at its first refused follow.
    `known`: what earlier batches of the same import learnt, which sorts out the plain follows, kept
    up to date (a single Redis only: a cluster's batches learn their users each time).
    One round trip on a single Redis; on a cluster three, each one script per master."""
    if store.cluster:
        return await _cluster_batch(store, edges, register, stop)
    batch = single_batch(store, edges, register=register, stop=stop, known=known)
    return batch.result(await IMPORT_FOLLOWS_SCRIPT.run(store.redis, batch.keys, batch.args), known)


@dataclass(slots=True)
class SingleBatch:
    """A batch for a single Redis, ready to go: the script's keys and arguments, and which of its
    follows are plain (its answer gives their letters apart from the others')."""

    keys: list[str]
    args: list[Arg]
    plain: list[bool]
    # It has a follow without a time, which may make a request: a user's letter may change.
    timeless: bool

    def result(self, reply: Any, known: KnownUsers | None) -> BatchResult:
        """The batch's result from its script's answer, what it learnt told to `known`."""
        others, plain_codes, registered, before, after, users, letters, empty = reply
        if known is not None:
            known.learnt(str(before), str(after), str(users), str(letters), found_empty=str(empty) == "1")
        return BatchResult(_merged(self.plain, str(plain_codes), str(others)), int(registered))


def single_batch(
    store: FollowStore, edges: Sequence[str], *, register: bool, stop: bool, known: KnownUsers | None
) -> SingleBatch:
    """The script call of a batch on a single Redis (import_batch), from what `known` knows now."""
    k = store.keys
    count = len(edges) // 3
    plain, no_back = [False] * count, ""
    unknown: list[str] = []
    follows = Follows.of(edges)
    if known is not None and not stop:
        plain, unknown = known.plain(follows)
        no_back = known.no_back(follows, plain)
    args: list[Arg] = [*k.user_key_layout(USER_KEYS), "1" if register else "0", "1" if stop else "0"]
    args += ["" if known is None else known.at if known.letters else "*", " ".join(unknown)]
    args += [_lines(edges, plain, True), _lines(edges, plain, False), no_back]
    args += ["" if known is None else known.run, "" if known is None or stop else known.unseen, "", k.log_cap]
    return SingleBatch([k.log("")], args, plain, follows.timeless)


def _lines(edges: Sequence[str], plain: list[bool], which: bool) -> str:
    """The follows of `edges` (flat) that are plain, or not, as the script reads them."""
    return _lines_at(edges, [i for i, p in enumerate(plain) if p is which])


def _lines_at(edges: Sequence[str], indexes: Iterable[int]) -> str:
    """The follows of `edges` (flat) at `indexes`, as the scripts read them: a 'follower followee
    time' line each."""
    return "".join([f"{edges[3 * i]} {edges[3 * i + 1]} {edges[3 * i + 2]}\n" for i in indexes])


def _merged(plain: list[bool], plain_codes: str, others: str) -> str:
    """The batch's letters in its own order, from the plain follows' and the others'. With `stop`
    every follow is among the others, which may have stopped short."""
    if not any(plain):
        return others
    if all(plain):
        return plain_codes
    codes, p, o = [], iter(plain_codes), iter(others)
    for is_plain in plain:
        codes.append(next(p) if is_plain else next(o))
    return "".join(codes)


# -- on a cluster ---------------------------------------------------------------------------------

# Each master's part of a step: a key of that master (to route the call) and the arguments.
_Calls = dict[str, tuple[Any, list[str], list[Arg]]]


async def _on_masters(store: FollowStore, script: LuaScript, calls: _Calls) -> dict[str, Any]:
    """The reply of each master's call of `script`, sent to every master at once."""
    redis = store.redis
    assert isinstance(redis, RedisCluster)

    async def one(node: Any, keys: list[str], args: list[Arg]) -> Any:
        command = script.command(keys, args)
        try:
            return await redis.execute_command(*command, target_nodes=node)
        except NoScriptError:
            await script.load(redis)
            return await redis.execute_command(*command, target_nodes=node)

    names = list(calls)
    replies = await asyncio.gather(*(one(*calls[name]) for name in names))
    return dict(zip(names, replies, strict=True))


class _Masters:
    """The master of each slot a batch names, as the slot map says now."""

    def __init__(self, store: FollowStore) -> None:
        redis = store.redis
        assert isinstance(redis, RedisCluster)
        self.slots = redis.nodes_manager.slots_cache
        self.nodes: dict[int, Any] = {}

    def node(self, slot: int) -> Any:
        node = self.nodes.get(slot)
        if node is None:
            holders = self.slots.get(slot)
            if not holders:
                raise SlotNotCoveredError(f"Slot {slot} is not covered by the cluster.")
            node = self.nodes[slot] = holders[0]
        return node


def _grouped(masters: _Masters, items: Iterable[tuple[int, T]]) -> dict[str, tuple[Any, list[tuple[int, T]]]]:
    """Items (slot, value) by master: (the master, its items)."""
    out: dict[str, tuple[Any, list[tuple[int, T]]]] = {}
    nodes = masters.nodes
    for slot, values in items:
        node = nodes.get(slot) or masters.node(slot)
        out.setdefault(node.name, (node, []))[1].append((slot, values))
    return out


async def _cluster_batch(store: FollowStore, edges: Sequence[str], register: bool, stop: bool) -> BatchResult:
    k = store.keys
    layout = k.user_key_layout(USER_KEYS)
    masters = _Masters(store)
    count = len(edges) // 3
    followers, followees, times = edges[0::3], edges[1::3], edges[2::3]

    slot_log = k.slot_log

    # 1. The users, each on its own slot.
    user_slot = k.slot
    slot_of = {user: user_slot(user) for user in dict.fromkeys([*followers, *followees])}
    by_slot: dict[int, list[str]] = {}
    for user, slot in slot_of.items():
        by_slot.setdefault(slot, []).append(user)
    timeless = "" in times
    calls: _Calls = {}
    order: dict[str, list[str]] = {}
    for name, (node, groups) in _grouped(masters, by_slot.items()).items():
        args: list[Arg] = [*layout, "1" if register else "0", "1" if timeless else "0"]
        for slot, users in groups:
            args += [slot_log(slot), " ".join(users)]
            order.setdefault(name, []).extend(users)
        calls[name] = (node, [k.slot_log(groups[0][0])], [*args, k.log_cap])
    state: dict[str, str] = {}
    for name, letters in (await _on_masters(store, IMPORT_USERS_AT_SCRIPT, calls)).items():
        state.update(zip(order[name], str(letters), strict=True))
    registered = sum(1 for letter in state.values() if letter == "n")

    # Which follows go ahead: both users registered; those that stop the batch end it.
    outcomes: list[str] = [""] * count
    going: list[int] = []
    requests: list[int] = []
    for i in range(count):
        if state[followers[i]] == "u":
            outcomes[i] = Outcome.FOLLOWER_UNKNOWN.value
        elif state[followees[i]] == "u":
            outcomes[i] = Outcome.FOLLOWEE_UNKNOWN.value
        elif times[i] == "" and state[followees[i]] == "l":
            requests.append(i)  # a request, made as follow() makes it
            continue
        else:
            going.append(i)
            continue
        if stop:
            count = i + 1
            break

    # 2. The followers' sets, each slot's follows in an event on its log.
    out_order: dict[int, list[int]] = {}
    for i in going:
        out_order.setdefault(slot_of[followers[i]], []).append(i)
    calls = {}
    sent: dict[str, list[int]] = {}
    for name, (node, by_slots) in _grouped(masters, out_order.items()).items():
        args = list(layout)
        for slot, indexes in by_slots:
            args += [slot_log(slot), _lines_at(edges, indexes)]
            sent.setdefault(name, []).extend(indexes)
        calls[name] = (node, [k.slot_log(by_slots[0][0])], [*args, k.log_cap])
    kept: dict[int, str] = {}
    for name, (letters, joined) in (await _on_masters(store, IMPORT_OUT_SCRIPT, calls)).items():
        for i, letter, at in zip(sent[name], str(letters), str(joined).split(" "), strict=True):
            outcomes[i] = letter
            if letter != Outcome.BLOCKED.value:
                kept[i] = at

    # 3. The followees' sets, at the times the followers' sets kept.
    in_items: dict[int, list[int]] = {}
    for i in kept:
        in_items.setdefault(slot_of[followees[i]], []).append(i)
    calls, sent = {}, {}
    for name, (node, slots) in _grouped(masters, in_items.items()).items():
        taken = [j for _, group in slots for j in group]
        lines = "".join([f"{followers[j]} {followees[j]} {kept[j]}\n" for j in taken])
        sent[name] = taken
        calls[name] = (node, [k.slot_log(slots[0][0])], [*layout, lines])
    refused: list[int] = []
    for name, letters in (await _on_masters(store, IMPORT_IN_SCRIPT, calls)).items():
        refused += [i for i, letter in zip(sent[name], str(letters), strict=True) if letter == "b"]
    # A block that came between the steps: the follower's step is undone, logged as an unfollow.
    await run_scripts(store.redis, [unfollow_out_call(k, followers[i], followees[i]) for i in refused])
    for i in refused:
        outcomes[i] = Outcome.BLOCKED.value

    if requests:
        replies = await store.follow_edges([Edge(followers[i], followees[i]) for i in requests])
        for i, (status, changed, _, _, pending) in zip(requests, replies, strict=True):
            outcomes[i] = _request_outcome(status, changed, pending)
    return BatchResult("".join(outcomes[:count]), registered)


def _request_outcome(status: int, changed: int, pending: int) -> str:
    if status == -1:
        return Outcome.FOLLOWER_UNKNOWN.value
    if status == -2:
        return Outcome.FOLLOWEE_UNKNOWN.value
    if status < 0:
        return Outcome.BLOCKED.value
    if not changed:
        return Outcome.EXISTED.value
    return Outcome.REQUESTED.value if pending else Outcome.ADDED.value
