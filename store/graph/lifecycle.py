"""Accounts switched off, back on, and deleted for good (store/graph/lua/parts/lifecycle.lua).

An account that is off (deactivated by its user, suspended by an admin, being deleted) has its
profile hash renamed to `account`: every script and read that asks whether a user is registered
finds no such user, so the account is gone for everyone else from that instant, with no check
added to any other path. Its follows leave the other users' sets (their counts drop with them) and
stay in its own sets, to come back on reactivation with their times; its pending requests end.

Whose sets hold a follow while one side is off:

    both on            both users' sets (following of the follower, fans of the followee)
    one off            the off user's sets only; the other's `kept_by` names the off user
    both off           the sets of the one who went off last, or of both

An unfollow by the other side ends a kept follow (store/graph/lua/unfollow.lua clears the off
user's side), and so does the other side's deletion (its `kept_by` leads to the off user's sets).

On a single Redis an account whose sets name at most ATOMIC_LIMIT users changes in one script:
every count moves at the same instant. A larger one, and every account on a cluster, changes in
steps of at most BATCH users each, marked in `lifecycle_jobs` until done, so that a restart takes
the change up again (`resume_lifecycle`); the account is off for everyone from the first step, and
the other users' counts reach their final values as the steps go. A step that Redis did not
answer (a failover, a restart, a write its replicas did not confirm) is tried again after a pause
that doubles up to RETRY_MOST seconds: every step is idempotent, and the job starts again from
what its sets still hold, so the change ends once a primary answers, without a restart.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, cast

from redis.exceptions import (
    BusyLoadingError,
    ClusterDownError,
    ConnectionError,
    ReadOnlyError,
    TimeoutError,
    TryAgainError,
)

from followgraph.store.graph.columns import profile_of
from followgraph.store.graph.errors import AccountInactiveError, UserNotFoundError
from followgraph.store.graph.events import logged
from followgraph.store.graph.ids import validate_user_id
from followgraph.store.graph.keys import Keys
from followgraph.store.graph.lifecycle_scripts import (
    ATTACH_SCRIPT,
    DEACTIVATE_SCRIPT,
    DELETE_SCRIPT,
    DETACH_SCRIPT,
    ERASE_SCRIPT,
    FLIP_OFF_SCRIPT,
    FLIP_ON_SCRIPT,
    PURGE_SCRIPT,
    REACTIVATE_SCRIPT,
)
from followgraph.store.graph.model import Profile
from followgraph.store.graph.scripts import PROFILE_FIELDS
from followgraph.store.graph.search_index import IndexOps
from followgraph.store.redis.lua import ScriptCall, run_scripts
from followgraph.store.redis.replicas import WriteNotReplicatedError

# Users named at most by an account that changes in one atomic script on a single Redis.
ATOMIC_LIMIT = 2000
# Users per step of a change in batches: a script of a few milliseconds of Redis, so that the
# requests in between wait at most that long.
BATCH = 200
# The share of its time a change in batches works: after each step it rests as long again, so that
# its process (and Redis) keep the rest for the requests they serve.
DUTY = 0.5
# Attempts of the one-script change when the account's sets moved between the read and the script.
ATTEMPTS = 4
# Seconds before a change in batches tries a step Redis did not answer again, doubled each time
# up to RETRY_MOST.
RETRY_FIRST, RETRY_MOST = 0.2, 30.0
# What a step of a change in batches is tried again after: Redis away, replaced or not yet ready.
# Anything else (a bug, a script error) stops the change; the server's next start takes it up.
REDIS_AWAY: tuple[type[Exception], ...] = (
    ConnectionError,
    TimeoutError,
    ReadOnlyError,
    BusyLoadingError,
    TryAgainError,
    ClusterDownError,
    WriteNotReplicatedError,
    OSError,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JobProgress:
    """A change in batches under way: `kind` (deactivate, reactivate, delete), and how many of the
    users the account's sets named it has visited, of `total`."""

    kind: str
    done: int
    total: int


# Told (account, users left to visit) after each step of a change in batches.
JobWatcher = Callable[[str, int], None]


