"""What each event writes to which row: pure data, no database.

Every effect sets a row's whole state (never "if it was pending"), so that the final state is the
newest effect's, whatever order the events are applied in. The one exception is a USER event
without some profile field: the field keeps its old value, so a profile whose events arrive out of
order and name different fields can end with an older value of a field the newest event left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from followgraph.store.graph.events import Event, EventKind
from followgraph.store.sql.tables import FollowStatus, RequestStatus

Version = tuple[int, int]


class EventDataError(ValueError):
    """An event that cannot be applied: a relation without a target, a malformed field."""


@dataclass(frozen=True, slots=True)
class Write:
    """One row's new state at `version`: `table`'s row `key` gets `values` (None keeps a column)."""

    table: str
    key: tuple[str, ...]
    version: Version
    values: Mapping[str, Any]


def _follow(follower: str, followee: str, event: Event, status: FollowStatus) -> Write:
    followed_at = event.at if status is FollowStatus.FOLLOWING else None
    values = {"status": int(status), "changed_at": event.at, "followed_at": followed_at}
    return Write("follows", (follower, followee), event.version, values)


def _request(requester: str, owner: str, event: Event, status: RequestStatus) -> Write:
    values = {"status": status.value, "at": event.at}
    return Write("follow_requests", (requester, owner), event.version, values)


def _flag(table: str, actor: str, target: str, event: Event, active: bool) -> Write:
    return Write(table, (actor, target), event.version, {"active": active, "at": event.at})


def _relation_writes(event: Event, actor: str, target: str) -> Iterator[Write]:
    kind = event.kind
    if kind is EventKind.FOLLOW:
        yield _follow(actor, target, event, FollowStatus.FOLLOWING)
        yield _request(actor, target, event, RequestStatus.FOLLOWED)
    elif kind is EventKind.UNFOLLOW:
        yield _follow(actor, target, event, FollowStatus.UNFOLLOWED)
        yield _request(actor, target, event, RequestStatus.WITHDRAWN)
    elif kind is EventKind.REMOVE_FAN:
        yield _follow(target, actor, event, FollowStatus.UNFOLLOWED)
    elif kind is EventKind.FOLLOW_REQUEST:
        yield _request(actor, target, event, RequestStatus.PENDING)
    elif kind is EventKind.ACCEPT_FOLLOW_REQUEST:
        yield _follow(target, actor, event, FollowStatus.FOLLOWING)
        yield _request(target, actor, event, RequestStatus.ACCEPTED)
    elif kind is EventKind.REJECT_FOLLOW_REQUEST:
        yield _request(target, actor, event, RequestStatus.REJECTED)
    elif kind is EventKind.BLOCK:
        yield _flag("blocks", actor, target, event, True)
        for a, b in ((actor, target), (target, actor)):
            yield _follow(a, b, event, FollowStatus.UNFOLLOWED)
            yield _request(a, b, event, RequestStatus.BLOCKED)
    elif kind is EventKind.UNBLOCK:
        yield _flag("blocks", actor, target, event, False)
    elif kind is EventKind.MUTE:
        yield _flag("mutes", actor, target, event, True)
    elif kind is EventKind.UNMUTE:
        yield _flag("mutes", actor, target, event, False)


def _number(event: Event, field: str) -> int | None:
    value = event.data.get(field)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise EventDataError(f"event {event.id}: {field} {value!r} is not a whole number") from None


def _switch(event: Event, field: str) -> bool | None:
    value = event.data.get(field)
    if value is None:
        return None
    if value not in ("0", "1"):
        raise EventDataError(f"event {event.id}: {field} {value!r} is not '1' or '0'")
    return value == "1"


def _import_writes(event: Event) -> Iterator[Write]:
    """An import's batch: what a USER event of each new user and a FOLLOW event of each follow
    would write, all at the batch's version; a request row only where a follow ended one."""
    profile = {"name": None, "avatar_url": None, "created_at": event.at}
    for user in event.imported_users():
        yield Write("users.profile", (user,), event.version, profile)
    try:
        follows = event.imported_follows()
        ended = event.ended_requests()
    except ValueError:
        raise EventDataError(f"event {event.id}: a malformed follows or requests line") from None
    for follower, followee, at in follows:
        values = {"status": int(FollowStatus.FOLLOWING), "changed_at": at, "followed_at": at}
        yield Write("follows", (follower, followee), event.version, values)
    for follower, followee in ended:
        yield _request(follower, followee, event, RequestStatus.FOLLOWED)


def writes(event: Event) -> Iterator[Write]:
    """The row writes of one event, in no particular order."""
    if event.kind is EventKind.USER:
        values = {
            "name": event.data.get("name"),
            "avatar_url": event.data.get("avatarUrl"),
            "created_at": _number(event, "createdAt"),
        }
        yield Write("users.profile", (event.actor,), event.version, values)
    elif event.kind is EventKind.SETTINGS:
        values = {
            "locked": _switch(event, "locked"),
            "hide_following": _switch(event, "hideFollowing"),
            "hide_fans": _switch(event, "hideFans"),
        }
        yield Write("users.settings", (event.actor,), event.version, values)
    elif event.kind is EventKind.ACCOUNT:
        return  # a deletion is the batch's (store/sql/plan.py); the rest keeps the rows as they are
    elif event.kind is EventKind.IMPORT:
        yield from _import_writes(event)
    else:
        if event.target is None:
            raise EventDataError(f"event {event.id}: {event.kind.value} has no target")
        yield from _relation_writes(event, event.actor, event.target)
