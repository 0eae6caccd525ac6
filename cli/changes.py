"""The change log and SQL copy commands: `sync`, `events tail`, `rebuild --from-sql`, `reconcile`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from typing import TYPE_CHECKING, Annotated

import orjson
import typer

from followgraph.cli.demo import is_empty
from followgraph.cli.support import (
    DataDir,
    RedisUrl,
    console,
    env_help,
    exit_on_signal,
    fail,
    progress_bar,
    redis_for,
    settings_from,
    with_store,
)
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.graph.events import parse_after
from followgraph.store.log.stream import EventLog
from followgraph.store.sql.urls import hidden_url, sqlite_path
from followgraph.transport.logs import configure_logging
from followgraph.transport.tracing_config import TracingConfigError, tracing_from_env

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from followgraph.server.sync import SqlSync
    from followgraph.store.sql import mirror
    from followgraph.store.sql.mirror import RebuildReport

# The SQL copy's modules (SQLAlchemy, Alembic) are imported by the commands that use them, not
# with the command line.

log = logging.getLogger("followgraph")

DatabaseUrl = Annotated[
    str | None,
    typer.Option(help=env_help("database_url")),
]

events = typer.Typer(help="Read the change log.", no_args_is_help=True, rich_markup_mode=None)


def _sql_url(settings: Settings) -> str:
    url = settings.sql_url
    if url is None:
        raise fail("The SQL copy is off (FOLLOWGRAPH_DATABASE_URL=off): nothing to do.")
    return url


def _until_signalled() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM, so a long command stops between batches."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


def sync(
    database_url: DatabaseUrl = None,
    consumer: Annotated[
        str | None,
        typer.Option(help="This consumer's name in the group; a restart under it resumes its batch."),
    ] = None,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Feed the SQL copy from the change log until stopped (Ctrl-C or SIGTERM).

    Runs beside `serve` (start those with FOLLOWGRAPH_SYNC=0 to leave the copy to this process) or
    in place of it; several may run: they share the work as one consumer group.
    """
    from followgraph.server.sync import SqlSync

    settings = settings_from(redis_url=redis_url, data_dir=data_dir, database_url=database_url)
    configure_logging(settings.log_level)
    url = _sql_url(settings)
    try:
        # Each batch applied in a span, with OTEL_EXPORTER_OTLP_ENDPOINT set, as in `serve`.
        tracing = tracing_from_env()
    except TracingConfigError as exc:
        raise fail(f"Configuration error: {exc}") from None
    with redis_for(settings) as settings:

        async def work(store: FollowStore) -> None:
            feeder = SqlSync(
                store,
                url,
                consumer=consumer,
                batch=settings.sync_batch,
                keep_seconds=settings.event_log_keep,
                tracing=tracing,
            )
            stop = _until_signalled()
            report = asyncio.create_task(_report_progress(feeder, stop))
            try:
                await feeder.run(stop)
            finally:
                stop.set()
                await report
                await feeder.aclose()

        asyncio.run(with_store(settings, work))
    if tracing is not None:
        tracing.flush()
    console.print("Stopped.")


async def _report_progress(feeder: SqlSync, stop: asyncio.Event) -> None:
    """A line every ten seconds: how far behind the copy is."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=10)
        lag = feeder.state.lag
        if lag is not None:
            log.info("SQL copy: %d events behind (%.1f s)", lag.events, lag.seconds)


@events.command("tail", short_help="Print the change log's events as JSON lines.")
def tail(
    from_id: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Print events after this id (0 for the whole log); default: only new ones, or with "
            "--no-follow every event the log keeps.",
        ),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow/--no-follow",
            help="Keep printing new events as they come, or print those there are and exit.",
        ),
    ] = True,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Print the change log's events as JSON lines on standard output (the format: the change
    log page of the docs). Stop with Ctrl-C.

    Without --from it prints only the events that come after it starts, or with --no-follow the
    ones the log keeps, oldest first, and exits.
    """
    if from_id is not None and from_id != "0":
        try:
            parse_after(from_id)
        except ValueError as exc:
            raise fail(f"--from: {exc}.") from None
    # Only new events, without following, would be none at all: --no-follow alone reads the log.
    after = "0-0" if from_id == "0" or (from_id is None and not follow) else from_id
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    out = sys.stdout.buffer

    with redis_for(settings) as settings:

        async def work(store: FollowStore) -> None:
            async for event in EventLog(store).tail(after, follow=follow):
                out.write(orjson.dumps(event.json()) + b"\n")
                out.flush()

        # Ctrl-C ends it, and a reader that goes away (| head); SIGTERM too, through the clean-up.
        signal.signal(signal.SIGTERM, exit_on_signal)
        with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
            asyncio.run(with_store(settings, work))