class AccountState(enum.Enum):
    ACTIVE = "ACTIVE"
    DEACTIVATED = "DEACTIVATED"
    SUSPENDED = "SUSPENDED"
    DELETING = "DELETING"


# The sets of a user, in the order of store/graph/lua/parts/lifecycle.lua's offsets.
_SETS = (
    "following", "fans", "mutual", "requests_in", "requests_out",
    "blocking", "blocked_by", "muting", "muted_by",
)  # fmt: skip
_FOLLOWS = ("following", "fans")
_REQUESTS = ("requests_in", "requests_out")


def user_keys(k: Keys, user_id: str) -> list[str]:
    """A user's keys as the lifecycle scripts read them (parts/lifecycle.lua's WIDTH)."""
    return [
        k.profile(user_id),
        k.account(user_id),
        *(k.of_list(name, user_id) for name in _SETS),
        k.kept_by(user_id),
        k.kept_with(user_id),
    ]


def own_keys(k: Keys, user_id: str) -> list[str]:
    """Every key of the account itself (parts/lifecycle.lua's OWN_WIDTH): a deletion removes them."""
    return [*user_keys(k, user_id), k.fans_seen(user_id), k.import_job(user_id), k.follow_limit(user_id)]


class LifecycleOps(IndexOps):
    """Deactivate, suspend, reactivate and delete accounts, as operations of the store."""

    async def account_state(self, user_id: str) -> AccountState | None:
        """Where `user_id`'s account stands; None when no such user is registered."""
        validate_user_id(user_id)
        k = self.keys

        def fill(pipe: Any) -> None:
            pipe.exists(k.profile(user_id))
            pipe.hget(k.account(user_id), "state")

        async with self.redis.pipeline(transaction=False) as pipe:
            fill(pipe)
            on, state = await pipe.execute()
        if on:
            return AccountState.ACTIVE
        return None if state is None else AccountState(state)

    async def accounts(self, user_ids: Sequence[str]) -> list[dict[str, str] | None]:
        """The hash of each account that is off (profile fields, `state`, `stateAt`,
        `stateReason`), None for one that is on or unknown: for the user's own eyes and admins'."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for user_id in user_ids:
                pipe.hgetall(self.keys.account(user_id))
            replies: list[dict[str, str]] = await pipe.execute()
        return [reply if reply else None for reply in replies]

    async def account_profiles(self, user_ids: Sequence[str]) -> list[Profile | None]:
        """The profile of each account that is off, with its state; None for one that is on or
        unknown. For the user's own eyes and admins': to everyone else such an account does not exist."""
        out: list[Profile | None] = []
        for user_id, account in zip(user_ids, await self.accounts(user_ids), strict=True):
            fields = None if account is None else [account.get(f) for f in PROFILE_FIELDS]
            profile = None if fields is None else profile_of(user_id, *fields)
            if profile is not None and account is not None:
                profile = replace(profile, account_state=account.get("state", AccountState.DELETING.value))
            out.append(profile)
        return out

    async def deactivate(
        self, user_id: str, *, state: AccountState = AccountState.DEACTIVATED, reason: str = ""
    ) -> AccountState:
        """Switch the account off (DEACTIVATED by its user, SUSPENDED by an admin): it leaves every
        other user's sets at once and keeps its own. A suspension of a deactivated account makes it
        suspended; a deactivation of a suspended one changes nothing. Returns the state before.
        UserNotFoundError when no such user is registered."""
        validate_user_id(user_id)
        if state not in (AccountState.DEACTIVATED, AccountState.SUSPENDED):
            raise ValueError(f"not a state to switch an account off to: {state}")
        k, x = self.keys, user_id
        for _ in range(ATTEMPTS if not self.cluster else 0):
            peers = await self._members(x, _FOLLOWS + _REQUESTS)
            if len(peers) > ATOMIC_LIMIT:
                break
            keys = own_keys(k, x) + [key for m in peers for key in user_keys(k, m)]
            call = logged(k, x, (DEACTIVATE_SCRIPT, keys, [x, state.value, reason, *peers]))
            [reply] = await run_scripts(self.redis, [call])
            if reply[0] == "retry":
                continue
            return await self._after_off(x, reply[1])
        had = await self._flip_off(x, state, reason, "deactivate")
        if had is None:
            raise UserNotFoundError(x)
        if had is AccountState.ACTIVE:
            await self._through(x, lambda: self._detach_all(x))
        return had

    async def reactivate(self, user_id: str, *, lifting: AccountState = AccountState.DEACTIVATED) -> None:
        """Switch the account back on, when it is `lifting` (DEACTIVATED: by its user; SUSPENDED: by
        an admin): every follow its sets kept comes back with its time, except those a block, an
        unfollow or a deletion ended meanwhile. AccountInactiveError when the account is off in
        another state (a user cannot lift a suspension); UserNotFoundError when unknown; nothing
        when it is on already."""
        validate_user_id(user_id)
        k, x = self.keys, user_id
        for _ in range(ATTEMPTS if not self.cluster else 0):
            [peers] = await self._set_members(x, ["kept_with"])
            if len(peers) > ATOMIC_LIMIT:
                break
            keys = own_keys(k, x) + [key for m in peers for key in user_keys(k, m)]
            call = logged(k, x, (REACTIVATE_SCRIPT, keys, [x, lifting.value, *peers]))
            [reply] = await run_scripts(self.redis, [call])
            if reply[0] == "retry":
                continue
            self._check_lifted(x, reply, lifting)
            await self._reindex(x)
            return
        await self._through(x, lambda: self._attach_all(x, lifting))

    async def delete_account(self, user_id: str) -> None:
        """Delete the account for good: its keys, and every trace of it in the other users' sets.
        The account is gone for everyone else at once. UserNotFoundError when unknown."""
        validate_user_id(user_id)
        k, x = self.keys, user_id
        for _ in range(ATTEMPTS if not self.cluster else 0):
            peers = await self._members(x, (*_SETS, "kept_by", "kept_with"))
            if len(peers) > ATOMIC_LIMIT:
                break
            keys = own_keys(k, x) + [key for m in peers for key in user_keys(k, m)]
            [reply] = await run_scripts(self.redis, [logged(k, x, (DELETE_SCRIPT, keys, [x, *peers]))])
            if reply[0] == "retry":
                continue
            if reply[0] == "unknown":
                raise UserNotFoundError(x)
            await self.index_users([x])
            return
        had = await self._flip_off(x, AccountState.DELETING, "", "delete")
        if had is None:
            raise UserNotFoundError(x)
        await self._through(x, lambda: self._purge_all(x))

    async def resume_lifecycle(self) -> list[str]:
        """Take up every change in batches that a restart or a crash cut short; the users."""
        found = cast("dict[str, str]", await self.redis.hgetall(self.keys.lifecycle_jobs()))
        jobs = {user_id: job for user_id, job in found.items() if ":" not in user_id}
        for user_id, job in jobs.items():
            kind, _, lifting = job.partition(":")
            if kind == "deactivate":
                await self._through(user_id, partial(self._detach_all, user_id))
            elif kind == "reactivate":
                await self._through(user_id, partial(self._attach_all, user_id, AccountState(lifting)))
            else:
                await self._through(user_id, partial(self._purge_all, user_id))
        return list(jobs)

    async def _through(self, x: str, run: Callable[[], Awaitable[None]]) -> None:
        """Run a change in batches of account `x` to its end, again from where its sets stand
        each time Redis does not answer one of its steps."""
        pause = RETRY_FIRST
        while True:
            try:
                await run()
                return
            except REDIS_AWAY as exc:
                log.warning(
                    "Changing account %s: Redis did not answer (%s: %s); trying again in %.1f s.",
                    x,
                    type(exc).__name__,
                    exc,
                    pause,
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETRY_MOST)

    # -- the steps --------------------------------------------------------------------------

    async def _after_off(self, x: str, had: str | bool) -> AccountState:
        if not had:
            raise UserNotFoundError(x)
        if had == "ACTIVE":
            await self.index_users([x])
        return AccountState(had)

    @staticmethod
    def _check_lifted(x: str, reply: list[Any], lifting: AccountState) -> None:
        if reply[0] == "off":
            if not reply[1]:
                raise UserNotFoundError(x)
            state = AccountState(reply[1])
            raise AccountInactiveError(x, state.value, lifting.value)

    async def _reindex(self, x: str) -> None:
        if await self.redis.exists(self.keys.search_built()):
            await self.index_users([x])

    async def _flip_off(self, x: str, state: AccountState, reason: str, job: str) -> AccountState | None:
        """The account goes off (marked as a job in batches first); the state it had, None when unknown."""
        k = self.keys
        await self.redis.hset(k.lifecycle_jobs(), x, job)
        call = logged(k, x, (FLIP_OFF_SCRIPT, own_keys(k, x), [x, state.value, reason]))
        [had] = await run_scripts(self.redis, [call])
        if not had or (had != "ACTIVE" and state is not AccountState.DELETING):
            # Off already (or unknown): a deactivation has nothing left to do.
            await self._end(x)
        if not had:
            return None
        if had == "ACTIVE":
            await self.index_users([x])
        return AccountState(had)

    async def job_progress(self, user_id: str) -> JobProgress | None:
        """The change in batches under way for `user_id`, None when there is none."""
        jobs = self.keys.lifecycle_jobs()
        fields = [user_id, f"{user_id}:done", f"{user_id}:total"]
        job, done, total = cast("list[str | None]", await self.redis.hmget(jobs, fields))
        if job is None:
            return None
        return JobProgress(job.partition(":")[0], int(done or 0), int(total or 0))

    def watch_jobs(self, watcher: JobWatcher) -> None:
        """Tell `watcher` how many users each change in batches of this process has left to visit,
        after each step (0 when it ends)."""
        self._watcher = watcher

    def _tell(self, x: str, left: int) -> None:
        watcher: JobWatcher | None = getattr(self, "_watcher", None)
        if watcher is not None:
            watcher(x, left)

    async def _start(self, x: str, names: Sequence[str]) -> None:
        """Count what a change in batches will visit, for job_progress."""
        k = self.keys
        async with self.redis.pipeline(transaction=False) as pipe:
            for name in names:
                if name in _SETS:
                    pipe.zcard(k.of_list(name, x))
                else:
                    pipe.scard(getattr(k, name)(x))
            sizes: list[int] = await pipe.execute()
        await self.redis.hset(k.lifecycle_jobs(), mapping={f"{x}:done": 0, f"{x}:total": sum(sizes)})
        self._tell(x, sum(sizes))

    async def _advance(self, x: str, n: int, started: float) -> None:
        """Count `n` more users visited, then rest so that the job works DUTY of its time."""
        jobs = self.keys.lifecycle_jobs()
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(jobs, f"{x}:done", n)
            pipe.hget(jobs, f"{x}:total")
            done, total = await pipe.execute()
        self._tell(x, max(0, int(total or 0) - int(done)))
        worked = time.monotonic() - started
        await asyncio.sleep(worked * (1 - DUTY) / DUTY)

    async def _end(self, x: str) -> None:
        await self.redis.hdel(self.keys.lifecycle_jobs(), x, f"{x}:done", f"{x}:total")
        self._tell(x, 0)

    async def _detach_all(self, x: str) -> None:
        k = self.keys
        await self._start(x, _FOLLOWS + _REQUESTS)
        for name in _FOLLOWS + _REQUESTS:
            async for batch in self._scan(k.of_list(name, x), sorted_set=True):
                started = time.monotonic()
                await self.redis.sadd(k.kept_with(x), *batch)
                await run_scripts(self.redis, self._per_slot(DETACH_SCRIPT, batch, [x]))
                await self._advance(x, len(batch), started)
        await self.redis.delete(k.requests_in(x), k.requests_out(x))
        await self._end(x)

    async def _attach_all(self, x: str, lifting: AccountState) -> None:
        k = self.keys
        state = await self.account_state(x)
        if state is None:
            raise UserNotFoundError(x)
        if state is AccountState.ACTIVE:
            await self._end(x)
            return
        if state is not lifting:
            raise AccountInactiveError(x, state.value, lifting.value)
        await self.redis.hset(k.lifecycle_jobs(), x, f"reactivate:{lifting.value}")
        await self._start(x, ["kept_with"])
        dropped: list[str] = []
        kept: list[str] = []
        async for batch in self._scan(k.kept_with(x), sorted_set=False):
            started = time.monotonic()
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zmscore(k.following(x), batch)
                pipe.zmscore(k.fans(x), batch)
                out_times, in_times = await pipe.execute()
            times = {m: (_arg(o), _arg(i)) for m, o, i in zip(batch, out_times, in_times, strict=True)}
            groups = self._slot_batches(batch)
            calls: list[ScriptCall] = []
            for group in groups:
                args = [x, *(t for m in group for t in times[m])]
                calls.append((ATTACH_SCRIPT, [key for m in group for key in user_keys(k, m)], args))
            for group, answers in zip(groups, await run_scripts(self.redis, calls), strict=True):
                for m, back in zip(group, answers, strict=True):
                    if back == 0:
                        dropped.append(m)
                    elif back == 2:
                        kept.append(m)
            await self._advance(x, len(batch), started)
        args = [x, lifting.value, str(len(dropped)), *dropped, *kept]
        [reply] = await run_scripts(self.redis, [logged(k, x, (FLIP_ON_SCRIPT, own_keys(k, x), args))])
        await self._end(x)
        self._check_lifted(x, reply, lifting)
        await self._reindex(x)

    async def _purge_all(self, x: str) -> None:
        k = self.keys
        names = (*_SETS, "kept_by", "kept_with")
        await self._start(x, names)
        for name in names:
            key = k.of_list(name, x) if name in _SETS else getattr(k, name)(x)
            async for batch in self._scan(key, sorted_set=name in _SETS):
                started = time.monotonic()
                await run_scripts(self.redis, self._per_slot(PURGE_SCRIPT, batch, [x]))
                await self._advance(x, len(batch), started)
        await run_scripts(self.redis, [logged(k, x, (ERASE_SCRIPT, own_keys(k, x), [x]))])
        await self._end(x)

    # -- reading the account's sets -----------------------------------------------------------

    async def _members(self, x: str, names: Sequence[str]) -> list[str]:
        """Every user the account's sets `names` name, without repeats."""
        found = await self._set_members(x, names)
        return list(dict.fromkeys(m for members in found for m in members))

    async def _set_members(self, x: str, names: Sequence[str]) -> list[list[str]]:
        k = self.keys
        async with self.redis.pipeline(transaction=False) as pipe:
            for name in names:
                if name in ("kept_by", "kept_with"):
                    pipe.smembers(getattr(k, name)(x))
                else:
                    pipe.zrange(k.of_list(name, x), 0, -1)
            replies: list[Any] = await pipe.execute()
        return [sorted(r) if isinstance(r, set) else list(r) for r in replies]

    async def _scan(self, key: str, *, sorted_set: bool) -> AsyncIterator[list[str]]:
        """The members of a set, BATCH at a time (SCAN's guarantee: each member there all along
        comes at least once, also while the set changes)."""
        batch: list[str] = []
        if sorted_set:
            async for member, _ in self.redis.zscan_iter(key, count=BATCH):
                batch.append(member)
                if len(batch) >= BATCH:
                    yield batch
                    batch = []
        else:
            async for member in self.redis.sscan_iter(key, count=BATCH):
                batch.append(member)
                if len(batch) >= BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def _slot_batches(self, users: Sequence[str]) -> list[list[str]]:
        """`users` by cluster slot (all together on a single Redis)."""
        if not self.cluster:
            return [list(users)]
        groups: dict[int, list[str]] = {}
        for user_id in users:
            groups.setdefault(self.keys.slot(user_id), []).append(user_id)
        return list(groups.values())

    def _per_slot(self, script: Any, users: Sequence[str], args: list[str]) -> list[ScriptCall]:
        k = self.keys
        return [
            (script, [key for m in group for key in user_keys(k, m)], args)
            for group in self._slot_batches(users)
        ]


def _arg(score: float | None) -> str:
    return "" if score is None else str(int(score))
