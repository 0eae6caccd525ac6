"""Importing follows in batches (store/graph/imports.py) from a file or a SQL query: the counts, the
rejected rows with their lines, progress, and a checkpoint after every batch, written once the
batch is, that lets a run cut short go on where it stopped (cli/checkpoints.py).

While Redis writes one batch, the next is read and parsed, and on a single Redis sent before the
first one's answer is read (store/graph/import_line.py): the importer and Redis run side by side.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Iterable
from typing import Protocol

from followgraph.cli.edge_files import EdgeBatch, Mark
from followgraph.cli.transfer import OnError, Progress, RowError, Summary
from followgraph.store import FollowStore
from followgraph.store.graph.follows import Edge
from followgraph.store.graph.import_line import ImportLine
from followgraph.store.graph.imports import REFUSED, BatchResult, Outcome, load_import_scripts

# Follows a batch: one script call of some 20 ms of Redis on a single Redis.
EDGE_BATCH = 5000


class Marks(Protocol):
    """Where the checkpoint of an import is kept (cli/checkpoints.py)."""

    def counted(self, summary: Summary, mark: Mark) -> Awaitable[object]:
        """Keep `mark` and the counts of `summary` as they are when called; the write, to await."""
        ...


async def _batches(source: Iterable[EdgeBatch] | AsyncIterable[EdgeBatch]) -> AsyncIterator[EdgeBatch]:
    if isinstance(source, AsyncIterable):
        async for batch in source:
            yield batch
    else:
        for batch in source:
            yield batch


def _refusal(letter: str, follower: str, followee: str) -> str:
    if letter == Outcome.BLOCKED.value:
        return "one of the two users blocks the other"
    return f"user {follower if letter == Outcome.FOLLOWER_UNKNOWN.value else followee!r} is not registered"


def _count(summary: Summary, batch: EdgeBatch, result: BatchResult) -> None:
    summary.registered += result.registered
    outcomes = result.outcomes
    summary.written += outcomes.count(Outcome.ADDED.value)
    summary.unchanged += outcomes.count(Outcome.EXISTED.value)
    summary.requested += outcomes.count(Outcome.REQUESTED.value)
    if any(letter in REFUSED for letter in outcomes):
        for i, letter in enumerate(outcomes):
            if letter in REFUSED:
                a, b = batch.edges[3 * i], batch.edges[3 * i + 1]
                summary.reject(RowError(batch.lines[i], _refusal(letter, a, b)))


async def import_edge_batches(
    store: FollowStore,
    source: Iterable[EdgeBatch] | AsyncIterable[EdgeBatch],
    *,
    on_error: OnError = OnError.SKIP,
    register_missing: bool = True,
    progress: Progress | None = None,
    marks: Marks | None = None,
    summary: Summary | None = None,
) -> Summary:
    """Apply the follows of every batch; count them and the rejected rows into `summary` (a new
    one, or the counts a checkpoint kept). With `marks`, each whole batch written is kept there."""
    summary = summary or Summary()
    stop = on_error is OnError.STOP
    await load_import_scripts(store)
    # Each batch is sent tagged with itself and whether it is whole.
    line: ImportLine[tuple[EdgeBatch, bool]] = ImportLine(store, register=register_missing, stop=stop)
    # The last checkpoint's write: the next batch goes out without waiting for it, and each write
    # waits for the one before (a checkpoint never goes back).
    kept: asyncio.Future[object] | None = None

    async def answered() -> None:
        """The first batch sent: its answer counted, then its checkpoint."""
        nonlocal kept
        (batch, whole), result = await line.result()
        # Counted once answered: a checkpoint holds the counts of the rows before its mark.
        summary.rows += batch.rows
        for error in batch.errors:
            summary.reject(error)
        _count(summary, batch, result)
        if stop and result.outcomes and result.outcomes[-1] in REFUSED:
            # Stopped at a refused follow: the rows after it were not read, as far as counts go.
            summary.stopped_at = batch.lines[len(result.outcomes) - 1]
            summary.rows -= batch.rows - len(result.outcomes)
        elif whole and marks is not None and batch.mark is not None:
            if kept is not None:
                await kept
            kept = asyncio.ensure_future(marks.counted(summary, batch.mark))
        if progress:
            progress(summary.rows)

    try:
        async for batch in _batches(source):
            while not line.room():
                await answered()
            if summary.stopped_at is not None:
                break
            if stop and batch.errors:
                # The rows before the first bad one are written, and the import stops there; the
                # checkpoint stays where it was.
                while line.waiting:
                    await answered()
                if summary.stopped_at is not None:
                    break
                first = batch.errors[0]
                cut = bisect.bisect_left(batch.lines, first.line)
                batch.edges, batch.lines = batch.edges[: 3 * cut], batch.lines[:cut]
                batch.rows, batch.errors = cut, []
                await line.send(batch.edges, (batch, False))
                await answered()
                if summary.stopped_at is None:
                    summary.rows += 1
                    summary.reject(first)
                    summary.stopped_at = first.line
                    if progress:
                        progress(summary.rows)
                break
            await line.send(batch.edges, (batch, True))
        while line.waiting and summary.stopped_at is None:
            await answered()
    finally:
        await line.aclose()
    if kept is not None:
        await kept
    return summary.finish()


async def import_edges(
    store: FollowStore,
    rows: Iterable[tuple[int, Edge | RowError]],
    *,
    on_error: OnError = OnError.SKIP,
    register_missing: bool = True,
    progress: Progress | None = None,
) -> Summary:
    """Apply every valid edge of `rows`, a batch of EDGE_BATCH at a time; a re-run changes nothing."""

    def batches() -> Iterable[EdgeBatch]:
        batch = EdgeBatch()
        for number, row in rows:
            batch.rows += 1
            if isinstance(row, RowError):
                batch.errors.append(row)
                continue
            batch.edges += (row.follower, row.followee, "" if row.at is None else str(row.at))
            batch.lines.append(number)
            if len(batch.lines) >= EDGE_BATCH:
                yield batch
                batch = EdgeBatch()
        yield batch

    return await import_edge_batches(
        store, batches(), on_error=on_error, register_missing=register_missing, progress=progress
    )
