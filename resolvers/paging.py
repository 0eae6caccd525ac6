"""The page-size rule of every connection: its default, its maximum and its message, in one place.

The maximum is the request's (QueryLimits.max_page_size reaches resolvers through the context);
MAX_PAGE_SIZE is its default.
"""

from __future__ import annotations

from followgraph.resolvers.errors import ApiError, bad_user_input
from followgraph.store import DEFAULT_PAGE_SIZE
from followgraph.store.graph.paging import page_size_message

MAX_PAGE_SIZE = 100

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "check_page_size", "page_size_error"]


def page_size_error(name: str, value: int, maximum: int) -> ApiError | None:
    """The error for `first`/`last` = `value`, None when it is allowed."""
    if 0 <= value <= maximum:
        return None
    return bad_user_input(page_size_message(name, value, maximum), argument=name)


def check_page_size(name: str, value: int | None, maximum: int) -> None:
    if value is not None and (error := page_size_error(name, value, maximum)) is not None:
        raise error
