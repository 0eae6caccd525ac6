"""The follow graph on Redis: key names, Lua scripts, reads and writes. Knows nothing of GraphQL."""

from followgraph.store.graph.columns import UserColumns
from followgraph.store.graph.errors import (
    AccountInactiveError,
    BlockedError,
    CannotFollowSelfError,
    InvalidCursorError,
    InvalidInputError,
    InvalidPageError,
    RateLimitedError,
    StoreError,
    UserNotFoundError,
)
from followgraph.store.graph.ids import validate_user_id
from followgraph.store.graph.keys import Keys
from followgraph.store.graph.lifecycle import AccountState
from followgraph.store.graph.model import (
    Controls,
    Counts,
    Entry,
    FollowResult,
    ListKind,
    Page,
    Parts,
    Profile,
    Relation,
    Relationship,
    UserFacts,
    UserSettings,
)
from followgraph.store.graph.ratelimit import FollowLimit
from followgraph.store.graph.reads import DEFAULT_PAGE_SIZE, ListQuery
from followgraph.store.graph.store import FollowStore

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "AccountInactiveError",
    "AccountState",
    "BlockedError",
    "CannotFollowSelfError",
    "Controls",
    "Counts",
    "Entry",
    "FollowLimit",
    "FollowResult",
    "FollowStore",
    "InvalidCursorError",
    "InvalidInputError",
    "InvalidPageError",
    "Keys",
    "ListKind",
    "ListQuery",
    "Page",
    "Parts",
    "Profile",
    "RateLimitedError",
    "Relation",
    "Relationship",
    "StoreError",
    "UserColumns",
    "UserFacts",
    "UserNotFoundError",
    "UserSettings",
    "validate_user_id",
]
