"""Page arguments and the newest-first keyset window, shared by every list the store pages.

The sorted-set pages compute the window inside Redis (scripts.PAGE); lists the store builds in
memory (intersections) use `window` here. Both follow the same rules, so one cursor behaves the
same everywhere: order is (time, member) descending, a cursor is the position of an entry, and
paging from it neither repeats nor skips an entry that stayed in the list.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from itertools import repeat
from typing import NamedTuple

from followgraph.store.graph.cursor import Cursor, cursor_of
from followgraph.store.graph.errors import InvalidPageError
from followgraph.store.graph.model import Page

# The most entries one call returns, and so the highest page-size limit the API may be configured
# with (its own default is lower: resolvers.paging.MAX_PAGE_SIZE).
MAX_LIMIT = 1000


def page_size_message(name: str, value: int, maximum: int) -> str:
    """What is said of a `first`/`last` = `value` outside 0..`maximum`, at every layer."""
    return f"`{name}` must be between 0 and {maximum}, got {value}."


class Direction(enum.Enum):
    FORWARD = "first"
    BACKWARD = "last"


class PageRequest(NamedTuple):
    """Validated page arguments: `limit` entries after `cursor` (forward) or before it (backward).
    A named tuple, as store.graph.ListQuery is, for what it costs to make."""

    direction: Direction
    limit: int
    cursor: Cursor | None

    @classmethod
    def parse(
        cls,
        list_id: str,
        *,
        first: int | None,
        after: str | None,
        last: int | None,
        before: str | None,
        default: int,
    ) -> PageRequest:
        if first is not None and last is not None:
            raise InvalidPageError("Pass either first or last, not both.")
        if after is not None and before is not None:
            raise InvalidPageError("Pass either after (with first) or before (with last), not both.")
        if last is not None or before is not None:
            if after is not None:
                raise InvalidPageError("`after` pages forward and goes with `first`, not `last`.")
            if first is not None:
                raise InvalidPageError("`before` pages backward and goes with `last`, not `first`.")
            return cls(Direction.BACKWARD, _limit("last", last, default), _cursor(before, list_id))
        return cls(Direction.FORWARD, _limit("first", first, default), _cursor(after, list_id))


def _limit(name: str, value: int | None, default: int) -> int:
    if value is None:
        return default
    if value < 0 or value > MAX_LIMIT:
        raise InvalidPageError(page_size_message(name, value, MAX_LIMIT))
    return value


def _cursor(token: str | None, list_id: str) -> Cursor | None:
    return None if token is None else Cursor.decode(token, list_id)


def window(entries: Sequence[tuple[int, str]], request: PageRequest) -> tuple[int, int]:
    """The [start, stop) slice of `entries` (sorted newest first) that `request` selects."""
    total = len(entries)
    before, present = 0, False
    if request.cursor is not None:
        key = (request.cursor.at, request.cursor.member)
        for at, member in entries:
            if (at, member) > key:
                before += 1
            else:
                present = (at, member) == key
                break
    if request.direction is Direction.FORWARD:
        start = before + 1 if present else before
        return start, min(start + request.limit, total)
    stop = before if request.cursor is not None else total
    return max(stop - request.limit, 0), stop


def build_page(
    list_id: str, members: list[str], times: list[int], *, total: int, start: int, stop: int
) -> Page:
    """A Page from the members and times of ranks [start, stop) of a list of `total` entries."""
    if len(members) != len(times):
        raise ValueError(f"{len(members)} members but {len(times)} times")
    # Mapped rather than a comprehension: the cursors are made without a Python loop.
    cursors = list(map(cursor_of, repeat(list_id), times, members))
    return Page(members, times, cursors, total, has_next=stop < total, has_previous=start > 0)