def rebuild(
    from_sql: Annotated[
        bool, typer.Option("--from-sql", help="Rebuild from the SQL copy (the only source there is).")
    ] = False,
    database_url: DatabaseUrl = None,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Load the SQL copy into an empty Redis (or Redis Cluster): users with their settings, blocks,
    mutes, follows with their times (mutual sets and counts follow), pending requests.

    Refuses a store that has users: `followgraph reconcile` compares the two instead.
    """
    if not from_sql:
        raise fail("Say where from: `followgraph rebuild --from-sql`.")
    settings = settings_from(redis_url=redis_url, data_dir=data_dir, database_url=database_url)
    url = _sql_url(settings)
    with redis_for(settings) as settings:
        from followgraph.store.sql import mirror
        from followgraph.store.sql.snapshot import counts

        async def work(store: FollowStore) -> RebuildReport | None:
            if not await is_empty(store):
                return None
            engine = await _open_copy(url)
            try:
                totals = await counts(engine)
                with progress_bar("rows", total=None) as bar:
                    expected = totals.users + totals.follows + totals.blocks + totals.mutes
                    task = bar.add_task("rebuild", total=expected + totals.pending_requests)
                    return await mirror.rebuild(store, engine, progress=lambda _, n: bar.advance(task, n))
            finally:
                await engine.dispose()

        report = asyncio.run(with_store(settings, work))
    if report is None:
        raise fail("The store already has users: rebuild loads only into an empty Redis.", 1)
    loaded = ", ".join(f"{n:,} {what}" for what, n in report.loaded.items())
    console.print(f"Rebuilt from {hidden_url(url)}: {loaded or 'nothing (the copy is empty)'}.")
    for what, n in report.refused.items():
        console.print(f"  {n:,} {what} refused by the graph's rules (e.g. across a block)", style="yellow")


async def _open_copy(url: str, *, create: bool = False) -> AsyncEngine:
    """An engine on the copy, whose tables are brought up to date first. A SQLite file that does
    not exist is refused unless `create`: a mistyped path would otherwise read as an empty copy."""
    from followgraph.store.sql.engine import create_engine
    from followgraph.store.sql.migrate import migrate

    path = sqlite_path(url)
    if path is not None and not create and not path.is_file():
        raise fail(
            f"No SQL copy at {hidden_url(url)}: {path} does not exist. "
            "Check --database-url or FOLLOWGRAPH_DATABASE_URL.",
            1,
        )
    try:
        await migrate(url)
    except Exception as exc:
        raise fail(f"Cannot open the SQL copy at {hidden_url(url)}: {exc}", 1) from None
    return create_engine(url)


def reconcile(
    repair_sql: Annotated[
        bool, typer.Option("--repair-sql", help="Rewrite the SQL copy from Redis where they differ.")
    ] = False,
    database_url: DatabaseUrl = None,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Compare the SQL copy with Redis: users, settings, follows, blocks, mutes and requests.

    Reads only, and exits 1 when they differ, unless --repair-sql, which rewrites the copy where it
    differs (Redis is the source of truth). Events still on their way make differences too: check
    the lag first (/readyz, followgraph_sync_lag_events).
    """
    settings = settings_from(redis_url=redis_url, data_dir=data_dir, database_url=database_url)
    url = _sql_url(settings)
    with redis_for(settings) as settings:
        from followgraph.store.sql import mirror

        async def work(store: FollowStore) -> tuple[mirror.Differences, int]:
            engine = await _open_copy(url, create=repair_sql)
            try:
                with progress_bar("sides", total=2) as bar:
                    task = bar.add_task("reading", total=2)
                    redis_side = await mirror.read_redis(store)
                    bar.advance(task)
                    sql_side = await mirror.read_sql(engine)
                    bar.advance(task)
                found = mirror.compare(sql_side, redis_side)
                fixed = 0
                if repair_sql and found.total:
                    now = await mirror.redis_now_ms(store)
                    fixed = await mirror.repair_sql(engine, sql_side, redis_side, now)
                return found, fixed
            finally:
                await engine.dispose()

        found, fixed = asyncio.run(with_store(settings, work))
    if not found.total:
        console.print("The SQL copy matches Redis.")
        return
    for what, n in sorted(found.counts.items()):
        console.print(f"  {n:,} {what}", markup=False)
        for example in found.examples[what]:
            console.print(f"    e.g. {example}", markup=False, highlight=False)
    if repair_sql:
        console.print(f"Rewrote the SQL copy: {fixed:,} corrections.")
        return
    console.print("The SQL copy differs from Redis: `followgraph reconcile --repair-sql` rewrites it.")
    raise typer.Exit(1)


__all__ = ["events", "rebuild", "reconcile", "sync", "tail"]
