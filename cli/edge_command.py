"""`followgraph import` of follows: from a file (or standard input) or from a SQL query, in batches,
with a checkpoint after each that a run cut short is taken up from (cli/checkpoints.py)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import IO, Any

import typer

from followgraph.cli.checkpoints import Checkpoints, Kept
from followgraph.cli.edge_files import EdgeBatch, Mark, NotUtf8Error, checksum, edge_batches, scan
from followgraph.cli.edge_import import EDGE_BATCH, import_edge_batches
from followgraph.cli.records import Format, HeaderError
from followgraph.cli.sql_source import SourceChangedError, SourceError, query_batches
from followgraph.cli.support import console, fail, progress_bar, redis_for, with_store
from followgraph.cli.transfer import OnError, Summary
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.sql.urls import hidden_url


@dataclass(frozen=True, slots=True)
class EdgeImport:
    """What to import and how: a file (`path`, - for standard input) or a query of a database."""

    path: str | None
    fmt: Format
    header: bool
    on_error: OnError
    register_missing: bool
    restart: bool
    from_sql: str | None = None
    query: str | None = None

    @property
    def name(self) -> str:
        if self.from_sql is not None:
            return f"the query on {hidden_url(self.from_sql)}"
        return "standard input" if self.path == "-" else str(self.path)

    @property
    def identity(self) -> str | None:
        """What names the checkpoint; None for standard input, which cannot be read twice."""
        if self.from_sql is not None:
            return f"edges\0sql\0{hidden_url(self.from_sql)}\0{self.query}"
        if self.path == "-" or self.path is None:
            return None
        return f"edges\0file\0{os.path.realpath(self.path)}"


def _when(ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


async def _start(job: EdgeImport, store: FollowStore, raw: IO[bytes] | None) -> tuple[Mark, Summary]:
    """Where to begin: after the rows a checkpoint of this import counted, when its source still
    begins with them; else at the top."""
    identity = job.identity
    if identity is None:
        return Mark(), Summary()
    checkpoints = Checkpoints(store, identity, job.name)
    kept = None if job.restart else await checkpoints.read()
    if kept is None:
        return Mark(), Summary()
    if raw is not None and not _same_file(raw, kept):
        console.print(
            f"{job.name} is not the file an earlier import stopped in at line {kept.mark.line:,} "
            f"({_when(kept.updated_ms)}): importing it from the start (rows already there stay as they are)."
        )
        return Mark(), Summary()
    where = "row" if job.from_sql is not None else "line"
    console.print(
        f"Going on from {where} {kept.mark.line:,} of {job.name}, where an earlier import stopped "
        f"({_when(kept.updated_ms)}); --restart reads it all again."
    )
    summary = kept.summary
    summary.earlier = summary.rows
    return kept.mark, summary


def _same_file(raw: IO[bytes], kept: Kept) -> bool:
    size = os.fstat(raw.fileno()).st_size
    return kept.mark.offset <= size and checksum(raw, kept.mark.offset) == kept.mark.crc


async def _from_sql(job: EdgeImport, start: Mark) -> AsyncIterator[EdgeBatch]:
    assert job.from_sql is not None and job.query is not None
    async for batch in query_batches(job.from_sql, job.query, size=EDGE_BATCH, start=start):
        yield batch


def run_edge_import(job: EdgeImport, settings: Settings) -> Summary:
    """Import the follows of `job`; exits with a message when its source cannot be read."""
    with redis_for(settings) as settings, contextlib.ExitStack() as files:
        raw: IO[bytes] | None = None
        if job.from_sql is None:
            try:
                raw = sys.stdin.buffer if job.path == "-" else files.enter_context(open(str(job.path), "rb"))
            except OSError as exc:
                raise fail(f"Cannot read {job.path}: {exc.strerror}.") from None
        start, summary = asyncio.run(with_store(settings, lambda store: _start(job, store, raw)))
        total: int | None = None
        if raw is not None and job.path != "-":
            try:
                total = scan(raw, str(job.path), start.offset, start.line)
            except NotUtf8Error as exc:
                raise fail(str(exc), 1) from None
            if start.offset == 0 and job.header and job.fmt is Format.CSV:
                total = max(total - 1, 0)
            total += summary.rows
        try:
            return _import(job, settings, raw, start, summary, total)
        except SourceChangedError:
            console.print(
                f"{job.name} no longer gives the rows an earlier import counted: importing it from "
                "the start (rows already there stay as they are)."
            )
            return _import(job, settings, raw, Mark(), Summary(), total)


def _import(
    job: EdgeImport,
    settings: Settings,
    raw: IO[bytes] | None,
    start: Mark,
    summary: Summary,
    total: int | None,
) -> Summary:
    source: Any
    if raw is not None:
        try:
            source = edge_batches(
                raw, str(job.path), job.fmt, header=job.header, start=start, size=EDGE_BATCH
            )
        except HeaderError as exc:
            raise fail(f"Cannot import {job.name}: {exc}.") from None
        except NotUtf8Error as exc:
            raise fail(_not_utf8(job, exc), 1) from None
    else:
        source = _from_sql(job, start)
    unit = "rows"
    with progress_bar(unit, total) as bar:
        task = bar.add_task("import edges", total=total, completed=summary.rows)

        def progress(rows: int) -> None:
            bar.update(task, completed=rows, total=max(total or 0, rows) if total is not None else None)

        async def work(store: FollowStore) -> Summary:
            identity = job.identity
            marks = Checkpoints(store, identity, job.name) if identity is not None else None
            if marks is not None and start.offset == 0 and start.line == 0:
                await marks.clear()
            done = await import_edge_batches(
                store,
                source,
                on_error=job.on_error,
                register_missing=job.register_missing,
                progress=progress,
                marks=marks,
                summary=summary,
            )
            if marks is not None and done.stopped_at is None:
                await marks.clear()
            return done

        try:
            done = asyncio.run(with_store(settings, work))
            bar.update(task, completed=done.rows, total=done.rows)  # the lines counted were a guess
            return done
        except NotUtf8Error as exc:
            raise fail(_not_utf8(job, exc), 1) from None
        except SourceError as exc:
            raise fail(str(exc), 1) from None
        except KeyboardInterrupt:
            raise _interrupted(job) from None


def _not_utf8(job: EdgeImport, exc: NotUtf8Error) -> str:
    if job.path == "-":
        return (
            f"Standard input is not UTF-8 text (byte 0x{exc.byte:02x}): send UTF-8 text; "
            "the rows read before that byte may have been imported."
        )
    return str(exc)


def _interrupted(job: EdgeImport) -> typer.Exit:
    again = "run the same command again to go on where it stopped" if job.identity else "run it again"
    return fail(f"Interrupted: the rows written so far stay; {again}.", 130)


def edge_job_checks(path: str | None, from_sql: str | None, query: str | None) -> Iterator[str]:
    """What is wrong with the source options, if anything."""
    if from_sql is None and path is None:
        yield "Name a FILE to import (- for standard input), or --from-sql URL with --query."
    if from_sql is not None and path is not None:
        yield "Import a FILE or --from-sql, not both."
    if from_sql is not None and not query:
        yield '--from-sql needs --query "SELECT follower, followee, followed_at FROM ...".'
    if query is not None and from_sql is None:
        yield "--query goes with --from-sql URL."
