"""What the mutations do. Expected failures come back as UserError data, never as GraphQL errors."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import forbidden, unauthenticated
from followgraph.store import (
    AccountInactiveError,
    AccountState,
    BlockedError,
    CannotFollowSelfError,
    FollowResult,
    FollowStore,
    InvalidInputError,
    Parts,
    Profile,
    RateLimitedError,
    Relationship,
    StoreError,
    UserFacts,
    UserNotFoundError,
    UserSettings,
)

log = logging.getLogger(__name__)
# Unlocking waits for the acceptance of the pending requests for this share of what is left of the
# request's time at most, then answers while the acceptance runs on: a long backlog (100,000
# requests take seconds, on a cluster more than the default 10 s timeout) makes no timeout error
# of an unlock that happened.
UNLOCK_WAIT_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Failure:
    """A user-facing failure: code is a UserErrorCode name; field the input path at fault."""

    code: str
    message: str
    field: list[str] | None = None


@dataclass(frozen=True, slots=True)
class FollowOutcome:
    viewer_id: str
    other_id: str | None
    changed: bool = False
    relationship: Relationship | None = None
    failures: list[Failure] = field(default_factory=list)
    pending: bool = False


@dataclass(frozen=True, slots=True)
class UpsertOutcome:
    profile: Profile | None
    failures: list[Failure] = field(default_factory=list)


def require_viewer(context: Context) -> str:
    if context.viewer_id is None:
        raise unauthenticated()
    return context.viewer_id


def _failure(exc: StoreError, *, viewer_id: str, input_field: str) -> Failure:
    match exc:
        case UserNotFoundError() if exc.user_id == viewer_id:
            return Failure(exc.code, f"Your own user {viewer_id!r} is not registered yet.")
        case UserNotFoundError():
            return Failure(exc.code, str(exc), ["input", input_field])
        case InvalidInputError():
            return Failure(exc.code, str(exc), ["input", exc.field or input_field])
        case CannotFollowSelfError() | BlockedError():
            return Failure(exc.code, str(exc), ["input", input_field])
        case RateLimitedError():
            return Failure(exc.code, _rate_limited_message(exc))
    return Failure("INVALID_INPUT", str(exc), ["input", input_field])


async def _own_failure(context: Context, exc: StoreError, *, input_field: str) -> Failure:
    """The failure of a write refused with `exc`; when the viewer was not found, ACCOUNT_INACTIVE if
    the viewer's account is off (read only then: a write of an account that is on pays nothing)."""
    viewer_id = require_viewer(context)
    if isinstance(exc, UserNotFoundError) and exc.user_id == viewer_id:
        state = await context.store.account_state(viewer_id)
        if state is not None and state is not AccountState.ACTIVE:
            message = f"Your account is {state.value.lower()}: it can only be reactivated or deleted."
            if state is AccountState.SUSPENDED:
                message = "Your account is suspended: only an admin can lift the suspension."
            return Failure("ACCOUNT_INACTIVE", message)
    return _failure(exc, viewer_id=viewer_id, input_field=input_field)


# A write between the viewer and another user: (store, viewer, other) -> its result.
Action = Callable[[FollowStore, str, str], Awaitable[FollowResult]]


async def _act(context: Context, user_id: str, action: Action) -> FollowOutcome:
    viewer_id = require_viewer(context)
    try:
        result = await action(context.store, viewer_id, user_id)
    except StoreError as exc:
        failure = await _own_failure(context, exc, input_field="userId")
        return FollowOutcome(viewer_id, None, failures=[failure])
    finally:
        context.loaders.clear_all()
    return FollowOutcome(viewer_id, user_id, result.changed, result.relationship, pending=result.pending)


def _mutation(action: Action) -> Callable[[Context, str], Awaitable[FollowOutcome]]:
    """The mutation that runs `action` between the viewer and `user_id`."""

    async def mutation(context: Context, user_id: str) -> FollowOutcome:
        return await _act(context, user_id, action)

    return mutation


