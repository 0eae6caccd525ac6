"""Verify and repair: make the derived sets agree with the sets that are the source of truth.

Each user's `following` set is the source of truth of follows, `blocking` of blocks and
`requests_out` of follow requests; `fans`, `mutual`, `blocked_by` and `requests_in` are derived.
A block leaves no follow or request between the two users, a follow no request, and an account
that is not locked no pending request (unlocking accepts them). An account that is off
(store/graph/lifecycle.py) is in no active user's follows or requests, and its own sets keep what
it had: they are not checked against the others'. On a single Redis a change updates
both users atomically; on Redis Cluster it is two single-slot steps, and a crash between them
leaves the second user's side behind. `verify` finds every disagreement by
scanning (reads only, streaming, a batch of users at a time); `repair` rewrites the derived
entries from their sources.

Repair races with live writes (a follow or unfollow landing between the check and the fix), so it
is meant for quiet moments; running it twice converges.
"""

from __future__ import annotations

import enum
import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from followgraph.store.graph.bulk import set_entries
from followgraph.store.graph.errors import UserNotFoundError
from followgraph.store.graph.model import is_set
from followgraph.store.graph.store import FollowStore
from followgraph.store.redis.lua import AnyPipeline, run_pipeline

BATCH = 500


class Problem(enum.Enum):
    FAN_MISSING = "fan entry missing"
    FAN_TIME_WRONG = "fan entry with another time"
    FAN_STALE = "fan entry without its follow"
    MUTUAL_MISSING = "mutual entry missing"
    MUTUAL_TIME_WRONG = "mutual entry with another time"
    MUTUAL_STALE = "mutual entry without both follows"
    FOLLOW_ACROSS_BLOCK = "follow or request between users who block each other"
    BLOCKED_BY_MISSING = "blocked-by entry missing"
    BLOCKED_BY_STALE = "blocked-by entry without its block"
    REQUEST_IN_MISSING = "pending request missing on the requested side"
    REQUEST_IN_STALE = "pending request without its requester's"
    REQUEST_OF_A_FOLLOW = "pending request of a follow that exists"
    REQUEST_TO_UNLOCKED = "pending request to an account that is not locked"
    OFF_ACCOUNT_LISTED = "follow or request of an account that is off, in an active user's set"


@dataclass
class Report:
    users: int = 0  # users who follow someone (those with a following set)
    follows: int = 0
    problems: Counter[Problem] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    repaired: int = 0
    # The accounts that are off, found at the start of the scan.
    off: set[str] = field(default_factory=set)

    @property
    def clean(self) -> bool:
        return not self.problems

    def found(self, problem: Problem, example: str) -> None:
        self.problems[problem] += 1
        if len(self.examples) < 20:
            self.examples.append(f"{problem.value}: {example}")


Progress = Callable[[int], None]


async def verify(store: FollowStore, *, fix: bool = False, progress: Progress | None = None) -> Report:
    """Scan the graph; with `fix`, rewrite every fans or mutual entry that disagrees."""
    report = Report()
    off: set[str] = set()
    async for key in store.redis.scan_iter(match=store.keys.pattern("account"), count=BATCH):
        off.add(store.keys.user_of(key))
    report.off = off
    # Blocks first: what they end is then checked as ended by the scans after them.
    await _scan(store, "blocking", report, fix, None, _check_blocking)
    await _scan(store, "requests_out", report, fix, None, _check_requests)
    await _scan(store, "following", report, fix, progress, _check_following)
    await _scan(store, "fans", report, fix, progress, _stale("fans", "following", Problem.FAN_STALE))
    await _scan(store, "mutual", report, fix, progress, _check_mutual)
    stale_blocked_by = _stale("blocked_by", "blocking", Problem.BLOCKED_BY_STALE)
    await _scan(store, "blocked_by", report, fix, None, stale_blocked_by)
    stale_requests_in = _stale("requests_in", "requests_out", Problem.REQUEST_IN_STALE)
    await _scan(store, "requests_in", report, fix, None, stale_requests_in)
    return report


Check = Callable[[FollowStore, list[tuple[str, str, int]], Report, bool], Any]


async def _scan(
    store: FollowStore, suffix: str, report: Report, fix: bool, progress: Progress | None, check: Check
) -> None:
    keys: list[str] = []
    async for key in store.redis.scan_iter(match=store.keys.pattern(suffix), count=BATCH):
        keys.append(key)
        if len(keys) >= BATCH:
            await _batch(store, keys, report, fix, check, suffix)
            keys = []
            if progress:
                progress(report.users)
    if keys:
        await _batch(store, keys, report, fix, check, suffix)
    if progress:
        progress(report.users)


