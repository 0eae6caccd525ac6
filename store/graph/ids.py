"""User ids: what the application may use as a user id, checked before any key is built."""

from __future__ import annotations

import re
from collections.abc import Iterable

from followgraph.store.graph.errors import InvalidInputError

MAX_USER_ID_LENGTH = 64
_USER_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def validate_user_id(user_id: str, *, field: str = "userId") -> str:
    """Return `user_id` unchanged, or raise InvalidInputError saying what is wrong with it."""
    if not is_valid_user_id(user_id):
        shown = repr(user_id) if len(str(user_id)) <= 80 else repr(str(user_id)[:80]) + "..."
        raise InvalidInputError(
            f"Invalid user id {shown}: use 1 to {MAX_USER_ID_LENGTH} characters of A-Z, a-z, 0-9, _ and -.",
            field=field,
        )
    return user_id


def is_valid_user_id(user_id: str) -> bool:
    return isinstance(user_id, str) and _USER_ID.fullmatch(user_id) is not None


# Ids joined by newlines, checked by one regex call: a page's 20 ids in one call rather than 20.
_USER_IDS = re.compile(r"[A-Za-z0-9_-]{1,64}(?:\n[A-Za-z0-9_-]{1,64})*")


def validate_user_ids(user_ids: Iterable[str], *, field: str = "userIds") -> list[str]:
    ids = list(user_ids)
    try:
        joined = "\n".join(ids)
    except TypeError:  # not all strings: said by validate_user_id
        pass
    else:
        # A newline inside an id would pass as two ids: the count of separators tells.
        if not ids or (_USER_IDS.fullmatch(joined) and joined.count("\n") == len(ids) - 1):
            return ids
    return [validate_user_id(user_id, field=field) for user_id in ids]
