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
from redis.exceptions import ConnectionError, RedisClusterException, RedisError, TimeoutError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from followgraph.cli.records import Format
from followgraph.server.embedded import redis_url as resolve_redis_url
from followgraph.server.redis_client import connect, warm_up
from followgraph.server.redis_server import RedisServerError
from followgraph.server.settings import ENV_PREFIX, HELP, ConfigError, Settings, allowed, shown_default
from followgraph.store import FollowStore
from followgraph.store.redis.replicas import wait_for_replicas
from followgraph.store.sql.urls import hidden_url

console = Console(stderr=True, soft_wrap=not sys.stderr.isatty())
T = TypeVar("T")


def env_help(name: str, default: str | None = None) -> str:
    """Help text of an option backed by setting `name`: what it is for and the values it takes (as
    the settings declare them), its variable, and its default (`default` where the option words
    it its own way)."""
    values = allowed(name)
    text = HELP[name] + (f" Values: {values}." if values else "")
    return f"{text} [env {ENV_PREFIX}{name.upper()}; default: {default or shown_default(name)}]"


RedisUrl = Annotated[
    str | None,
    typer.Option(help=env_help("redis_url")),
]
DataDir = Annotated[
    Path | None,
    typer.Option(help=env_help("data_dir")),
]
FormatOption = Annotated[
    Format | None,
    typer.Option("--format", case_sensitive=False, help="csv or jsonl; default: from the file name."),
]


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `message` (verbatim: it may quote user data) and return the Exit to raise."""
    console.print(message, markup=False, highlight=False, emoji=False, style="red")
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
# What a Redis that is down, unreachable or refusing commands raises (cluster errors apart).
REDIS_ERRORS = (RedisError, RedisClusterException)


class StoreUnavailable(Exception):
    """Redis could not be used: its URL is malformed, or it did not answer; the message says which."""


def redis_problem(url: str, exc: Exception) -> str:
    """One sentence on why the Redis at `url` could not be used."""
    shown = hidden_url(url)
    reason = str(exc).strip() or type(exc).__name__
    if not reason.endswith("."):
        reason += "."
    if isinstance(exc, ValueError):
        return f"{shown} is not a usable Redis URL: {reason} Check --redis-url or FOLLOWGRAPH_REDIS_URL."
    if isinstance(exc, ConnectionError | TimeoutError | RedisClusterException):
        return f"Cannot reach Redis at {shown}: {reason}"
    return f"Redis at {shown} refused a command: {reason}"


async def on_store(settings: Settings, work: Callable[[FollowStore], Awaitable[T]]) -> T:
    """The result of `work` on the store of settings.redis_url; StoreUnavailable when Redis cannot
    be used."""
    url = settings.redis_url or ""
    try:
        client = connect(url, timeout=max(settings.redis_timeout, BULK_TIMEOUT))
    except ValueError as exc:
        raise StoreUnavailable(redis_problem(url, exc)) from None
    wait = settings.replica_wait
    if wait is not None:  # the commands' writes wait for the replicas, as the server's do
        wait_for_replicas(client, wait, settings.keys.replicated)
    try:
        await warm_up(client)
        return await work(FollowStore(client, keys=settings.keys))
    except REDIS_ERRORS as exc:
        raise StoreUnavailable(redis_problem(url, exc)) from None
    finally:
        await client.aclose()


async def with_store(settings: Settings, work: Callable[[FollowStore], Awaitable[T]]) -> T:
    """Like on_store(), exiting 1 with a message when Redis cannot be used."""
    try:
        return await on_store(settings, work)
    except StoreUnavailable as exc:
        raise fail(str(exc), 1) from None


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """`count` with thousands separators and the noun that agrees with it: 1 row, 1,200 rows."""
    noun = singular if count == 1 else plural or singular + "s"
    return f"{count:,} {noun}"


@contextlib.contextmanager
def progress_bar(unit: str, total: int | None = None) -> Iterator[Progress]:
    """A progress bar for the duration; a command that fails takes its bar away, leaving its
    message alone on the screen."""
    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
    columns += [MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=False) as bar:
        try:
            yield bar
        except BaseException:
            bar.live.transient = True
            bar.live.stop()
            bar.disable = True  # stopped already: closing it prints nothing more
            raise


def exit_on_signal(signum: int, frame: object) -> None:
    """A SIGTERM handler: leave as from an exception, so that what the command started (an
    embedded Redis) is shut down on the way out instead of dying with the process."""
    raise SystemExit(128 + signum)