def _rate_limited_message(exc: RateLimitedError) -> str:
    retry = datetime.fromtimestamp(exc.retry_at / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{exc} Try again after {retry}."


# A write between the viewer and another user that reads both users' facts after it, in its round
# trip: (store, viewer, other, parts) -> its result (or the StoreError it ended in), the facts.
ReadingAction = Callable[
    [FollowStore, str, str, Parts], Awaitable[tuple[FollowResult | StoreError, list[UserFacts]]]
]


async def _act_reading(
    context: Context, user_id: str, parts: Parts, action: ReadingAction
) -> tuple[FollowOutcome, UserFacts | None, UserFacts]:
    """The outcome, and the `parts` of the other user (None on a failure) and of the viewer, read
    after the write in the same round trip where the store can."""
    viewer_id = require_viewer(context)
    try:
        result, (other, viewer) = await action(context.store, viewer_id, user_id, parts)
    except StoreError as exc:  # refused before any I/O: only the viewer is read
        result = exc
        [viewer] = await context.store.facts(viewer_id, [viewer_id], parts)
        other = None
    finally:
        context.loaders.clear_all()
    if isinstance(result, StoreError):
        failure = await _own_failure(context, result, input_field="userId")
        return FollowOutcome(viewer_id, None, failures=[failure]), None, viewer
    outcome = FollowOutcome(viewer_id, user_id, result.changed, result.relationship, pending=result.pending)
    return outcome, other, viewer


async def follow_reading(
    context: Context, user_id: str, parts: Parts
) -> tuple[FollowOutcome, UserFacts | None, UserFacts]:
    """The viewer follows `user_id`, with both users' `parts` as of after it (one round trip on a
    single Redis, the follow rate limit included: the follow's script checks and counts it)."""
    limit = context.follow_limit
    return await _act_reading(
        context,
        user_id,
        parts,
        lambda store, me, other, parts: store.follow_reading(
            follower=me, followee=other, limit=limit, parts=parts
        ),
    )


# followMany's ids per call.
MAX_FOLLOW_MANY = 100


@dataclass(frozen=True, slots=True)
class ManyOutcome:
    """followMany's outcome: one per id (none when the call as a whole failed), and the call's
    own failures."""

    viewer_id: str
    outcomes: list[FollowOutcome]
    failures: list[Failure] = field(default_factory=list)


async def follow_many(context: Context, user_ids: list[str]) -> ManyOutcome:
    """The viewer follows each of `user_ids`, in order; TOO_MANY past MAX_FOLLOW_MANY ids, and
    RATE_LIMITED for the call when the limit was reached before its first follow."""
    viewer_id = require_viewer(context)
    if len(user_ids) > MAX_FOLLOW_MANY:
        message = f"followMany takes at most {MAX_FOLLOW_MANY} ids; got {len(user_ids)}."
        return ManyOutcome(viewer_id, [], [Failure("TOO_MANY", message, ["input", "userIds"])])
    try:
        results = await context.store.follow_many(
            follower=viewer_id, followees=user_ids, limit=context.follow_limit
        )
    finally:
        context.loaders.clear_all()
    if results and isinstance(results[0], RateLimitedError):
        return ManyOutcome(viewer_id, [], [_failure(results[0], viewer_id=viewer_id, input_field="userIds")])
    outcomes = []
    for i, (user_id, result) in enumerate(zip(user_ids, results, strict=True)):
        if isinstance(result, StoreError):
            failure = await _own_failure(context, result, input_field="userIds")
            if failure.field is not None:
                failure = Failure(failure.code, failure.message, ["input", "userIds", str(i)])
            outcomes.append(FollowOutcome(viewer_id, None, failures=[failure]))
        else:
            outcomes.append(
                FollowOutcome(viewer_id, user_id, result.changed, result.relationship, pending=result.pending)
            )
    return ManyOutcome(viewer_id, outcomes)


async def unfollow_reading(
    context: Context, user_id: str, parts: Parts
) -> tuple[FollowOutcome, UserFacts | None, UserFacts]:
    """The viewer unfollows `user_id`, with both users' `parts` as of after it (one round trip on a
    single Redis)."""
    return await _act_reading(
        context,
        user_id,
        parts,
        lambda store, me, other, parts: store.unfollow_reading(follower=me, followee=other, parts=parts),
    )


remove_fan = _mutation(lambda store, me, other: store.remove_fan(user=me, fan=other))
block = _mutation(lambda store, me, other: store.block(blocker=me, blocked=other))
unblock = _mutation(lambda store, me, other: store.unblock(blocker=me, blocked=other))
mute = _mutation(lambda store, me, other: store.mute(muter=me, muted=other, on=True))
unmute = _mutation(lambda store, me, other: store.mute(muter=me, muted=other, on=False))
accept_follow_request = _mutation(lambda store, me, other: store.accept_request(user=me, requester=other))
reject_follow_request = _mutation(lambda store, me, other: store.reject_request(user=me, requester=other))


async def update_settings(
    context: Context, *, locked: bool | None, hide_following: bool | None, hide_fans: bool | None
) -> tuple[str, UserSettings | None, list[Failure]]:
    """Change the viewer's settings; unlocking accepts every pending request (in batches: the
    event loop serves other requests between them)."""
    viewer_id = require_viewer(context)
    try:
        settings, _ = await context.store.update_settings(
            viewer_id, locked=locked, hide_following=hide_following, hide_fans=hide_fans
        )
        # Also when the account was unlocked already: what a crash cut short is accepted by asking
        # again (a server's start also takes it up; a batch cut between its two steps, by
        # `followgraph repair`).
        if locked is False:
            await _accept_pending(context, viewer_id)
    except UserNotFoundError as exc:
        return viewer_id, None, [await _own_failure(context, exc, input_field="locked")]
    finally:
        context.loaders.clear_all()
    return viewer_id, settings, []


async def _accept_pending(context: Context, viewer_id: str) -> None:
    """Accept the viewer's pending requests, or as many as UNLOCK_WAIT_SHARE of the request's time
    allows. The acceptance runs to its end whatever happens to the request (FollowStore.accept_all)."""
    accepting = context.store.accept_all(viewer_id)
    if context.deadline is None:
        await accepting
        return
    loop = asyncio.get_running_loop()
    now = loop.time()
    try:
        async with asyncio.timeout_at(now + max(0.0, context.deadline - now) * UNLOCK_WAIT_SHARE):
            await accepting
    except TimeoutError:
        log.info(
            "Unlocked %s: answering after %.1f s while its pending requests are still being accepted.",
            viewer_id,
            loop.time() - now,
        )


async def mark_fans_seen(context: Context) -> tuple[str, int]:
    viewer_id = require_viewer(context)
    try:
        seen_at = await context.store.mark_fans_seen(viewer_id)
    except UserNotFoundError:
        raise forbidden(f"Your own user {viewer_id!r} is not registered yet.") from None
    finally:
        context.loaders.clear_all()
    return viewer_id, seen_at


async def upsert_user(
    context: Context, user_id: str, *, name: str | None, avatar_url: str | None
) -> UpsertOutcome:
    require_viewer(context)
    if not context.is_admin:
        raise forbidden("upsertUser needs a token with the 'admin' scope.")
    try:
        profile, _ = await context.store.upsert_user(user_id, name=name, avatar_url=avatar_url)
    except InvalidInputError as exc:
        return UpsertOutcome(None, [Failure(exc.code, str(exc), ["input", exc.field or "userId"])])
    except AccountInactiveError as exc:
        return UpsertOutcome(None, [Failure(exc.code, str(exc), ["input", "userId"])])
    finally:
        context.loaders.clear_all()
    return UpsertOutcome(profile)
