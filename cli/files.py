"""`import` and `export`: follows, users and controls as CSV or JSON Lines, streamed, with a
progress bar and a summary; an export replaces its target only once complete."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import errno
import io
import os
import stat
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Annotated

import typer

from followgraph.cli.edge_command import EdgeImport, edge_job_checks, run_edge_import
from followgraph.cli.records import CONTROL_FIELDS, EDGE_FIELDS, USER_FIELDS, Format, HeaderError
from followgraph.cli.support import (
    DataDir,
    FormatOption,
    RedisUrl,
    console,
    counted,
    fail,
    progress_bar,
    redis_for,
    settings_from,
    with_store,
)
from followgraph.cli.transfer import (
    OnError,
    Progress,
    Summary,
    control_rows,
    export_controls,
    export_edges,
    export_users,
    import_controls,
    import_users,
    user_rows,
)
from followgraph.store import FollowStore

TEXT_ENCODING = "utf-8-sig"


class Kind(enum.Enum):
    EDGES = "edges"
    USERS = "users"
    CONTROLS = "controls"

    @property
    def noun(self) -> str:
        """What the import summary counts, in the singular."""
        return {Kind.EDGES: "follow", Kind.USERS: "user", Kind.CONTROLS: "control"}[self]


KindOption = Annotated[
    Kind,
    typer.Option(
        help=f"edges (columns {', '.join(EDGE_FIELDS)}), users (columns {', '.join(USER_FIELDS)}) or "
        f"controls (columns {', '.join(CONTROL_FIELDS)}; kind BLOCK, MUTE or REQUEST). Import users, "
        "then edges, then controls."
    ),
]


HeaderOption = Annotated[
    bool,
    typer.Option(
        "--header/--no-header",
        help="CSV: the first line names the columns, in any order, and each row's values are read by "
        "those names (an export writes one); a header that names a column the kind lacks, or lacks "
        "a required one, is refused before anything is written. --no-header: every line is a row, "
        "its columns in the order --kind lists them.",
    ),
]


_EXPORTERS = {Kind.EDGES: export_edges, Kind.USERS: export_users, Kind.CONTROLS: export_controls}


def _count_rows(path: str, file_format: Format, header: bool) -> int | None:
    """The data rows of the file, for the progress bar: blank lines and a CSV header do not count.
    NotUtf8 when the file is not UTF-8 text, before anything is imported."""
    if path == "-":
        return None
    rows = offset = 0
    unread_header = header and file_format is Format.CSV
    with open(path, "rb") as f:
        for number, line in enumerate(f):
            _check_utf8(path, line, offset, number + 1)
            offset += len(line)
            if not line.strip():
                continue
            if unread_header:
                unread_header = False
                continue
            rows += 1
    return rows


Importer = Callable[[FollowStore, Progress], Awaitable[Summary]]


def _importer(
    kind: Kind,
    lines: Iterable[str],
    file_format: Format,
    header: bool,
    on_error: OnError,
    register_missing: bool,
) -> Importer:
    """The import of users or controls from `lines`, whose CSV header is read now: HeaderError when
    it does not fit (edges go through cli/edge_command.py)."""
    if kind is Kind.USERS:
        users = user_rows(lines, file_format, header=header)
        return lambda store, progress: import_users(store, users, on_error=on_error, progress=progress)
    controls = control_rows(lines, file_format, header=header)
    return lambda store, progress: import_controls(
        store, controls, on_error=on_error, register_missing=register_missing, progress=progress
    )


@contextlib.contextmanager
def _stdin_text() -> Iterator[IO[str]]:
    """Standard input read as files are, whatever the locale: UTF-8, strictly."""
    text = io.TextIOWrapper(sys.stdin.buffer, encoding=TEXT_ENCODING, newline="")
    try:
        yield text
    finally:
        text.detach()  # standard input stays open


class NotUtf8(Exception):
    """The file to import is not UTF-8 text; the message says where."""


def _check_utf8(path: str, line: bytes, offset: int, number: int) -> None:
    """NotUtf8 when `line`, found at byte `offset` of the file as its line `number`, is not UTF-8."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8(
            f"{path} is not UTF-8 text (byte 0x{line[exc.start]:02x} at offset {offset + exc.start:,}, "
            f"line {number:,}): save it as UTF-8 and import it again."
        ) from None


