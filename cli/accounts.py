"""`followgraph accounts`: one user's lists, for an operator, in the files the user would download
(GET /account/export/...), so that an account can be moved without its owner's token."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, TextIO

import typer

from followgraph.cli.support import DataDir, RedisUrl, fail, redis_for, settings_from, with_store
from followgraph.store import FollowStore, InvalidInputError, validate_user_id
from followgraph.store.graph.portability import ExportedList, exported_csv

accounts = typer.Typer(
    help="One user's lists, as Mastodon's CSV files.", no_args_is_help=True, rich_markup_mode=None
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


async def _write(store: FollowStore, user_id: str, which: ExportedList, out: TextIO) -> None:
    async for chunk in exported_csv(store, user_id, which):
        out.write(chunk)


accounts.command(short_help="Write one user's list as Mastodon's CSV.")(export)
