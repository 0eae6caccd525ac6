"""What the `followgraph` commands share: settings from options, the console, the embedded Redis
for the duration of a command, a store to work on, and progress bars."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from followgraph.server.embedded import redis_url as resolve_redis_url
from followgraph.server.redis_client import connect, warm_up
from followgraph.server.redis_server import RedisServerError
from followgraph.server.settings import ENV_PREFIX, ConfigError, Settings
from followgraph.store import FollowStore

console = Console(stderr=True, soft_wrap=not sys.stderr.isatty())
T = TypeVar("T")
_DEFAULTS = Settings()


def env_help(text: str, name: str, default: object = None) -> str:
    """Help text of an option backed by setting `name`: its variable and its default."""
    shown = getattr(_DEFAULTS, name) if default is None else default
    return f"{text} [env {ENV_PREFIX}{name.upper()}; default: {shown}]"


RedisUrl = Annotated[
    str | None,
    typer.Option(help=env_help("Redis URL.", "redis_url", "the embedded Redis of the data directory")),
]
DataDir = Annotated[
    Path | None,
    typer.Option(help=env_help("Where the embedded Redis and the JWT secret live.", "data_dir")),
]
FormatOption = Annotated[
    str | None, typer.Option("--format", help="csv or jsonl; default: from the file name.")
]


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `message` (verbatim: it may quote user data) and return the Exit to raise."""
    console.print(message, markup=False, highlight=False, style="red")
    return typer.Exit(code)


def settings_from(**overrides: Any) -> Settings:
    try:
        return Settings.from_env(None, **overrides)
    except ConfigError as exc:
        raise fail(f"Configuration error: {exc}") from None


@contextlib.contextmanager
def redis_for(settings: Settings) -> Iterator[Settings]:
    """Settings whose redis_url is set, starting the embedded Redis for the duration if needed."""
    try:
        with resolve_redis_url(settings) as url:
            yield replace(settings, redis_url=url)
    except RedisServerError as exc:
        raise fail(f"Could not start the embedded Redis: {exc}", 1) from None


# Bulk commands send large batches; on a busy machine one can take longer than a request's command.
BULK_TIMEOUT = 30.0


async def with_store(settings: Settings, work: Callable[[FollowStore], Awaitable[T]]) -> T:
    client = connect(settings.redis_url or "", timeout=max(settings.redis_timeout, BULK_TIMEOUT))
    await warm_up(client)
    try:
        return await work(FollowStore(client, keys=settings.keys))
    finally:
        await client.aclose()


def progress_bar(unit: str, total: int | None = None) -> Progress:
    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
    columns += [MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn()]
    return Progress(*columns, console=console, transient=False)


def exit_on_signal(signum: int, frame: object) -> None:
    """A SIGTERM handler: leave as from an exception, so that what the command started (an
    embedded Redis) is shut down on the way out instead of dying with the process."""
    raise SystemExit(128 + signum)
