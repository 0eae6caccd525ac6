"""Blocks, mutes, follow requests and settings: the social controls of the graph.

Each write between two users is two idempotent steps, one on each user's slot (both in one atomic
script on a single Redis), like a follow (store/graph/scripts.py). The first step is the acting user's,
whose own set is the source of truth (`blocking`, `requests_out` for a request), except for the
answers to a request, which start on the owner's side: a crash between an accept's steps leaves
the request pending again once `followgraph repair` has run (or, when the owner is no longer
locked, the follow made, as unlocking would), never half a follow.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from followgraph.store.graph import control_scripts as cs
from followgraph.store.graph.errors import UserNotFoundError
from followgraph.store.graph.events import logged
from followgraph.store.graph.ids import validate_user_id
from followgraph.store.graph.keys import Keys
from followgraph.store.graph.model import FollowResult, Relationship, UserSettings, is_set
from followgraph.store.graph.reads import ReadOps
from followgraph.store.redis.lua import LuaScript, ScriptCall, run_scripts

# Requests accepted per step when an account is unlocked (`python -m bench.unlock` measures it,
# 100,000 requests with reads beside them). On one Redis each step's two scripts hold the server
# while they run: with 100 a step, reads waited at p99 about 2.7 ms, against 10-11 ms with 500, in
# about the same 3.2 s in all. On a cluster the requesters' steps spread over the nodes, and the
# round trips saved by longer steps count more: 4.4-6.1 s with 500, 6.8-7.2 s with 100.
ACCEPT_BATCH = 100
CLUSTER_ACCEPT_BATCH = 500
# Requesters' steps per round trip on a cluster, where each is a script call of its own.
REQUESTER_STEPS = 100


async def _pair(
    store: ReadOps,
    a: str,
    b: str,
    single: ScriptCall,
    out: ScriptCall,
    into: Callable[[str], ScriptCall],
) -> list[Any]:
    """Run a two-step change: `single` on a single Redis; on a cluster `out` (A's step, whose reply
    starts with a status and whose third value, if any, is passed on) and then B's step, `into`
    that value ('' for none), once both users are known to exist. `single` and `out` are logged
    as A's (store.events.logged)."""
    k = store.keys
    if not store.cluster:
        reply: list[Any] = (await run_scripts(store.redis, [logged(k, a, single)]))[0]
    else:
        [status] = await store.pair_statuses([(a, b)])
        store.check_status(status, a, b)
        reply = (await run_scripts(store.redis, [logged(k, a, out)]))[0]
        if reply[0] == 0:
            passed = reply[2] if len(reply) > 2 else None
            await run_scripts(store.redis, [into("" if passed is None else str(passed))])
    store.check_status(int(reply[0]), a, b)
    return reply


async def _result(store: ReadOps, viewer: str, other: str, changed: Any) -> FollowResult:
    """The viewer's relationship to `other` after a change (one more round trip: controls are
    rare writes)."""
    [relation] = await store.relations(viewer, [other])
    return FollowResult(bool(changed), relation.relationship)


@dataclass(frozen=True, slots=True)
class _Removal:
    """A relation A's set holds and B's set mirrors, removed by a trio of scripts
    (control_scripts._removal: on a single Redis, A's step, B's step)."""

    scripts: tuple[LuaScript, LuaScript, LuaScript]
    a_set: Callable[[Keys, str], str]
    b_set: Callable[[Keys, str], str]

    async def run(self, store: ReadOps, a: str, b: str) -> FollowResult:
        single, out, into = self.scripts
        k = store.keys
        a_set, b_set = self.a_set(k, a), self.b_set(k, b)
        reply = await _pair(
            store,
            a,
            b,
            (single, [k.profile(a), k.profile(b), a_set, b_set], [a, b]),
            (out, [k.profile(a), a_set], [b]),
            lambda _: (into, [b_set], [a]),
        )
        return await _result(store, a, b, reply[1])