def _not_utf8(path: str, exc: UnicodeDecodeError) -> str:
    """What to say when the text being imported turns out not to be UTF-8."""
    name = "Standard input" if path == "-" else path
    return (
        f"{name} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x}): send UTF-8 text; "
        "the rows read before that byte may have been imported."
    )


def _report(summary: Summary, what: str, where: str = "line") -> None:
    console.print(
        f"{counted(summary.rows, 'row')} in {summary.seconds:.1f}s ({summary.rate:,.0f} rows/s): "
        f"{counted(summary.written, what)} written, {summary.unchanged:,} already there, "
        f"{summary.rejected:,} rejected."
    )
    if summary.requested:
        console.print(
            f"  {counted(summary.requested, 'follow request')} pending: the followee is locked and the row "
            "has no followed_at (a row with one is written as a follow)."
        )
    if summary.registered:
        console.print(
            f"  {counted(summary.registered, 'user')} registered: named by a follow, not registered before."
        )
    for error in summary.errors:
        console.print(f"  {where} {error.line:,}: {error.message}", markup=False, highlight=False)
    if summary.rejected > len(summary.errors):
        console.print(f"  ... and {counted(summary.rejected - len(summary.errors), 'more rejected row')}.")
    if summary.stopped_at is not None:
        console.print(f"[red]Stopped at {where} {summary.stopped_at:,}[/red]; rows before it were imported.")


