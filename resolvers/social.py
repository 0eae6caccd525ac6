"""Reads of the social controls that only the user themself sees: pending requests, suggestions."""

from __future__ import annotations

from followgraph.resolvers.context import Context
from followgraph.resolvers.paging import check_page_size
from followgraph.store.graph.suggestions import MAX_SUGGESTIONS, SAMPLE_FOLLOWING, Suggestion

DEFAULT_SUGGESTIONS = 10
# A suggestion's followedBy: a suggestion comes by at most the SAMPLE_FOLLOWING users sampled.
DEFAULT_FOLLOWED_BY = 3
MAX_FOLLOWED_BY = SAMPLE_FOLLOWING


async def pending_count(context: Context, user_id: str) -> int | None:
    """Pending follow requests to `user_id`; None unless the viewer is `user_id`."""
    if context.viewer_id != user_id:
        return None
    return await context.store.pending_count(user_id)


async def suggestions_for(context: Context, user_id: str, *, first: int | None) -> list[Suggestion] | None:
    """People `user_id` may know, best first; None unless the viewer is `user_id`."""
    if context.viewer_id != user_id:
        return None
    return await context.store.suggestions(user_id, first=_size(first, DEFAULT_SUGGESTIONS, MAX_SUGGESTIONS))


def followed_by_size(first: int | None) -> int:
    """How many of the users a suggestion came by to show."""
    return _size(first, DEFAULT_FOLLOWED_BY, MAX_FOLLOWED_BY)


def _size(first: int | None, default: int, most: int) -> int:
    """`first`, checked against `most`, or `default`."""
    size = default if first is None else first
    check_page_size("first", size, most)
    return size