async def _batch(
    store: FollowStore, keys: list[str], report: Report, fix: bool, check: Check, suffix: str
) -> None:
    if suffix == "following":
        report.users += len(keys)
    async for entries in set_entries(store, keys):
        if suffix == "following":
            report.follows += len(entries)
        if report.off:
            entries = await _leave_off_accounts(store, suffix, entries, report, fix)
        await check(store, entries, report, fix)


_OFF_LISTED = ("following", "fans", "mutual", "requests_in", "requests_out")


async def _leave_off_accounts(
    store: FollowStore, suffix: str, entries: list[tuple[str, str, int]], report: Report, fix: bool
) -> list[tuple[str, str, int]]:
    """The entries to check further: not those of an off account's own sets (what it keeps), nor
    the blocks and mutes naming one; a follow or request of an off account in an active user's set
    is a problem of its own."""
    off = report.off
    kept: list[tuple[str, str, int]] = []
    fixes: list[tuple[str, str, str, int | None]] = []
    for owner, member, at in entries:
        if owner in off:
            continue
        if member in off:
            if suffix in _OFF_LISTED:
                report.found(Problem.OFF_ACCOUNT_LISTED, f"{member} in {suffix} of {owner}")
                fixes.append(("zrem", store.keys.of_list(suffix, owner), member, None))
            continue
        kept.append((owner, member, at))
    if fix:
        await _apply(store, fixes, report)
    return kept


async def _scores(store: FollowStore, lookups: list[tuple[str, str]]) -> list[int | None]:
    """ZSCORE of each (key, member), in one round trip."""

    def fill(pipe: AnyPipeline) -> None:
        for key, member in lookups:
            pipe.zscore(key, member)

    if not lookups:
        return []
    return [None if s is None else int(s) for s in await run_pipeline(store.redis, fill)]


async def _apply(store: FollowStore, fixes: list[tuple[str, str, str, int | None]], report: Report) -> None:
    """(command, key, member, score) fixes: ZADD with the score, or ZREM."""

    def fill(pipe: AnyPipeline) -> None:
        for command, key, member, score in fixes:
            if command == "zadd":
                pipe.zadd(key, {member: score or 0})
            else:
                pipe.zrem(key, member)

    if fixes:
        await run_pipeline(store.redis, fill)
        report.repaired += len(fixes)


async def _check_following(
    store: FollowStore, edges: list[tuple[str, str, int]], report: Report, fix: bool
) -> None:
    """Every follow A->B at t: fans:B has A at t; mutual:A has B iff B follows A, at the later time."""
    k = store.keys
    fans = await _scores(store, [(k.fans(b), a) for a, b, _ in edges])
    back = await _scores(store, [(k.following(b), a) for a, b, _ in edges])
    mutual = await _scores(store, [(k.mutual(a), b) for a, b, _ in edges])
    fixes: list[tuple[str, str, str, int | None]] = []
    for (a, b, at), fan_at, back_at, mutual_at in zip(edges, fans, back, mutual, strict=True):
        if fan_at is None:
            report.found(Problem.FAN_MISSING, f"{a} follows {b}")
            fixes.append(("zadd", k.fans(b), a, at))
        elif fan_at != at:
            report.found(Problem.FAN_TIME_WRONG, f"{a} follows {b}")
            fixes.append(("zadd", k.fans(b), a, at))
        if back_at is not None:
            expected = max(at, back_at)
            if mutual_at is None:
                report.found(Problem.MUTUAL_MISSING, f"{a} and {b}")
                fixes.append(("zadd", k.mutual(a), b, expected))
            elif mutual_at != expected:
                report.found(Problem.MUTUAL_TIME_WRONG, f"{a} and {b}")
                fixes.append(("zadd", k.mutual(a), b, expected))
    if fix:
        await _apply(store, fixes, report)


async def _check_mutual(
    store: FollowStore, entries: list[tuple[str, str, int]], report: Report, fix: bool
) -> None:
    """Every mutual entry B of A is justified by both follows."""
    k = store.keys
    out = await _scores(store, [(k.following(a), b) for a, b, _ in entries])
    back = await _scores(store, [(k.following(b), a) for a, b, _ in entries])
    fixes: list[tuple[str, str, str, int | None]] = []
    for (a, b, _), out_at, back_at in zip(entries, out, back, strict=True):
        if out_at is None or back_at is None:
            report.found(Problem.MUTUAL_STALE, f"{b} listed as mutual of {a}")
            fixes.append(("zrem", k.mutual(a), b, None))
    if fix:
        await _apply(store, fixes, report)