def import_(
    path: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE]", help="A .csv or .jsonl file, or - for standard input (or --from-sql)."
        ),
    ] = None,
    kind: KindOption = Kind.EDGES,
    fmt: FormatOption = None,
    on_error: Annotated[
        OnError,
        typer.Option(
            help="skip bad rows (reported with line numbers; the exit status is then 1) "
            "or stop at the first one."
        ),
    ] = OnError.SKIP,
    register_missing: Annotated[
        bool,
        typer.Option(help="Register users that edges or controls name but that are not registered yet."),
    ] = True,
    header: HeaderOption = True,
    from_sql: Annotated[
        str | None,
        typer.Option(
            "--from-sql",
            metavar="URL",
            help="Edges: read the follows from a database instead of a file (postgresql://, mysql://, "
            "mariadb:// or sqlite:///path), streamed with a server-side cursor; with --query.",
        ),
    ] = None,
    query: Annotated[
        str | None,
        typer.Option(
            metavar="SQL",
            help="With --from-sql: a query whose columns are the follower, the followee and "
            "optionally the follow's time (epoch ms, a timestamp, or null for now), in that order, "
            'e.g. "SELECT follower_id, followee_id, created_at FROM follows ORDER BY follower_id, '
            'followee_id" (an ORDER BY lets a run cut short go on where it stopped).',
        ),
    ] = None,
    restart: Annotated[
        bool,
        typer.Option(
            "--restart",
            help="Edges: read the source from its start even if an earlier run of this import was "
            "cut short (by default it goes on where that run stopped, from a checkpoint kept in Redis).",
        ),
    ] = False,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Import follows, users or controls (blocks, mutes, pending requests): streaming, in batches,
    with a progress bar; safe to re-run. Follows can also come from a SQL query (--from-sql).

    Exits 1 when any row was rejected, 0 when every row was imported, 2 when the file was refused
    before anything was written (its CSV header does not fit, for one). An import of follows cut
    short (Ctrl-C, a crash) goes on where it stopped when run again.
    """
    problems = list(edge_job_checks(path, from_sql, query))
    if from_sql is not None and kind is not Kind.EDGES:
        problems.append("--from-sql imports edges only.")
    if problems:
        raise fail(problems[0])
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    if kind is Kind.EDGES:
        try:
            file_format = fmt or Format.of(path or "-", "csv" if path in ("-", None) else None)
        except ValueError as exc:
            raise fail(str(exc)) from None
        job = EdgeImport(path, file_format, header, on_error, register_missing, restart, from_sql, query)
        summary = run_edge_import(job, settings)
        _finish(summary, kind, "row" if from_sql is not None else "line")
        return
    assert path is not None
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    source: contextlib.AbstractContextManager[IO[str]]
    try:
        file_format = fmt or Format.of(path, "csv" if path == "-" else None)
        total = _count_rows(path, file_format, header)
        source = _stdin_text() if path == "-" else open(path, encoding=TEXT_ENCODING, newline="")
    except NotUtf8 as exc:
        raise fail(str(exc), 1) from None
    except ValueError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"Cannot read {path}: {exc.strerror}.") from None
    with source as lines:
        try:
            run = _importer(kind, lines, file_format, header, on_error, register_missing)
        except HeaderError as exc:
            raise fail(f"Cannot import {'standard input' if path == '-' else path}: {exc}.") from None
        except UnicodeDecodeError as exc:
            raise fail(_not_utf8(path, exc), 1) from None
        with redis_for(settings) as settings, progress_bar("rows", total) as bar:
            task = bar.add_task(f"import {kind.value}", total=total)

            def progress(rows: int) -> None:
                bar.update(task, completed=rows)

            try:
                summary = asyncio.run(with_store(settings, lambda store: run(store, progress)))
            except UnicodeDecodeError as exc:
                raise fail(_not_utf8(path, exc), 1) from None
    _finish(summary, kind)


def _finish(summary: Summary, kind: Kind, where: str = "line") -> None:
    """The summary, and the exit status it calls for."""
    _report(summary, kind.noun, where)
    if summary.stopped_at is not None:
        raise typer.Exit(1)
    if summary.rejected:
        rows = counted(summary.rejected, "row was", "rows were")
        them = "it" if summary.rejected == 1 else "them"
        console.print(f"[yellow]{rows} rejected[/yellow]: fix {them} and run the import again.")
        raise typer.Exit(1)


def export(
    path: Annotated[
        str, typer.Argument(metavar="FILE", help="A .csv or .jsonl file, or - for standard output.")
    ],
    kind: KindOption = Kind.EDGES,
    fmt: FormatOption = None,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Export every follow, user or control; the three exports re-imported into an empty store
    (users, then edges, then controls) give the same graph."""
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    try:
        file_format = fmt or Format.of(path, "csv" if path == "-" else None)
    except ValueError as exc:
        raise fail(str(exc)) from None
    with redis_for(settings) as settings, progress_bar("rows") as bar:
        task = bar.add_task(f"export {kind.value}", total=None)

        def progress(rows: int) -> None:
            bar.update(task, completed=rows)

        async def work(store: FollowStore) -> int:
            await store.redis.ping()  # Redis answers before the file is touched
            with _export_target(path) as out:
                return await _EXPORTERS[kind](store, out, file_format, progress=progress)

        started = time.perf_counter()
        count = asyncio.run(with_store(settings, work))
    elapsed = time.perf_counter() - started
    console.print(f"Exported {counted(count, kind.value.removesuffix('s'))} in {elapsed:.1f}s.")


@contextlib.contextmanager
def _export_target(path: str) -> Iterator[IO[str]]:
    """Standard output for -; else a new file beside `path` that replaces it once the export is
    complete, so that a failed export leaves `path` as it was."""
    if path == "-":
        yield sys.stdout
        return
    try:
        with _replacing(Path(path)) as out:
            yield out
    except OSError as exc:
        raise fail(f"Cannot write {path}: {exc.strerror or exc}.", 1) from None


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[IO[str]]:
    """A temporary file in the directory of `path` (through symbolic links), moved over it when the
    block ends without an error and deleted otherwise. It gets the mode `path` has, or the one a
    new file would get."""
    real = Path(os.path.realpath(path))
    if real.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    fd, temporary = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".partial")
    try:
        os.fchmod(fd, _file_mode(real))
        with open(fd, "w", encoding="utf-8", newline="") as out:
            yield out
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _file_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
