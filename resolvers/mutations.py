"""What the mutations do. Expected failures come back as UserError data, never as GraphQL errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import forbidden, unauthenticated
from followgraph.store import (
    BlockedError,
    CannotFollowSelfError,
    FollowResult,
    FollowStore,
    InvalidInputError,
    Profile,
    Relationship,
    StoreError,
    UserNotFoundError,
    UserSettings,
    controls,
)
from followgraph.store.ids import is_valid_user_id


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
    return Failure("INVALID_INPUT", str(exc), ["input", input_field])


# A write between the viewer and another user: (store, viewer, other) -> its result.
Action = Callable[[FollowStore, str, str], Awaitable[FollowResult]]


async def _act(context: Context, user_id: str, action: Action) -> FollowOutcome:
    viewer_id = require_viewer(context)
    try:
        result = await action(context.store, viewer_id, user_id)
    except StoreError as exc:
        failure = _failure(exc, viewer_id=viewer_id, input_field="userId")
        return FollowOutcome(viewer_id, None, failures=[failure])
    finally:
        context.loaders.clear_all()
    return FollowOutcome(viewer_id, user_id, result.changed, result.relationship, pending=result.pending)


def _mutation(action: Action) -> Callable[[Context, str], Awaitable[FollowOutcome]]:
    """The mutation that runs `action` between the viewer and `user_id`."""

    async def mutation(context: Context, user_id: str) -> FollowOutcome:
        return await _act(context, user_id, action)

    return mutation


async def follow(context: Context, user_id: str) -> FollowOutcome:
    viewer_id = require_viewer(context)
    if context.follow_limiter is not None and user_id != viewer_id and is_valid_user_id(user_id):
        limited = await context.follow_limiter.hit(viewer_id)
        if limited is not None:
            retry = datetime.fromtimestamp(limited.retry_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            message = f"Too many follows: the limit is {limited.limit}. Try again after {retry}."
            return FollowOutcome(viewer_id, None, failures=[Failure("RATE_LIMITED", message)])
    return await _act(context, user_id, lambda store, me, other: store.follow(follower=me, followee=other))


unfollow = _mutation(lambda store, me, other: store.unfollow(follower=me, followee=other))
remove_fan = _mutation(lambda store, me, other: store.remove_fan(user=me, fan=other))
block = _mutation(lambda store, me, other: controls.block(store, blocker=me, blocked=other))
unblock = _mutation(lambda store, me, other: controls.unblock(store, blocker=me, blocked=other))
mute = _mutation(lambda store, me, other: controls.mute(store, muter=me, muted=other, on=True))
unmute = _mutation(lambda store, me, other: controls.mute(store, muter=me, muted=other, on=False))
accept_follow_request = _mutation(
    lambda store, me, other: controls.accept_request(store, user=me, requester=other)
)
reject_follow_request = _mutation(
    lambda store, me, other: controls.reject_request(store, user=me, requester=other)
)


async def update_settings(
    context: Context, *, locked: bool | None, hide_following: bool | None, hide_fans: bool | None
) -> tuple[str, UserSettings | None, list[Failure]]:
    """Change the viewer's settings; unlocking accepts every pending request (in batches: the
    event loop serves other requests between them)."""
    viewer_id = require_viewer(context)
    try:
        settings, _ = await controls.update_settings(
            context.store, viewer_id, locked=locked, hide_following=hide_following, hide_fans=hide_fans
        )
        # The acceptance runs to its end even when this request times out or the client leaves.
        # Also when the account was unlocked already: what a restart cut short is accepted by
        # asking again (a batch cut between its two steps, by `followgraph repair`).
        if locked is False:
            await controls.accept_all(context.store, viewer_id)
    except UserNotFoundError:
        message = f"Your own user {viewer_id!r} is not registered yet."
        return viewer_id, None, [Failure("USER_NOT_FOUND", message)]
    finally:
        context.loaders.clear_all()
    return viewer_id, settings, []


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
    finally:
        context.loaders.clear_all()
    return UpsertOutcome(profile)
