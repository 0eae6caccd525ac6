"""Pages of the follow lists behind every connection field."""

from __future__ import annotations

from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import bad_user_input
from followgraph.resolvers.paging import DEFAULT_PAGE_SIZE, check_page_size
from followgraph.resolvers.users import checked_user_id
from followgraph.store import InvalidCursorError, InvalidPageError, ListKind, Page


async def list_page(
    context: Context,
    kind: ListKind,
    user_id: str,
    *,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    batched: bool = True,
) -> Page:
    """One page of `user_id`'s following / fans / mutual list, batched with the request's others
    (or, when nothing runs beside it, read at once)."""
    check_page_size("first", first, context.max_page_size)
    check_page_size("last", last, context.max_page_size)
    try:
        query = context.store.list_query(kind, user_id, first=first, after=after, last=last, before=before)
    except InvalidCursorError as exc:
        raise bad_user_input(str(exc), argument="before" if before is not None else "after") from None
    except InvalidPageError as exc:
        raise bad_user_input(str(exc)) from None
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
            user_id, other, first=DEFAULT_PAGE_SIZE if first is None else first, after=after
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
