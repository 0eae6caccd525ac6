"""One user's lists in the CSV files Mastodon exports and imports, so that people can take their
graph to another service and bring one here.

Mastodon's formats (its settings' "Import and export" page):

    following   header `Account address,Show boosts,Notify on new posts,Languages`, a row per
                followed account: `address,true,false,`
    blocks      no header, an address per line
    mutes       header `Account address,Hide notifications`: `address,true`
    followers   not a Mastodon export; the same shape as following's first column, headed
                `Account address`

An address here is the user id (this service has no domain of its own to add). Files are written
newest first, a page of the user's sorted set at a time, so a list of any size streams in constant
memory.
"""

from __future__ import annotations

import csv
import enum
import io
from collections.abc import AsyncIterator

from followgraph.store.graph.model import ListKind
from followgraph.store.graph.paging import MAX_LIMIT
from followgraph.store.graph.reads import ReadOps


class ExportedList(enum.Enum):
    FOLLOWING = "following"
    FOLLOWERS = "followers"
    BLOCKS = "blocks"
    MUTES = "mutes"

    @property
    def kind(self) -> ListKind:
        return _KINDS[self]

    @property
    def header(self) -> list[str] | None:
        return _HEADERS[self]

    def row(self, address: str) -> list[str]:
        """The CSV row of one account in this list."""
        if self is ExportedList.FOLLOWING:
            return [address, "true", "false", ""]
        if self is ExportedList.MUTES:
            return [address, "true"]
        return [address]

    @property
    def file_name(self) -> str:
        return f"{self.value}.csv"


_KINDS = {
    ExportedList.FOLLOWING: ListKind.FOLLOWING,
    ExportedList.FOLLOWERS: ListKind.FANS,
    ExportedList.BLOCKS: ListKind.BLOCKING,
    ExportedList.MUTES: ListKind.MUTING,
}
_HEADERS: dict[ExportedList, list[str] | None] = {
    ExportedList.FOLLOWING: ["Account address", "Show boosts", "Notify on new posts", "Languages"],
    ExportedList.FOLLOWERS: ["Account address"],
    ExportedList.BLOCKS: None,
    ExportedList.MUTES: ["Account address", "Hide notifications"],
}


async def exported_csv(
    store: ReadOps, user_id: str, which: ExportedList, *, batch: int = MAX_LIMIT
) -> AsyncIterator[str]:
    """`user_id`'s list `which` as CSV text, a chunk per page of `batch` accounts, newest first.
    Paged on the list's cursors, so an account that stays in the list while the file is written
    is in it once, whatever else changes meanwhile."""
    if which.header is not None:
        yield _lines([which.header])
    async for accounts in members(store, user_id, which, batch=batch):
        yield _lines([which.row(account) for account in accounts])


async def members(
    store: ReadOps, user_id: str, which: ExportedList, *, batch: int = MAX_LIMIT
) -> AsyncIterator[list[str]]:
    """The accounts of `user_id`'s list `which`, a page of `batch` at a time, newest first."""
    after: str | None = None
    while True:
        page = await store.page(which.kind, user_id, first=batch, after=after)
        if page.members:
            yield page.members
        if not page.has_next:
            return
        after = page.end_cursor


def _lines(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()
