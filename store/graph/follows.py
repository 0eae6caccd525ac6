"""The store's writes of users and follows: register and update users, follow, unfollow, remove a fan,
mark the fans seen; each an idempotent script, or two single-slot steps on a cluster."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from followgraph.store.graph import control_scripts as cs
from followgraph.store.graph import scripts
from followgraph.store.graph.errors import (
    AccountInactiveError,
    InvalidInputError,
    RateLimitedError,
    StoreError,
    UserNotFoundError,
)
from followgraph.store.graph.events import logged
from followgraph.store.graph.ids import validate_user_id
from followgraph.store.graph.keys import Keys
from followgraph.store.graph.model import (
    MAX_TIME,
    FollowResult,
    Parts,
    Profile,
    Relationship,
    UserFacts,
)
from followgraph.store.graph.profiles import validate_avatar_url, validate_name
from followgraph.store.graph.ratelimit import FollowLimit, limit_args
from followgraph.store.graph.reads import ReadOps, pair_status
from followgraph.store.redis.lua import (
    ScriptCall,
    run_scripts,
)


@dataclass(frozen=True, slots=True)
class Edge:
    """A follow to apply: `at` (epoch ms) keeps an imported follow's time, None means now."""

    follower: str
    followee: str
    at: int | None = None


def _follow_call(k: Keys, edge: Edge, limit: list[str]) -> ScriptCall:
    a, b = edge.follower, edge.followee
    keys = [
        k.profile(a), k.profile(b),
        k.following(a), k.fans(a), k.mutual(a),
        k.fans(b), k.following(b), k.mutual(b),
        k.blocking(a), k.blocked_by(a), k.requests_out(a), k.requests_in(b),
        k.follow_limit(a),
    ]  # fmt: skip
    return logged(k, a, (scripts.FOLLOW_SCRIPT, keys, [a, b, _at(edge), *limit]))


def _follow_out_call(k: Keys, edge: Edge, locked: bool, limit: list[str]) -> ScriptCall:
    a, b = edge.follower, edge.followee
    keys = [k.profile(a), k.following(a), k.fans(a), k.mutual(a), k.blocking(a), k.blocked_by(a)]
    keys += [k.requests_out(a), k.follow_limit(a)]
    args = [b, _at(edge), "1" if locked else "0", *limit]
    return logged(k, a, (scripts.FOLLOW_OUT_SCRIPT, keys, args))


def _follow_in_call(k: Keys, edge: Edge, at: str, pending: bool) -> ScriptCall:
    a, b = edge.follower, edge.followee
    keys = [k.fans(b), k.following(b), k.mutual(b), k.requests_in(b), k.blocking(b), k.blocked_by(b)]
    keys.append(k.profile(b))
    return scripts.FOLLOW_IN_SCRIPT, keys, [a, at, "1" if pending else "0"]


def _request_granted_call(k: Keys, edge: Edge, at: str) -> ScriptCall:
    """A's request to B becomes the follow B's step wrote (B unlocked between the steps), logged as
    an acceptance, as the acceptance of B's other pending requests is."""
    a, b = edge.follower, edge.followee
    keys = [k.requests_out(a), k.following(a), k.fans(a), k.mutual(a)]
    return logged(k, a, (cs.ACCEPT_IN_SCRIPT, keys, [b, at]))


def unfollow_out_call(k: Keys, a: str, b: str, removed_by_b: bool = False) -> ScriptCall:
    """A's step of an unfollow of B (or of a withdrawal of A's request), logged."""
    keys = [k.profile(a), k.following(a), k.mutual(a), k.fans(a), k.requests_out(a)]
    return logged(k, a, (scripts.UNFOLLOW_OUT_SCRIPT, keys, [b, "1" if removed_by_b else "0"]))


def _unfollow_call(k: Keys, a: str, b: str, removed_by_b: bool) -> ScriptCall:
    """Both steps of an unfollow in one script, on a single Redis."""
    keys = [k.profile(a), k.profile(b), k.following(a), k.mutual(a), k.fans(a)]
    keys += [k.fans(b), k.mutual(b), k.requests_out(a), k.requests_in(b), k.account(a), k.account(b)]
    return logged(k, a, (scripts.UNFOLLOW_SCRIPT, keys, [a, b, "1" if removed_by_b else "0"]))


