"""searchUsers: the query's checks, its cursor, and the page of users it finds.

A cursor is the offset of the next result in the query's ranking, opaque to clients; paging on
with it assumes the ranking did not move meanwhile (a follow may move a user by a place, as on any
search page). The users of a page are checked against their current names, so a rename the index
has not taken in yet never shows a user who no longer matches.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from followgraph.resolvers import users
from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import bad_user_input
from followgraph.resolvers.paging import check_page_size
from followgraph.store import Parts, UserFacts
from followgraph.store.graph.search import MAX_QUERY_LENGTH, MAX_QUERY_WORDS, MAX_RESULTS, Query

DEFAULT_RESULTS = 10
_CURSOR_PREFIX = "search:"


@dataclass(frozen=True, slots=True)
class Results:
    """A page of search results: each user's facts and cursor, and whether more follow."""

    users: list[UserFacts]
    cursors: list[str]
    offset: int
    has_next: bool


def cursor(offset: int) -> str:
    """The opaque cursor of the result at `offset` (paging on after it starts at offset + 1)."""
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{offset}".encode()).decode()


def offset_after(after: str | None) -> int:
    """Where the page after `after` starts; BAD_USER_INPUT for a cursor not from searchUsers."""
    if after is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(after.encode("ascii")).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        text = ""
    number = text.removeprefix(_CURSOR_PREFIX)
    if not text.startswith(_CURSOR_PREFIX) or not number.isdigit() or len(number) > 6:
        raise bad_user_input("after is not a cursor of searchUsers.", argument="after")
    return int(number) + 1


def checked_query(text: str) -> Query:
    """The query, or BAD_USER_INPUT when it is too long or has too many words."""
    if len(text) > MAX_QUERY_LENGTH:
        raise bad_user_input(
            f"query has {len(text)} characters; at most {MAX_QUERY_LENGTH} are allowed.", argument="query"
        )
    query = Query.of(text)
    if len(query.words) > MAX_QUERY_WORDS:
        raise bad_user_input(
            f"query has {len(query.words)} words; at most {MAX_QUERY_WORDS} are allowed.", argument="query"
        )
    return query


async def search_users(
    context: Context, text: str, parts: Parts, *, first: int | None, after: str | None
) -> Results:
    """The page of users matching `text`, with `parts` of each loaded (their profiles always)."""
    query = checked_query(text)
    size = DEFAULT_RESULTS if first is None else first
    check_page_size("first", size, MAX_RESULTS)
    start = offset_after(after)
    found = await context.store.search_users(context.viewer_id, query, first=size, offset=start)
    loaded = await users.registered(context, found.user_ids, parts)
    kept: list[UserFacts] = []
    cursors: list[str] = []
    for offset, facts in enumerate(loaded, start):
        if facts is not None and query.matches(facts.user_id, _name(facts)):
            kept.append(facts)
            cursors.append(cursor(offset))
    return Results(kept, cursors, start, found.has_next)


def _name(facts: UserFacts) -> str | None:
    return None if facts.profile is None else facts.profile.name
