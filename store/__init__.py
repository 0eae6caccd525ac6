"""The follow graph on Redis: key names, Lua scripts, reads and writes. Knows nothing of GraphQL."""

from store.errors import (
    CannotFollowSelfError,
    InvalidCursorError,
    InvalidInputError,
    InvalidPageError,
    StoreError,
    UserNotFoundError,
)
from store.graph import DEFAULT_PAGE_SIZE, FollowStore, ListQuery
from store.ids import validate_user_id
from store.keys import Keys
from store.model import (
    Counts,
    Entry,
    FollowResult,
    ListKind,
    Page,
    Profile,
    Relation,
    Relationship,
    UserFacts,
)

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "CannotFollowSelfError",
    "Counts",
    "Entry",
    "FollowResult",
    "FollowStore",
    "InvalidCursorError",
    "InvalidInputError",
    "InvalidPageError",
    "Keys",
    "ListKind",
    "ListQuery",
    "Page",
    "Profile",
    "Relation",
    "Relationship",
    "StoreError",
    "UserFacts",
    "UserNotFoundError",
    "validate_user_id",
]