async def _check_blocking(
    store: FollowStore, entries: list[tuple[str, str, int]], report: Report, fix: bool
) -> None:
    """Every block A->B at t: blocked_by:B has A at t; no follow or request either way."""
    k = store.keys
    mirrored = await _scores(store, [(k.blocked_by(b), a) for a, b, _ in entries])
    lookups = [lookup for a, b, _ in entries for lookup in _both_ways(store, a, b)]
    found = await _scores(store, lookups)
    fixes: list[tuple[str, str, str, int | None]] = []
    for (a, b, at), mirror_at in zip(entries, mirrored, strict=True):
        if mirror_at != at:
            report.found(Problem.BLOCKED_BY_MISSING, f"{a} blocks {b}")
            fixes.append(("zadd", k.blocked_by(b), a, at))
    for (key, member), score in zip(lookups, found, strict=True):
        if score is not None:
            report.found(Problem.FOLLOW_ACROSS_BLOCK, f"{member} in {key}")
            fixes.append(("zrem", key, member, None))
    if fix:
        await _apply(store, fixes, report)


def _both_ways(store: FollowStore, a: str, b: str) -> list[tuple[str, str]]:
    """The follows and requests between a and b, as (source-of-truth key, member)."""
    k = store.keys
    return [(k.following(a), b), (k.following(b), a), (k.requests_out(a), b), (k.requests_out(b), a)]


async def _check_requests(
    store: FollowStore, entries: list[tuple[str, str, int]], report: Report, fix: bool
) -> None:
    """Every request A->B at t: requests_in:B has A at t, A does not follow B already, and B is
    locked (unlocking accepts every pending request: a request to an unlocked account is one whose
    acceptance was cut short, or that came in while B unlocked)."""
    k = store.keys
    mirrored = await _scores(store, [(k.requests_in(b), a) for a, b, _ in entries])
    follows = await _scores(store, [(k.following(a), b) for a, b, _ in entries])
    locked = await _locked(store, [b for _, b, _ in entries])
    fixes: list[tuple[str, str, str, int | None]] = []
    to_accept: list[tuple[str, str, int, int | None]] = []
    for (a, b, at), mirror_at, follow_at in zip(entries, mirrored, follows, strict=True):
        if follow_at is not None:
            report.found(Problem.REQUEST_OF_A_FOLLOW, f"{a} asked to follow {b}")
            fixes += [("zrem", k.requests_out(a), b, None), ("zrem", k.requests_in(b), a, None)]
        elif not locked[b]:
            report.found(Problem.REQUEST_TO_UNLOCKED, f"{a} asked to follow {b}")
            to_accept.append((a, b, at, mirror_at))
        elif mirror_at != at:
            report.found(Problem.REQUEST_IN_MISSING, f"{a} asked to follow {b}")
            fixes.append(("zadd", k.requests_in(b), a, at))
    if fix:
        await _apply(store, fixes, report)
        await _accept(store, to_accept, report)


async def _locked(store: FollowStore, user_ids: list[str]) -> dict[str, bool]:
    """Whether each user is locked, in one round trip."""
    ids = list(dict.fromkeys(user_ids))

    def fill(pipe: AnyPipeline) -> None:
        for user_id in ids:
            pipe.hget(store.keys.profile(user_id), "locked")

    flags = await run_pipeline(store.redis, fill) if ids else []
    return {user_id: is_set(flag) for user_id, flag in zip(ids, flags, strict=True)}


async def _accept(
    store: FollowStore, requests: list[tuple[str, str, int, int | None]], report: Report
) -> None:
    """Accept each (requester, owner, time, time in the owner's requests_in or None): the owner's
    side may have accepted already (A among the owner's fans), and then the follow keeps that time;
    a request whose owner's side was lost is first restored there, so that the acceptance finds it."""
    k = store.keys
    lost = [(a, b, at) for a, b, at, mirror_at in requests if mirror_at is None]
    fans = await _scores(store, [(k.fans(b), a) for a, b, _ in lost])
    restore: list[tuple[str, str, str, int | None]] = [
        ("zadd", k.requests_in(b), a, at)
        for (a, b, at), fan_at in zip(lost, fans, strict=True)
        if fan_at is None
    ]
    await _apply(store, restore, report)
    for a, b, _, _ in requests:
        try:
            await store.accept_request(user=b, requester=a)
        except UserNotFoundError:
            continue
        report.repaired += 1


def _stale(derived: str, source: str, problem: Problem) -> Check:
    """The check that every entry A of `derived`:B is justified by B in `source`:A."""
    return functools.partial(_check_stale, derived=derived, source=source, problem=problem)


async def _check_stale(
    store: FollowStore,
    entries: list[tuple[str, str, int]],
    report: Report,
    fix: bool,
    derived: str,
    source: str,
    problem: Problem,
) -> None:
    """Drop every entry A of `derived`:B that `source`:A does not hold B for."""
    k = store.keys
    justified = await _scores(store, [(k.of_list(source, a), b) for b, a, _ in entries])
    fixes: list[tuple[str, str, str, int | None]] = [
        ("zrem", k.of_list(derived, b), a, None)
        for (b, a, _), at in zip(entries, justified, strict=True)
        if at is None
    ]
    for _, key, member, _ in fixes:
        report.found(problem, f"{member} in {key}")
    if fix:
        await _apply(store, fixes, report)
