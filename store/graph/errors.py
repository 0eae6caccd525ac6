"""Typed errors of the follow-graph store. Each carries a stable code for the API layer to map."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every expected failure of the store."""

    code = "STORE_ERROR"


class InvalidInputError(StoreError):
    """An argument is malformed: a user id, a profile field, a timestamp."""

    code = "INVALID_INPUT"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UserNotFoundError(StoreError):
    code = "USER_NOT_FOUND"

    def __init__(self, user_id: str) -> None:
        super().__init__(f"User {user_id!r} is not registered.")
        self.user_id = user_id


class CannotFollowSelfError(StoreError):
    code = "CANNOT_FOLLOW_SELF"

    def __init__(self, message: str = "A user cannot follow themselves.") -> None:
        super().__init__(message)


class BlockedError(StoreError):
    """One of two users blocks the other: no follow or follow request between them."""

    code = "BLOCKED"

    def __init__(self, message: str = "One of you blocks the other.") -> None:
        super().__init__(message)


class RateLimitedError(StoreError):
    """The follower made as many follows as the follow rate limit allows in its window."""

    code = "RATE_LIMITED"

    def __init__(self, limit: str, retry_at: int) -> None:
        super().__init__(f"Too many follows: the limit is {limit}.")
        self.limit = limit
        self.retry_at = retry_at  # epoch ms


class InvalidCursorError(StoreError):
    """A page cursor that is malformed, tampered with, or taken from another list."""

    code = "INVALID_CURSOR"


class InvalidPageError(StoreError):
    """Page arguments that do not fit together (first with last, a negative size, ...)."""

    code = "INVALID_PAGE"


class AccountInactiveError(StoreError):
    """An account is off (deactivated, suspended, being deleted) where it must be on, or in
    another state than the one a call lifts."""

    code = "ACCOUNT_INACTIVE"

    def __init__(self, user_id: str, state: str, expected: str | None = None) -> None:
        message = f"The account {user_id!r} is {state.lower()}."
        if state == "SUSPENDED" and expected == "DEACTIVATED":
            message += " Only an admin lifts a suspension."
        elif expected == "SUSPENDED":
            message += " It is not suspended."
        super().__init__(message)
        self.user_id = user_id
        self.state = state
