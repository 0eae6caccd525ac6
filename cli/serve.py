"""The commands that run FollowGraph: `serve` (the API, the web app and GraphiQL, on an embedded
Redis unless told another) and `demo` (a demo graph in an empty store)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import logging
import os
import shutil
import signal
import socket
import time
from collections.abc import Iterator
from typing import Annotated, Any

import typer
import uvicorn
from prometheus_client import CollectorRegistry

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
from followgraph.server.embedded import OWNER_ENV, DataDirInUseError, Embedded, embedded_redis
from followgraph.server.private import make_private, private_directory
from followgraph.server.redis_server import RedisServerError
from followgraph.server.settings import ConfigError, Settings
from followgraph.server.watchdog import RedisWatchdog
from followgraph.store import FollowStore
from followgraph.transport.auth import AuthConfigError, mint_token
from followgraph.transport.http_protocol import GuardedHttpToolsProtocol, connection_cap
from followgraph.transport.logs import configure_logging
from followgraph.transport.metrics import MULTIPROC_ENV, serve_metrics, workers_registry
from followgraph.transport.tracing_config import TracingConfigError, check_config, tracing_from_env
from followgraph.transport.web import DEMO_VIEWER, WEB_PROJECT, WebBuild, build_notice
from followgraph.transport.ws_protocol import GoingAwayWebSocketProtocol

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
    _check_before_start(settings)
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
        options = _uvicorn_options(settings)
        _log_serving(settings)
        # uvicorn re-raises the signal that stopped it; as an exception it lets the embedded
        # Redis be shut down cleanly below instead of dying with the process.
        signal.signal(signal.SIGTERM, exit_on_signal)
        if settings.workers == 1:
            _serve_one(settings, watchdog, options)
        else:
            _serve_workers(settings, watchdog, options)
        if watchdog is not None and watchdog.problem() is not None:
            raise fail(f"Stopped: {watchdog.problem()}.", 1)


def _check_before_start(settings: Settings) -> None:
    """What can be said before the embedded Redis starts and the demo loads, rather than after."""
    try:
        check_config(os.environ)
    except TracingConfigError as exc:
        raise fail(f"Configuration error: {exc}") from None
    _check_port(settings.host, settings.port, "--port or FOLLOWGRAPH_PORT")
    if settings.metrics_port is not None:
        _check_metrics_port(settings)
        _check_port(settings.host, settings.metrics_port, "--metrics-port or FOLLOWGRAPH_METRICS_PORT")
    dist = settings.web_dist or WEB_PROJECT / "dist"
    notice = build_notice(dist, WebBuild.find(dist))
    if notice:
        console.print(notice, style="yellow")


def _uvicorn_options(settings: Settings) -> dict[str, Any]:
    limits = settings.read_limits
    cap = connection_cap(limits.max_connections)
    if cap < limits.max_connections:
        log.warning(
            "open-file limit: at most %d connections per process, not %d", cap, limits.max_connections
        )
        limits = dataclasses.replace(limits, max_connections=cap)
    return {
        "host": settings.host,
        "port": settings.port,
        "log_config": None,
        "access_log": False,
        "lifespan": "on",
        "loop": "uvloop",
        # httptools with header and body deadlines and a header size limit (transport/http_protocol.py).
        "http": GuardedHttpToolsProtocol.with_limits(limits),
        # Sockets close with 1001 (going away) when the server stops (transport/ws_protocol.py).
        "ws": GoingAwayWebSocketProtocol,
        # Events are a few hundred bytes: compressing them saves little, and each socket's
        # compressor and decompressor cost about 45 KB (of about 100 KB per subscription).
        "ws_per_message_deflate": False,
        # A WebSocket message may be as large as an HTTP body, no larger (1009 beyond it).
        "ws_max_size": settings.max_body_bytes,
        # Requests and WebSocket upgrades beyond this many connections are answered 503 (but for
        # the probes: transport/http_protocol.py).
        "limit_concurrency": limits.max_connections,
        "timeout_graceful_shutdown": 10,
    }


def _serve_one(settings: Settings, watchdog: RedisWatchdog | None, options: dict[str, Any]) -> None:
    from followgraph.server.app import create_app

    application = create_app(settings, watchdog=watchdog, tracing=tracing_from_env())
    with _metrics_port(settings, application.state.metrics.registry):
        uvicorn.run(application, **options)


def _serve_workers(settings: Settings, watchdog: RedisWatchdog | None, options: dict[str, Any]) -> None:
    os.environ.update(settings.to_env())
    # Every worker writes its metrics here and /metrics adds them up.
    metrics_dir = settings.data_dir.resolve() / "metrics"
    shutil.rmtree(metrics_dir, ignore_errors=True)
    private_directory(metrics_dir)
    os.environ[MULTIPROC_ENV] = str(metrics_dir)
    if watchdog is not None:  # the workers use the embedded Redis this process owns
        os.environ[OWNER_ENV] = str(os.getpid())
    registry = workers_registry()
    if watchdog is not None:
        registry.register(watchdog)
    with _metrics_port(settings, registry):
        uvicorn.run("followgraph.server.app:app_from_env", factory=True, workers=settings.workers, **options)


def _log_serving(settings: Settings) -> None:
    if settings.port:
        log.info(
            "serving http://%s:%d/graphql with %d worker(s)", settings.host, settings.port, settings.workers
        )
    else:
        log.info(
            "serving /graphql on %s, on a port the system chooses, with %d worker(s)",
            settings.host,
            settings.workers,
        )


def _check_port(host: str, port: int, option: str) -> None:
    """Exit 1 with a message naming `option` when `host`:`port` cannot be listened on (taken, or
    not an address of this machine). uvicorn binds it again a moment later."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        hint = f" Choose another port with {option}." if exc.errno == errno.EADDRINUSE else ""
        raise fail(f"Cannot listen on {host}:{port}: {exc.strerror or exc}.{hint}", 1) from None


def _check_metrics_port(settings: Settings) -> None:
    """Exit 1 when /metrics would be served on the API's own port."""
    if settings.metrics_port == settings.port:
        raise fail(
            f"--metrics-port or FOLLOWGRAPH_METRICS_PORT is {settings.port}, the API's port (--port or "
            "FOLLOWGRAPH_PORT): choose another port, or leave it unset to serve /metrics on the API's port.",
            1,
        )


@contextlib.contextmanager
def _metrics_port(settings: Settings, registry: CollectorRegistry) -> Iterator[None]:
    """/metrics on settings.metrics_port for the duration, when one is set."""
    if settings.metrics_port is None:
        yield
        return
    try:
        server = serve_metrics(settings.host, settings.metrics_port, registry)
    except OSError as exc:
        raise fail(f"Cannot serve metrics on port {settings.metrics_port}: {exc.strerror}.", 1) from None
    log.info("metrics on http://%s:%d/metrics", settings.host, settings.metrics_port)
    try:
        yield
    finally:
        server.shutdown()


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
