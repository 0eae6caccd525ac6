"""Bringing one user's lists from Mastodon's CSV files (store/graph/portability.py writes them):
the following list, blocks and mutes, merged into what the user has or overwriting it.

A row's address is a user id here; `name@domain` is an account of another service and is
reported, as is an unknown, blocked or malformed one, with its line. Follows are made as `follow`
makes them (a locked account gets a request), in batches of one round trip each on one Redis; an
import is not counted against the daily follow limit, which stops follow sprees, not moves:
instead a file holds at most MAX_ROWS accounts. `overwrite` then ends the follows (blocks, mutes)
that the file does not name.
"""

from __future__ import annotations

import asyncio
import csv
import enum
import io
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from followgraph.store.graph.bulk import (
    Control,
    ControlKind,
    ControlStatus,
    control_many,
    load_control_scripts,
)
from followgraph.store.graph.errors import (
    BlockedError,
    CannotFollowSelfError,
    RateLimitedError,
    StoreError,
    UserNotFoundError,
)
from followgraph.store.graph.ids import is_valid_user_id
from followgraph.store.graph.portability import ExportedList, members
from followgraph.store.graph.store import FollowStore

MAX_ROWS = 10_000
BATCH = 500
# Errors a report lists (the counts count them all).
MAX_REPORTED = 100


class Mode(enum.Enum):
    MERGE = "merge"
    OVERWRITE = "overwrite"


IMPORTABLE = (ExportedList.FOLLOWING, ExportedList.BLOCKS, ExportedList.MUTES)


class ImportFileError(ValueError):
    """The file as a whole cannot be imported (too many rows, not CSV)."""


@dataclass(frozen=True, slots=True)
class RowProblem:
    line: int
    address: str
    reason: str


@dataclass
class ImportReport:
    """What an import did: rows applied (changes and rows already so), rows refused and why, and
    entries an overwrite removed."""

    rows: int = 0
    applied: int = 0
    removed: int = 0
    failed: int = 0
    problems: list[RowProblem] = field(default_factory=list)

    def refuse(self, problem: RowProblem) -> None:
        self.failed += 1
        if len(self.problems) < MAX_REPORTED:
            self.problems.append(problem)


def addresses(text: str) -> tuple[list[tuple[int, str]], list[RowProblem]]:
    """The user ids a Mastodon CSV names (its first column; a header row `Account address...`
    skipped), each with its line, and the rows that name none. ImportFileError past MAX_ROWS."""
    found: list[tuple[int, str]] = []
    problems: list[RowProblem] = []
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise ImportFileError(f"The file is not CSV: {exc}.") from None
    for line, row in enumerate(rows, start=1):
        address = row[0].strip() if row else ""
        if not address or (line == 1 and address.lower() == "account address"):
            continue
        if "@" in address.lstrip("@"):
            problems.append(RowProblem(line, address, "an account of another service"))
        elif not is_valid_user_id(address.lstrip("@")):
            problems.append(RowProblem(line, address, "not a user id"))
        else:
            found.append((line, address.lstrip("@")))
    if len(found) + len(problems) > MAX_ROWS:
        raise ImportFileError(
            f"The file names {len(found) + len(problems):,} accounts; at most {MAX_ROWS:,} a file."
        )
    return found, problems


Progress = Callable[[ImportReport], Awaitable[None]]


async def import_list(
    store: FollowStore,
    user_id: str,
    which: ExportedList,
    text: str,
    mode: Mode,
    progress: Progress | None = None,
) -> ImportReport:
    """Apply the accounts of `text` to `user_id`'s list `which` (following, blocks or mutes)."""
    if which not in IMPORTABLE:
        raise ImportFileError(f"{which.value} cannot be imported: a user's fans are their own to choose.")
    rows, problems = addresses(text)
    report = ImportReport(rows=len(rows) + len(problems))
    for problem in problems:
        report.refuse(problem)
    if which is not ExportedList.FOLLOWING:
        await load_control_scripts(store)
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        if which is ExportedList.FOLLOWING:
            await _follow(store, user_id, batch, report)
        else:
            await _control(store, user_id, which, batch, report)
        if progress is not None:
            await progress(report)
    if mode is Mode.OVERWRITE:
        named = {address for _, address in rows}
        report.removed = await _remove_others(store, user_id, which, named)
    return report


async def _follow(
    store: FollowStore, user_id: str, rows: list[tuple[int, str]], report: ImportReport
) -> None:
    results = await store.follow_many(follower=user_id, followees=[address for _, address in rows])
    for (line, address), result in zip(rows, results, strict=True):
        if isinstance(result, StoreError):
            report.refuse(RowProblem(line, address, _reason(result, address)))
        else:
            report.applied += 1


def _reason(error: StoreError, address: str) -> str:
    """Why a row could not be applied, in the words every list's report uses."""
    match error:
        case UserNotFoundError() if error.user_id == address:
            return "no such user"
        case CannotFollowSelfError():
            return "the user themself"
        case BlockedError():
            return "one of the two blocks the other"
        case RateLimitedError():
            return "the follow rate limit"
    return str(error)


_STATUS_REASONS = {
    ControlStatus.ACTOR_UNKNOWN: "the importing user is not registered",
    ControlStatus.TARGET_UNKNOWN: "no such user",
}


async def _control(
    store: FollowStore, user_id: str, which: ExportedList, rows: list[tuple[int, str]], report: ImportReport
) -> None:
    kind = ControlKind.BLOCK if which is ExportedList.BLOCKS else ControlKind.MUTE
    valid = [(line, address) for line, address in rows if address != user_id]
    for line, address in rows:
        if address == user_id:
            report.refuse(RowProblem(line, address, "the user themself"))
    controls = [Control(kind, user_id, address) for _, address in valid]
    statuses = await control_many(store, controls, int(time.time() * 1000))
    for (line, address), status in zip(valid, statuses, strict=True):
        if status in (ControlStatus.ADDED, ControlStatus.EXISTED):
            report.applied += 1
        else:
            report.refuse(RowProblem(line, address, _STATUS_REASONS.get(status, status.name.lower())))


async def _remove_others(store: FollowStore, user_id: str, which: ExportedList, named: set[str]) -> int:
    """End the entries of `user_id`'s list `which` that `named` does not hold; how many."""
    gone = [
        account
        async for accounts in members(store, user_id, which)
        for account in accounts
        if account not in named
    ]
    for start in range(0, len(gone), BATCH):
        await asyncio.gather(
            *(_remove(store, user_id, which, other) for other in gone[start : start + BATCH])
        )
    return len(gone)


async def _remove(store: FollowStore, user_id: str, which: ExportedList, other: str) -> None:
    if which is ExportedList.FOLLOWING:
        await store.unfollow(follower=user_id, followee=other)
    elif which is ExportedList.BLOCKS:
        await store.unblock(blocker=user_id, blocked=other)
    else:
        await store.mute(muter=user_id, muted=other, on=False)