_UNBLOCK = _Removal(
    (cs.UNBLOCK_SCRIPT, cs.UNBLOCK_OUT_SCRIPT, cs.UNBLOCK_IN_SCRIPT), Keys.blocking, Keys.blocked_by
)
_REJECT = _Removal(
    (cs.REJECT_SCRIPT, cs.REJECT_OUT_SCRIPT, cs.REJECT_IN_SCRIPT), Keys.requests_in, Keys.requests_out
)


# The work running on after its caller gave up, with its store (held here so that it is not
# collected), and the stores whose acceptances are to stop.
_finishing: dict[asyncio.Future[int], ReadOps] = {}
_stopping: weakref.WeakSet[ReadOps] = weakref.WeakSet()


async def _run_on(store: ReadOps, work: Coroutine[Any, Any, int]) -> int:
    """`work`'s result; it runs to its end in a task of its own even if the caller is cancelled."""
    task = asyncio.ensure_future(work)
    _finishing[task] = store
    task.add_done_callback(_finished)
    return await asyncio.shield(task)


def _finished(task: asyncio.Future[int]) -> None:
    _finishing.pop(task, None)


async def _accept_batch(store: ReadOps, user_id: str, batch: int) -> int:
    """Accept up to `batch` of `user_id`'s oldest pending requests: the owner's step, then the
    requesters'. How many were accepted."""
    k = store.keys
    owner = [k.profile(user_id), k.requests_in(user_id), k.fans(user_id), k.following(user_id)]
    owner.append(k.mutual(user_id))
    flat = await cs.ACCEPT_OLDEST_SCRIPT.run(store.redis, owner, [batch])
    accepted = [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
    if accepted and not store.cluster:
        # One call for the batch: a call per requester costs the client more than the server.
        requesters = [requester for requester, _ in accepted]
        keys = [
            key for r in requesters for key in (k.requests_out(r), k.following(r), k.fans(r), k.mutual(r))
        ]
        call = logged(k, user_id, (cs.ACCEPT_IN_MANY_SCRIPT, keys, [user_id, accepted[0][1], *requesters]))
        await run_scripts(store.redis, [call])
        return len(accepted)
    # A step per requester, each on its own slot, sent a part at a time: packing 500 calls at once
    # would hold the event loop for tens of milliseconds. A step run twice accepts nothing the
    # second time (the request is gone), so the steps may go through the read channel's
    # connections, one write per node, rather than through redis-py's cluster pipeline (which
    # took twice as long for 100,000 requests: `python -m bench.unlock --cluster`).
    steps = [_requester_step(store, requester, user_id, at) for requester, at in accepted]
    for start in range(0, len(steps), REQUESTER_STEPS):
        await store.run_repeatable(steps[start : start + REQUESTER_STEPS])
    return len(accepted)


def _requester_step(store: ReadOps, requester: str, owner: str, at: str) -> ScriptCall:
    k = store.keys
    keys = [k.requests_out(requester), k.following(requester), k.fans(requester), k.mutual(requester)]
    return logged(k, requester, (cs.ACCEPT_IN_SCRIPT, keys, [owner, at]))


class ControlOps(ReadOps):
    """Blocks, mutes, follow requests and settings, as operations of the store."""

    async def block(self, *, blocker: str, blocked: str) -> FollowResult:
        """`blocker` blocks `blocked`: follows both ways and requests both ways end. Idempotent."""
        self.check_pair(blocker, blocked, self_message="A user cannot block themselves.")
        k, a, b = self.keys, blocker, blocked
        a_sets = [k.following(a), k.fans(a), k.mutual(a), k.requests_in(a), k.requests_out(a)]
        b_sets = [k.following(b), k.fans(b), k.mutual(b), k.requests_in(b), k.requests_out(b)]
        single = [k.profile(a), k.profile(b), k.blocking(a), *a_sets, k.blocked_by(b), *b_sets]
        reply = await _pair(
            self,
            a,
            b,
            (cs.BLOCK_SCRIPT, single, [a, b]),
            (cs.BLOCK_OUT_SCRIPT, [k.profile(a), k.blocking(a), *a_sets], [b]),
            lambda at: (cs.BLOCK_IN_SCRIPT, [k.blocked_by(b), *b_sets], [a, at]),
        )
        return FollowResult(bool(reply[1]), Relationship.NONE)

    async def unblock(self, *, blocker: str, blocked: str) -> FollowResult:
        """`blocker` lifts the block of `blocked`; follows it ended stay ended. Idempotent."""
        self.check_pair(blocker, blocked, self_message="A user cannot unblock themselves.")
        return await _UNBLOCK.run(self, blocker, blocked)

    async def mute(self, *, muter: str, muted: str, on: bool = True) -> FollowResult:
        """`muter` mutes (or, with on=False, unmutes) `muted`: nothing else changes. Idempotent."""
        self.check_pair(muter, muted, self_message="A user cannot mute themselves.")
        k = self.keys
        keys = [k.profile(muter), k.muting(muter)]
        if self.cluster:
            [status] = await self.pair_statuses([(muter, muted)])
            self.check_status(status, muter, muted)
        else:
            keys += [k.profile(muted), k.muted_by(muted)]
        call = logged(k, muter, (cs.MUTE_SCRIPT, keys, [muted, "1" if on else "0"]))
        [(status, changed, at)] = await run_scripts(self.redis, [call])
        self.check_status(int(status), muter, muted)
        if self.cluster:
            mirror = [muter, "" if at is None else str(at)]
            await cs.MIRROR_SCRIPT.run(self.redis, [k.muted_by(muted)], mirror)
        return await _result(self, muter, muted, changed)

    async def muted_by(self, user_id: str) -> set[str]:
        """The users `user_id` mutes (one round trip): whose events are not pushed to them."""
        muted: list[str] = await self.redis.zrange(self.keys.muting(user_id), 0, -1)  # type: ignore[assignment]
        return set(muted)

    async def accept_request(self, *, user: str, requester: str) -> FollowResult:
        """`requester`'s pending request to follow `user` becomes a follow (at now). Idempotent."""
        self.check_pair(user, requester, self_message="A user cannot answer their own request.")
        k, a, b = self.keys, user, requester
        owner = [k.requests_in(a), k.fans(a), k.following(a), k.mutual(a)]
        requester_keys = [k.requests_out(b), k.following(b), k.fans(b), k.mutual(b)]
        reply = await _pair(
            self,
            a,
            b,
            (cs.ACCEPT_SCRIPT, [k.profile(a), k.profile(b), *owner, *requester_keys], [a, b]),
            (cs.ACCEPT_OUT_SCRIPT, [k.profile(a), *owner], [b]),
            lambda at: logged(k, b, (cs.ACCEPT_IN_SCRIPT, requester_keys, [a, at])),
        )
        return await _result(self, a, b, reply[1])

    async def reject_request(self, *, user: str, requester: str) -> FollowResult:
        """`requester`'s pending request to follow `user` is dropped. Idempotent."""
        self.check_pair(user, requester, self_message="A user cannot answer their own request.")
        return await _REJECT.run(self, user, requester)

    async def update_settings(
        self,
        user_id: str,
        *,
        locked: bool | None = None,
        hide_following: bool | None = None,
        hide_fans: bool | None = None,
    ) -> tuple[UserSettings, bool]:
        """Change the settings given; returns them and whether the account was just unlocked.

        With `locked=False` the account is marked (Keys.accepting) and the caller runs accept_all
        next, unlocked just now or not (as updateSettings does): it accepts what is pending and clears
        the mark."""
        validate_user_id(user_id)
        if locked is False:
            # Marked before the unlock, so that no crash can leave an unlocked account's requests
            # pending with no mark to find them by; a mark on an account that stays locked accepts
            # nothing when taken up.
            await self.redis.sadd(self.keys.accepting(), user_id)
        args = ["" if v is None else "1" if v else "0" for v in (locked, hide_following, hide_fans)]
        call = logged(self.keys, user_id, (cs.UPDATE_SETTINGS_SCRIPT, [self.keys.profile(user_id)], args))
        [reply] = await run_scripts(self.redis, [call])
        if reply == -1:
            if locked is False:
                await self.redis.srem(self.keys.accepting(), user_id)
            raise UserNotFoundError(user_id)
        before, *now = reply
        settings = UserSettings.read(*now)
        return settings, is_set(before) and not settings.locked

    def accept_batch(self) -> int:
        """Requests accepted per step on `self`'s Redis, when the caller does not say."""
        return CLUSTER_ACCEPT_BATCH if self.cluster else ACCEPT_BATCH

    async def accept_pending(self, user_id: str, *, batch: int | None = None) -> AsyncIterator[int]:
        """Accept `user_id`'s pending requests, oldest first, `batch` per step (accept_batch by
        default; two round trips each, on a cluster one more per REQUESTER_STEPS requesters beyond the
        first), yielding how many each step accepted; it stops when none are left or the account is
        locked again. The event loop runs other work between steps."""
        validate_user_id(user_id)
        if batch is None:
            batch = self.accept_batch()
        while self not in _stopping:
            # A batch's two steps run to the end even when its caller is cancelled (a request timeout,
            # a disconnect): cut between them, the owner's side would hold follows the requesters'
            # sides never got, and asking again would find nothing left to accept.
            accepted = await _run_on(self, _accept_batch(self, user_id, batch))
            if not accepted:
                return
            yield accepted
            await asyncio.sleep(0)

    async def accept_all(self, user_id: str, *, batch: int | None = None) -> int:
        """Accept all of `user_id`'s pending requests (accept_pending to its end), in a task that
        runs on when the caller is cancelled: the account is unlocked already, and what a request
        timeout or a disconnect cut short would stay pending until asked again. At its end the user's
        mark (Keys.accepting) goes, unless finish_acceptances stopped it first. How many."""

        async def every_batch() -> int:
            accepted = sum([n async for n in self.accept_pending(user_id, batch=batch)])
            if self not in _stopping:
                await self.redis.srem(self.keys.accepting(), user_id)
            return accepted

        return await _run_on(self, every_batch())

    async def marked_acceptances(self) -> list[str]:
        """The users marked as being accepted (Keys.accepting), in order."""
        # decode_responses: the members are str.
        return sorted(await self.redis.smembers(self.keys.accepting()))  # type: ignore[arg-type]

    async def resume_acceptances(self, users: list[str] | None = None) -> list[str]:
        """Accept the pending requests of every user still marked as being accepted (an acceptance
        that a restart or a crash cut short; on an account locked again, nothing), or of `users` as
        marked_acceptances gave them, one user after the other, until finish_acceptances. The users
        it took up."""
        if users is None:
            users = await self.marked_acceptances()
        for user_id in users:
            if self in _stopping:
                break
            await self.accept_all(user_id)
        return users

    async def finish_acceptances(self, timeout: float) -> int:
        """Stop the acceptances running on `self` once their batch in flight is done, waiting for them
        `timeout` s at most (a server stopping): what they leave stays pending, marked, for the next
        start's resume_acceptances. How many were still running after `timeout`."""
        _stopping.add(self)
        running = [task for task, on in _finishing.items() if on is self]
        if not running:
            return 0
        _, late = await asyncio.wait(running, timeout=timeout)
        return len(late)

    async def pending_count(self, user_id: str) -> int:
        """Pending follow requests to `user_id`."""
        validate_user_id(user_id)
        return int(await self.redis.zcard(self.keys.requests_in(user_id)))