def _at(edge: Edge) -> str:
    return "" if edge.at is None else str(edge.at)


def upsert_args(name: str | None, avatar_url: str | None, created_at: int | None) -> list[str]:
    """The UPSERT_USER script's arguments for fields that are already valid."""
    args = ["" if created_at is None else str(created_at)]
    if name is not None:
        args += ["name", name]
    if avatar_url is not None:
        args += ["avatarUrl", avatar_url]
    return args


class FollowOps(ReadOps):
    """Users and follows: the writes of the graph itself."""

    async def upsert_user(
        self,
        user_id: str,
        *,
        name: str | None = None,
        avatar_url: str | None = None,
        created_at: int | None = None,
    ) -> tuple[Profile, bool]:
        """Register `user_id` or update the fields given; returns the profile and whether it is new."""
        validate_user_id(user_id)
        name = None if name is None else validate_name(name)
        avatar_url = None if avatar_url is None else validate_avatar_url(avatar_url)
        if created_at is not None and not 0 <= created_at <= MAX_TIME:
            raise InvalidInputError(
                "createdAt must be an epoch time in ms from 1970 to 9999.", field="createdAt"
            )
        args = upsert_args(name, avatar_url, created_at)
        keys = [self.keys.profile(user_id), self.keys.account(user_id)]
        call = logged(self.keys, user_id, (scripts.UPSERT_USER_SCRIPT, keys, args))
        [(created, stored_name, stored_avatar, stored_created)] = await run_scripts(self.redis, [call])
        if created == -1:
            state = await self.redis.hget(self.keys.account(user_id), "state")
            raise AccountInactiveError(user_id, str(state or "DELETING"))
        profile = Profile(user_id, stored_name or None, stored_avatar or None, int(stored_created))
        return profile, bool(created)

    async def follow(
        self, *, follower: str, followee: str, at: int | None = None, limit: FollowLimit | None = None
    ) -> FollowResult:
        """`follower` follows `followee`; idempotent. `at` (epoch ms) keeps an imported follow's time.
        A follow of a locked account becomes a request (`pending`) unless `at` is given (an
        import); BlockedError when either blocks the other; RateLimitedError when the follower is
        over `limit` (checked and counted in the follow's own script). One round trip on a single
        Redis."""
        self.check_pair(follower, followee)
        if at is not None and not 0 <= at <= MAX_TIME:
            raise InvalidInputError(
                "A follow time must be an epoch time in ms from 1970 to 9999.", field="at"
            )
        [reply] = await self.follow_edges([Edge(follower, followee, at)], limit=limit)
        return _follow_result(reply, follower, followee, limit)

    async def follow_many(
        self, *, follower: str, followees: Sequence[str], limit: FollowLimit | None = None
    ) -> list[FollowResult | StoreError]:
        """follow() of each of `followees` by `follower`, in order: each one's result, or the
        StoreError it ended in (a bad or own id, an unknown user, a block, the rate limit, which
        each follow counts against). In follow_edges' round trips, whatever the number."""
        results: list[FollowResult | StoreError | None] = []
        edges: list[tuple[int, Edge]] = []
        for followee in followees:
            try:
                self.check_pair(follower, followee)
            except StoreError as exc:
                results.append(exc)
                continue
            edges.append((len(results), Edge(follower, followee)))
            results.append(None)
        replies = await self.follow_edges([edge for _, edge in edges], limit=limit) if edges else []
        for (i, edge), reply in zip(edges, replies, strict=True):
            try:
                results[i] = _follow_result(reply, follower, edge.followee, limit)
            except StoreError as exc:
                results[i] = exc
        return [result for result in results if result is not None]

    async def follow_reading(
        self, *, follower: str, followee: str, limit: FollowLimit | None, parts: Parts
    ) -> tuple[FollowResult | StoreError, list[UserFacts]]:
        """follow(), and then the `parts` of the followee and of the follower (as the follower
        sees them), read after the write whether or not it succeeded: one round trip on a single
        Redis (a pipeline runs in order). A StoreError before any I/O (a bad id) is raised."""
        self.check_pair(follower, followee)
        return await self._reading(
            lambda: self.follow(follower=follower, followee=followee, limit=limit),
            lambda: _follow_call(self.keys, Edge(follower, followee), limit_args(limit)),
            lambda reply: _follow_result(reply, follower, followee, limit),
            follower,
            followee,
            parts,
        )

    async def follow_edges(
        self, edges: Sequence[Edge], *, limit: FollowLimit | None = None
    ) -> list[list[Any]]:
        """Apply valid, non-self `edges`; each reply is [status, changed, follow (or request) time,
        time of the follow back or None, pending], status -1/-2 for an unknown follower/followee,
        -3 when one blocks the other, -4 when the follower is over `limit` (time: when to retry);
        pending 1 when the follow became a request.

        One round trip on a single Redis (one atomic script per edge). On a cluster three: whether
        the users exist (and whether the followees are locked), then the followers' steps, then the
        followees' steps (and a fourth when a block or an unlock came between the steps). A follow
        that failed between its steps is completed by its retry, since both steps always run.
        """
        k = self.keys
        limited = limit_args(limit)
        if not self.cluster:
            return await run_scripts(self.redis, [_follow_call(k, e, limited) for e in edges])
        found = await self._profiles_of([u for e in edges for u in (e.follower, e.followee)])
        statuses = [pair_status(found[e.follower], found[e.followee]) for e in edges]
        known = [e for e, status in zip(edges, statuses, strict=True) if status == 0]
        calls = [_follow_out_call(k, e, e.at is None and _locked(found[e.followee]), limited) for e in known]
        out = iter(await run_scripts(self.redis, calls))
        unknown: list[Any] = [0, None, None, 0]
        replies: list[list[Any]] = [next(out) if status == 0 else [status, *unknown] for status in statuses]
        # FOLLOW_OUT's own checks fail only if the follower vanished or a block came in between.
        done = [(e, r) for e, r in zip(edges, replies, strict=True) if r[0] == 0]
        seconds = await run_scripts(self.redis, [_follow_in_call(k, e, r[2], bool(r[4])) for e, r in done])
        # A block either way that ran between the steps: undo the first. A request to a followee
        # unlocked between the steps: the followee's step wrote the follow; the follower's makes it.
        refused = [(e, r) for (e, r), second in zip(done, seconds, strict=True) if second == 0]
        granted = [(e, r) for (e, r), second in zip(done, seconds, strict=True) if second == 2]
        undo = [unfollow_out_call(k, e.follower, e.followee) for e, _ in refused]
        await run_scripts(self.redis, undo + [_request_granted_call(k, e, r[2]) for e, r in granted])
        for _, reply in refused:
            reply[:] = [-3, 0, None, None, 0]
        for _, reply in granted:
            reply[4] = 0
        return replies

    async def unfollow(
        self, *, follower: str, followee: str, removed_by_followee: bool = False
    ) -> FollowResult:
        """`follower` stops following `followee`, or withdraws a pending request; idempotent. The
        relationship is follower's view. `removed_by_followee`: the followee removed a fan (the
        event says REMOVE_FAN)."""
        self.check_pair(follower, followee, self_message="A user cannot unfollow themselves.")
        k, a, b = self.keys, follower, followee
        if self.cluster:
            [status] = await self.pair_statuses([(a, b)])
            changed, back = 0, None
            if status == 0:
                call = unfollow_out_call(k, a, b, removed_by_followee)
                [(status, changed, back)] = await run_scripts(self.redis, [call])
            if status == 0:
                keys = [k.fans(b), k.mutual(b), k.requests_in(b)]
                await scripts.UNFOLLOW_IN_SCRIPT.run(self.redis, keys, [a])
            elif status == -1 and removed_by_followee and (await self.registered([b]))[0]:
                # The fan's account is off: its sets keep the follow.
                keys = [k.account(a), k.following(a), k.mutual(a), k.log(a)]
                args: list[str | int] = [b, b, "1", a, k.log_cap]
                await scripts.UNFOLLOW_KEPT_SCRIPT.run(self.redis, keys, args)
            elif status == -2 and not removed_by_followee:  # the followee's account is off
                keys = [k.account(b), k.fans(b), k.mutual(b), k.log(b)]
                args = [a, b, "0", a, k.log_cap]
                await scripts.UNFOLLOW_KEPT_SCRIPT.run(self.redis, keys, args)
        else:
            call = _unfollow_call(k, a, b, removed_by_followee)
            [(status, changed, back)] = await run_scripts(self.redis, [call])
        return _unfollow_result([status, changed, back], follower, followee)

    async def unfollow_reading(
        self, *, follower: str, followee: str, parts: Parts
    ) -> tuple[FollowResult | StoreError, list[UserFacts]]:
        """unfollow(), then the `parts` of both users as follow_reading reads them: one round trip
        on a single Redis."""
        self.check_pair(follower, followee, self_message="A user cannot unfollow themselves.")
        return await self._reading(
            lambda: self.unfollow(follower=follower, followee=followee),
            lambda: _unfollow_call(self.keys, follower, followee, False),
            lambda reply: _unfollow_result(reply, follower, followee),
            follower,
            followee,
            parts,
        )

    async def _reading(
        self,
        write: Callable[[], Awaitable[FollowResult]],
        call: Callable[[], ScriptCall],
        result_of: Callable[[list[Any]], FollowResult],
        follower: str,
        followee: str,
        parts: Parts,
    ) -> tuple[FollowResult | StoreError, list[UserFacts]]:
        """A write's result (or the StoreError it ended in) and then the two users' facts: on a
        single Redis the write's script `call` and the reads in one pipeline (`result_of` reads
        its reply); on a cluster, or with nothing to read, `write` and then a read of its own."""
        result: FollowResult | StoreError
        if self.cluster or not parts.any:
            try:
                result = await write()
            except StoreError as exc:
                result = exc
            if not parts.any:
                return result, [UserFacts(followee), UserFacts(follower)]
            return result, await self.facts(follower, [followee, follower], parts)
        calls, parse = self._facts_calls(follower, [followee, follower], parts)
        replies = await run_scripts(self.redis, [call(), *calls])
        try:
            result = result_of(replies[0])
        except StoreError as exc:
            result = exc
        return result, parse(replies[1:]).facts()

    async def remove_fan(self, *, user: str, fan: str) -> FollowResult:
        """Make `fan` stop following `user`. The relationship is `user`'s view of `fan` afterwards."""
        self.check_pair(user, fan, self_message="A user cannot be their own fan.")
        result = await self.unfollow(follower=fan, followee=user, removed_by_followee=True)
        # unfollow answered from the fan's side: whether `user` still follows the fan.
        user_follows_fan = result.relationship is Relationship.FOLLOWED_BY
        return FollowResult(
            result.changed, Relationship.of(viewer_follows=user_follows_fan, follows_viewer=False)
        )

    async def mark_fans_seen(self, user_id: str) -> int:
        """Set the mark newFansCount counts from; returns it (epoch ms). The user must be registered."""
        validate_user_id(user_id)
        keys = [self.keys.fans_seen(user_id), self.keys.profile(user_id)]
        seen = int(await scripts.MARK_FANS_SEEN_SCRIPT.run(self.redis, keys))
        if seen < 0:
            raise UserNotFoundError(user_id)
        return seen


def _follow_result(reply: list[Any], follower: str, followee: str, limit: FollowLimit | None) -> FollowResult:
    status, changed, when, back, pending = reply
    if status == -4 and limit is not None:
        raise RateLimitedError(limit.text, int(when))
    ReadOps.check_status(status, follower, followee)
    return FollowResult(
        bool(changed),
        Relationship.of(viewer_follows=not pending, follows_viewer=back is not None),
        pending=bool(pending),
    )


def _unfollow_result(reply: list[Any], follower: str, followee: str) -> FollowResult:
    status, changed, back = reply
    ReadOps.check_status(status, follower, followee)
    return FollowResult(bool(changed), Relationship.of(viewer_follows=False, follows_viewer=back is not None))


def _locked(profile: Profile | None) -> bool:
    return profile is not None and profile.settings.locked
