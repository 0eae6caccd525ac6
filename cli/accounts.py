"""`followgraph accounts`: one user's lists, for an operator, in the files the user would download
(GET /account/export/...) or upload (POST /account/import/...), so that an account can be moved
without its owner's token."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, TextIO

import typer

from followgraph.cli.support import (
    DataDir,
    RedisUrl,
    console,
    counted,
    fail,
    progress_bar,
    redis_for,
    settings_from,
    with_store,
)
from followgraph.store import FollowStore, InvalidInputError, validate_user_id
from followgraph.store.graph.account_import import ImportFileError, ImportReport, Mode, addresses, import_list
from followgraph.store.graph.portability import ExportedList, exported_csv

accounts = typer.Typer(
    help="One account: its lists as Mastodon's CSV files, where it stands, its suspension and deletion.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def export(
    user_id: Annotated[str, typer.Argument(help="Whose lists.", show_default=False)],
    which: Annotated[
        ExportedList, typer.Option("--list", help="Which list: following, followers, blocks or mutes.")
    ] = ExportedList.FOLLOWING,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of to standard output.")
    ] = None,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Write USER_ID's list in Mastodon's CSV format (following_accounts.csv and the others),
    newest first: the file the user gets from GET /account/export/LIST.csv."""
    try:
        validate_user_id(user_id)
    except InvalidInputError as exc:
        raise fail(str(exc)) from None
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    with redis_for(settings) as settings:
        if output is None:
            asyncio.run(with_store(settings, lambda store: _write(store, user_id, which, sys.stdout)))
            return
        with output.open("w", encoding="utf-8", newline="") as out:
            asyncio.run(with_store(settings, lambda store: _write(store, user_id, which, out)))


def import_(
    user_id: Annotated[str, typer.Argument(help="Whose lists.", show_default=False)],
    file: Annotated[Path, typer.Argument(help="A CSV file as Mastodon exports them.", show_default=False)],
    which: Annotated[
        ExportedList, typer.Option("--list", help="Which list: following, blocks or mutes.")
    ] = ExportedList.FOLLOWING,
    mode: Annotated[
        Mode, typer.Option(help="merge adds to the list; overwrite makes the file the list.")
    ] = Mode.MERGE,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Apply a Mastodon CSV file (following_accounts.csv, blocked_accounts.csv, muted_accounts.csv)
    to USER_ID's list, as POST /account/import/LIST does, and say which rows could not be applied.

    Exits 1 when some could not.
    """
    try:
        validate_user_id(user_id)
        text = file.read_text(encoding="utf-8-sig")
        found, problems = addresses(text)
    except InvalidInputError as exc:
        raise fail(str(exc)) from None
    except (OSError, UnicodeDecodeError, ImportFileError) as exc:
        raise fail(f"Cannot import {file}: {exc}") from None
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    rows = len(found) + len(problems)
    with redis_for(settings) as settings, progress_bar("rows", total=rows) as bar:
        task = bar.add_task(f"import {which.value}", total=rows)

        async def advance(report: ImportReport) -> None:
            bar.update(task, completed=report.applied + report.failed)

        async def work(store: FollowStore) -> ImportReport:
            return await import_list(store, user_id, which, text, mode, advance)

        try:
            report = asyncio.run(with_store(settings, work))
        except ImportFileError as exc:
            raise fail(str(exc)) from None
    console.print(
        f"Applied {counted(report.applied, 'row')}, removed {counted(report.removed, 'entry', 'entries')}, "
        f"could not apply {counted(report.failed, 'row')}."
    )
    for problem in report.problems:
        console.print(
            f"  line {problem.line}: {problem.address}: {problem.reason}", markup=False, highlight=False
        )
    if report.failed:
        raise typer.Exit(1)


async def _write(store: FollowStore, user_id: str, which: ExportedList, out: TextIO) -> None:
    async for chunk in exported_csv(store, user_id, which):
        out.write(chunk)


accounts.command(short_help="Write one user's list as Mastodon's CSV.")(export)
accounts.command("import", short_help="Apply a Mastodon CSV file to one user's list.")(import_)
