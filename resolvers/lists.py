"""Pages of the follow lists behind every connection field."""

from __future__ import annotations

from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import bad_user_input
from followgraph.resolvers.paging import DEFAULT_PAGE_SIZE, check_page_size
from followgraph.resolvers.users import checked_user_id
from followgraph.store import InvalidCursorError, InvalidPageError, ListKind, ListQuery, Page


def list_query(
    context: Context,
    kind: ListKind,
    user_id: str,
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> ListQuery:
    """The checked arguments of a page of one of `user_id`'s lists as the viewer may see it; a
    BAD_USER_INPUT error for a page size, cursor or combination the store refuses."""
    check_page_size("first", first, context.max_page_size)
    check_page_size("last", last, context.max_page_size)
    try:
        return context.store.list_query(
            kind,
            user_id,
            first=first,
            after=after,
            last=last,
            before=before,
            viewer=context.viewer_id,
            viewer_checked=True,
        )
    except InvalidCursorError as exc:
        raise bad_user_input(str(exc), argument="before" if before is not None else "after") from None
    except InvalidPageError as exc:
        raise bad_user_input(str(exc)) from None


async def list_page(context: Context, query: ListQuery, *, batched: bool = True) -> Page:
    """The page of `query` (list_query's), batched with the request's others (or, when nothing
    runs beside it, read at once)."""
    if not batched:
        return (await context.store.pages([query]))[0]
    return await context.loaders.page.load(query)


async def common_following(
    context: Context, user_id: str, other_id: str, *, first: int | None, after: str | None
) -> Page:
    check_page_size("first", first, context.max_page_size)
    other = checked_user_id(other_id)
    try:
        return await context.store.common_following(
            user_id,
            other,
            first=DEFAULT_PAGE_SIZE if first is None else first,
            after=after,
            viewer=context.viewer_id,
            viewer_checked=True,
        )
    except InvalidCursorError as exc:
        raise bad_user_input(str(exc), argument="after") from None


async def fans_you_follow(context: Context, user_id: str, *, first: int | None, after: str | None) -> Page:
    check_page_size("first", first, context.max_page_size)
    try:
        return await context.store.fans_you_follow(
            context.viewer_id, user_id, first=DEFAULT_PAGE_SIZE if first is None else first, after=after
        )
    except InvalidCursorError as exc:
        raise bad_user_input(str(exc), argument="after") from None
