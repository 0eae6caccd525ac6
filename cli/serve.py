"""The commands that run FollowGraph: `serve` (the API, the web app and GraphiQL, on an embedded
Redis unless told another) and `demo` (a demo graph in an empty store)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import time
from collections.abc import Iterator
from typing import Annotated

import typer

from followgraph.cli.admin import token_lifetime
from followgraph.cli.demo import (
    DEFAULT_SEED,
    DEFAULT_USERS,
    DemoSpec,
    is_empty,
    load_demo,
    load_demo_controls,
)
from followgraph.cli.demo_ha import DEFAULT_PORT
from followgraph.cli.demo_ha import demo_ha as demo_ha_redis
from followgraph.cli.support import (
    DataDir,
    RedisUrl,
    console,
    counted,
    env_help,
    exit_on_signal,
    fail,
    progress_bar,
    redis_for,
    settings_from,
    with_store,
)
from followgraph.server.embedded import DataDirInUseError, Embedded, embedded_redis
from followgraph.server.private import make_private
from followgraph.server.redis_server import RedisServerError
from followgraph.server.settings import ConfigError, Settings
from followgraph.server.watchdog import RedisWatchdog
from followgraph.store import FollowStore
from followgraph.transport.demo_viewer import DEMO_VIEWER
from followgraph.transport.logs import configure_logging

DEMO_TOKEN_TTL = 7 * 86400


log = logging.getLogger("followgraph")


@contextlib.contextmanager
def _watched_redis(settings: Settings) -> Iterator[tuple[Settings, Embedded]]:
    """Like redis_for(), for serve: the embedded Redis is this process's own, restarted when it
    exits; when another process owns it, the command stops with a sentence saying which (#36).

    With worker processes, which cannot see the watchdog, giving up on it stops the server.
    """

    def stop_server() -> None:
        if settings.workers > 1:
            os.kill(os.getpid(), signal.SIGTERM)

    try:
        with embedded_redis(settings, exclusive=True, watch=True, on_give_up=stop_server) as embedded:
            yield dataclasses.replace(settings, redis_url=embedded.url), embedded
    except DataDirInUseError as exc:
        raise fail(str(exc), 1) from None
    except RedisServerError as exc:
        raise fail(f"Could not start the embedded Redis: {exc}", 1) from None


@contextlib.contextmanager
def _redis_to_serve(
    settings: Settings, demo_ha_port: int | None
) -> Iterator[tuple[Settings, RedisWatchdog | None]]:
    """The settings with the Redis to serve on (the embedded one unless a URL is given, or
    --demo-ha's primary on `demo_ha_port`, replica and Sentinels), and the embedded Redis's watchdog
    if any."""
    if demo_ha_port is not None:
        with demo_ha_redis(settings, demo_ha_port) as url:
            yield dataclasses.replace(settings, redis_url=url), None
        return
    with _watched_redis(settings) as (settings, embedded):
        yield settings, embedded.watchdog


async def _demo(settings: Settings, spec: DemoSpec) -> bool:
    """Load the demo graph into an empty store; False when the store already has users."""

    async def work(store: FollowStore) -> bool:
        if not await is_empty(store):
            return False
        with progress_bar("users") as bar:
            task = bar.add_task("demo graph", total=spec.users)
            started = time.perf_counter()
            users, follows = await load_demo(
                store,
                spec,
                now_ms=int(time.time() * 1000),
                progress=lambda u, f: bar.update(task, completed=u, description=f"demo graph: {f:,} follows"),
            )
            actions = await load_demo_controls(store, spec)
        console.print(
            f"Loaded {counted(users, 'user')} and {counted(follows, 'follow')} in "
            f"{time.perf_counter() - started:.1f}s, with {actions:,} blocks, mutes, locked accounts, "
            "hidden lists and follow requests."
        )
        return True

    return await with_store(settings, work)


def _print_welcome(settings: Settings, users: int = DEFAULT_USERS, *, serving: bool = False) -> None:
    """A token of the demo viewer (and, for serve, where the server listens), or why no token."""
    typer.echo()
    if serving:
        typer.echo(_where(settings))
    from followgraph.transport.auth import AuthConfigError, mint_token

    viewer = DEMO_VIEWER if int(DEMO_VIEWER) <= users else str(users)
    try:
        config = settings.auth_config()
        token = mint_token(config, viewer, ttl_seconds=token_lifetime(None, config, DEMO_TOKEN_TTL))
    except (ConfigError, AuthConfigError) as exc:
        console.print(f"No token of demo user {viewer}: {exc}", markup=False, highlight=False, style="yellow")
        return
    typer.echo(
        f'Token of demo user {viewer} (Headers pane: {{"Authorization": "Bearer <token>"}}):\n\n{token}\n'
    )


def _where(settings: Settings) -> str:
    """Where the web app is, as far as it is known before the server binds its port."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    if ":" in host:
        host = f"[{host}]"
    if settings.port == 0:
        return (
            f"FollowGraph on {host}, on a port the system chooses: the log line 'Uvicorn running on' "
            "gives it (the web app at /; GraphiQL at /graphql)"
        )
    return f"FollowGraph on http://{host}:{settings.port}/ (the web app; GraphiQL at /graphql)"


def serve(
    host: Annotated[str | None, typer.Option(help=env_help("host"))] = None,
    port: Annotated[int | None, typer.Option(help=env_help("port"))] = None,
    workers: Annotated[int | None, typer.Option(help=env_help("workers"))] = None,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
    appendfsync: Annotated[
        str | None,
        typer.Option(help=env_help("appendfsync")),
    ] = None,
    production: Annotated[
        bool | None,
        typer.Option(
            "--production/--development",
            help=env_help("production", "development"),
        ),
    ] = None,
    log_level: Annotated[str | None, typer.Option(help=env_help("log_level"))] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(help=env_help("metrics_port")),
    ] = None,
    demo: Annotated[
        bool | None,
        typer.Option(
            "--demo/--no-demo",
            help=env_help("demo", "off"),
        ),
    ] = None,
    federation: Annotated[
        bool | None,
        typer.Option(
            "--federation/--no-federation",
            help=env_help("federation", "off"),
        ),
    ] = None,
    demo_ha: Annotated[
        bool,
        typer.Option(
            "--demo-ha",
            help="Serve on a primary, a replica and three Sentinels of its own (from the embedded "
            "server's binary, on ports 6390, 6391 and 26390-26392 unless --demo-ha-port says, with "
            "their files in the data directory's ha/) instead of one Redis, to try a failover: kill "
            "the primary and watch the log. Demo mode unless --no-demo.",
        ),
    ] = False,
    demo_ha_port: Annotated[
        int,
        typer.Option(
            min=1024,
            max=45533,
            help="--demo-ha's primary port; the replica's is the next, the Sentinels' 20000 above those.",
        ),
    ] = DEFAULT_PORT,
) -> None:
    """Serve the GraphQL API, the web app at / and GraphiQL at /graphql."""
    # The server's own modules (uvicorn, the app, the protocols) load when it is served, not with
    # every command.
    from followgraph.cli import serving

    if demo_ha and demo is None:
        demo = True
    settings = settings_from(
        host=host,
        port=port,
        workers=workers,
        redis_url=redis_url,
        data_dir=data_dir,
        appendfsync=appendfsync,
        production=production,
        log_level=log_level,
        demo=demo,
        metrics_port=metrics_port,
        federation=federation,
    )
    configure_logging(settings.log_level)
    if demo_ha and settings.redis_url is not None:
        raise fail("--demo-ha starts its own Redis: unset --redis-url and FOLLOWGRAPH_REDIS_URL.")
    serving.check_before_start(settings)
    # A data directory an earlier version made (0755) holds the AOF, the SQL copy and the secret.
    make_private(settings.data_dir)
    with _redis_to_serve(settings, demo_ha_port if demo_ha else None) as (settings, watchdog):
        try:
            settings.auth_config()
        except ConfigError as exc:
            raise fail(f"Configuration error: {exc}") from None
        # --demo or FOLLOWGRAPH_DEMO: the same demo mode either way.
        if settings.demo and not asyncio.run(_demo(settings, DemoSpec())):
            console.print("The store already has users: the demo graph was not loaded again.")
        if settings.demo:
            _print_welcome(settings, serving=True)
        options = serving.uvicorn_options(settings)
        serving.log_serving(settings)
        # uvicorn re-raises the signal that stopped it; as an exception it lets the embedded
        # Redis be shut down cleanly below instead of dying with the process.
        signal.signal(signal.SIGTERM, exit_on_signal)
        if settings.workers == 1:
            serving.serve_one(settings, watchdog, options)
        else:
            serving.serve_workers(settings, watchdog, options)
        if watchdog is not None and watchdog.problem() is not None:
            raise fail(f"Stopped: {watchdog.problem()}.", 1)


def demo(
    users: Annotated[int, typer.Option(help="How many users.", min=10, max=1_000_000)] = DEFAULT_USERS,
    seed: Annotated[
        int, typer.Option(help="Random seed: the same seed gives the same graph.")
    ] = DEFAULT_SEED,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Load a realistic demo graph (power-law fans; user "1" is the biggest celebrity) into an empty store."""
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    with redis_for(settings) as settings:
        if not asyncio.run(_demo(settings, DemoSpec(users=users, seed=seed))):
            console.print("[yellow]The store already has users: nothing loaded.[/yellow]")
            raise typer.Exit(1)
        _print_welcome(settings, users)
