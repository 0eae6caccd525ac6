"""The `followgraph` command line."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import errno
import io
import logging
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, Annotated, Any

import typer
import uvicorn
from prometheus_client import CollectorRegistry

from followgraph.cli import changes as cli_log
from followgraph.cli.demo import (
    DEFAULT_SEED,
    DEFAULT_USERS,
    DemoSpec,
    is_empty,
    load_demo,
    load_demo_controls,
)
from followgraph.cli.support import (
    DataDir,
    FormatOption,
    RedisUrl,
    StoreUnavailable,
    console,
    counted,
    env_help,
    exit_on_signal,
    fail,
    on_store,
    progress_bar,
    redis_for,
    settings_from,
    with_store,
)
from followgraph.cli.transfer import (
    CONTROL_FIELDS,
    EDGE_FIELDS,
    USER_FIELDS,
    Format,
    OnError,
    Summary,
    control_rows,
    edge_rows,
    export_controls,
    export_edges,
    export_users,
    import_controls,
    import_edges,
    import_users,
    user_rows,
)
from followgraph.server.embedded import OWNER_ENV, DataDirInUseError, Embedded, embedded_redis
from followgraph.server.embedded import redis_url as resolve_redis_url
from followgraph.server.private import make_private, private_directory
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServerError
from followgraph.server.settings import ConfigError, Settings
from followgraph.store import FollowStore, StoreError
from followgraph.store.graph.repair import Report, verify
from followgraph.transport.auth import DEFAULT_MAX_LIFETIME, AuthConfig, AuthConfigError, mint_token
from followgraph.transport.http_protocol import GuardedHttpToolsProtocol, connection_cap
from followgraph.transport.logs import configure_logging
from followgraph.transport.metrics import MULTIPROC_ENV, serve_metrics, workers_registry
from followgraph.transport.web import DEMO_VIEWER, WEB_PROJECT, WebBuild, build_notice
from followgraph.transport.ws_protocol import GoingAwayWebSocketProtocol

log = logging.getLogger("followgraph")
# Messages wrap at the terminal's width; piped or redirected, a message stays on one line.

app = typer.Typer(
    help="FollowGraph: a GraphQL follow graph on Redis.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


class Kind(enum.Enum):
    EDGES = "edges"
    USERS = "users"
    CONTROLS = "controls"

    @property
    def fields(self) -> tuple[str, ...]:
        return {Kind.EDGES: EDGE_FIELDS, Kind.USERS: USER_FIELDS, Kind.CONTROLS: CONTROL_FIELDS}[self]

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


DEMO_TOKEN_TTL = 7 * 86400


def _print_welcome(settings: Settings, users: int = DEFAULT_USERS, *, serving: bool = False) -> None:
    """A token of the demo viewer (and, for serve, where the server listens), or why no token."""
    typer.echo()
    if serving:
        typer.echo(_where(settings))
    viewer = DEMO_VIEWER if int(DEMO_VIEWER) <= users else str(users)
    try:
        config = settings.auth_config()
        token = mint_token(config, viewer, ttl_seconds=_lifetime(None, config, DEMO_TOKEN_TTL))
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


@app.command(short_help="Serve the API, the web app (/) and GraphiQL (/graphql).")
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
) -> None:
    """Serve the GraphQL API, the web app at / and GraphiQL at /graphql."""
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
    )
    configure_logging(settings.log_level)
    # Said now, before the embedded Redis starts and the demo loads, rather than after.
    _check_port(settings.host, settings.port, "--port or FOLLOWGRAPH_PORT")
    if settings.metrics_port is not None:
        _check_metrics_port(settings)
        _check_port(settings.host, settings.metrics_port, "--metrics-port or FOLLOWGRAPH_METRICS_PORT")
    dist = settings.web_dist or WEB_PROJECT / "dist"
    notice = build_notice(dist, WebBuild.find(dist))
    if notice:
        console.print(notice, style="yellow")
    # A data directory an earlier version made (0755) holds the AOF, the SQL copy and the secret.
    make_private(settings.data_dir)
    with _watched_redis(settings) as (settings, embedded):
        try:
            settings.auth_config()
        except ConfigError as exc:
            raise fail(f"Configuration error: {exc}") from None
        # --demo or FOLLOWGRAPH_DEMO: the same demo mode either way.
        if settings.demo and not asyncio.run(_demo(settings, DemoSpec())):
            console.print("The store already has users: the demo graph was not loaded again.")
        if settings.demo:
            _print_welcome(settings, serving=True)
        limits = settings.read_limits
        cap = connection_cap(limits.max_connections)
        if cap < limits.max_connections:
            log.warning(
                "open-file limit: at most %d connections per process, not %d", cap, limits.max_connections
            )
            limits = dataclasses.replace(limits, max_connections=cap)
        options: dict[str, Any] = {
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
            # Requests beyond this many connections (or requests in progress) are answered 503.
            "limit_concurrency": limits.max_connections,
            "timeout_graceful_shutdown": 10,
        }
        _log_serving(settings)
        # uvicorn re-raises the signal that stopped it; as an exception it lets the embedded
        # Redis be shut down cleanly below instead of dying with the process.
        signal.signal(signal.SIGTERM, exit_on_signal)
        watchdog = embedded.watchdog
        if settings.workers == 1:
            from followgraph.server.app import create_app

            application = create_app(settings, watchdog=watchdog)
            with _metrics_port(settings, application.state.metrics.registry):
                uvicorn.run(application, **options)
        else:
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
                uvicorn.run(
                    "followgraph.server.app:app_from_env", factory=True, workers=settings.workers, **options
                )
        if watchdog is not None and watchdog.problem() is not None:
            raise fail(f"Stopped: {watchdog.problem()}.", 1)


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


@app.command(short_help="Load a demo graph (power-law fans) into an empty store.")
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


def _count_rows(path: str, file_format: Format, first_column: str) -> int | None:
    """The data rows of the file, for the progress bar: blank lines and a CSV header do not count.
    NotUtf8 when the file is not UTF-8 text, before anything is imported."""
    if path == "-":
        return None
    rows = offset = 0
    with open(path, "rb") as f:
        for number, line in enumerate(f):
            _check_utf8(path, line, offset, number + 1)
            offset += len(line)
            if not line.strip():
                continue
            if number == 0 and file_format is Format.CSV:
                first = line.removeprefix(b"\xef\xbb\xbf").split(b",", 1)[0].strip()
                if first == first_column.encode():
                    continue
            rows += 1
    return rows


# utf-8-sig: files saved by spreadsheets start with a byte-order mark.
TEXT_ENCODING = "utf-8-sig"


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


def _report(summary: Summary, what: str) -> None:
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
    for error in summary.errors:
        console.print(f"  line {error.line:,}: {error.message}", markup=False, highlight=False)
    if summary.rejected > len(summary.errors):
        console.print(f"  ... and {counted(summary.rejected - len(summary.errors), 'more rejected row')}.")
    if summary.stopped_at is not None:
        console.print(f"[red]Stopped at line {summary.stopped_at:,}[/red]; rows before it were imported.")


@app.command("import", short_help="Import follows, users or controls from CSV or JSON Lines.")
def import_(
    path: Annotated[
        str, typer.Argument(metavar="FILE", help="A .csv or .jsonl file, or - for standard input.")
    ],
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
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Import follows, users or controls (blocks, mutes, pending requests): streaming, pipelined,
    with a progress bar; safe to re-run.

    Exits 1 when any row was rejected, 0 when every row was imported.
    """
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    source: contextlib.AbstractContextManager[IO[str]]
    try:
        file_format = fmt or Format.of(path, "csv" if path == "-" else None)
        total = _count_rows(path, file_format, kind.fields[0])
        source = _stdin_text() if path == "-" else open(path, encoding=TEXT_ENCODING, newline="")
    except NotUtf8 as exc:
        raise fail(str(exc), 1) from None
    except ValueError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"Cannot read {path}: {exc.strerror}.") from None
    with source as lines, redis_for(settings) as settings, progress_bar("rows", total) as bar:
        task = bar.add_task(f"import {kind.value}", total=total)

        def progress(rows: int) -> None:
            bar.update(task, completed=rows)

        async def work(store: FollowStore) -> Summary:
            if kind is Kind.USERS:
                rows = user_rows(lines, file_format)
                return await import_users(store, rows, on_error=on_error, progress=progress)
            if kind is Kind.CONTROLS:
                return await import_controls(
                    store,
                    control_rows(lines, file_format),
                    on_error=on_error,
                    register_missing=register_missing,
                    progress=progress,
                )
            return await import_edges(
                store,
                edge_rows(lines, file_format),
                on_error=on_error,
                register_missing=register_missing,
                progress=progress,
            )

        try:
            summary = asyncio.run(with_store(settings, work))
        except UnicodeDecodeError as exc:
            raise fail(_not_utf8(path, exc), 1) from None
    _report(summary, kind.noun)
    if summary.stopped_at is not None:
        raise typer.Exit(1)
    if summary.rejected:
        rows = counted(summary.rejected, "row was", "rows were")
        them = "it" if summary.rejected == 1 else "them"
        console.print(f"[yellow]{rows} rejected[/yellow]: fix {them} and run the import again.")
        raise typer.Exit(1)


@app.command(short_help="Export every follow, user or control to CSV or JSON Lines.")
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


_EXPORTERS = {Kind.EDGES: export_edges, Kind.USERS: export_users, Kind.CONTROLS: export_controls}


def _check_graph(fix: bool, redis_url: str | None, data_dir: Path | None) -> Report:
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    with redis_for(settings) as settings, progress_bar("users") as bar:
        task = bar.add_task("repair" if fix else "verify", total=None)

        async def work(store: FollowStore) -> Report:
            return await verify(store, fix=fix, progress=lambda users: bar.update(task, completed=users))

        report = asyncio.run(with_store(settings, work))
    console.print(f"Checked {counted(report.follows, 'follow')} of {counted(report.users, 'user')}.")
    for problem, count in sorted(report.problems.items(), key=lambda item: item[0].value):
        console.print(f"  {count:,} x {problem.value}", markup=False)
    for example in report.examples:
        console.print(f"    e.g. {example}", markup=False, highlight=False)
    return report


@app.command("verify", short_help="Check the fans and mutual sets against the following sets.")
def verify_command(redis_url: RedisUrl = None, data_dir: DataDir = None) -> None:
    """Check that every fans and mutual entry agrees with the following sets (reads only).

    Exits 1 when anything disagrees: run `followgraph repair`.
    """
    report = _check_graph(False, redis_url, data_dir)
    if report.clean:
        console.print("The graph is consistent.")
    else:
        console.print("[yellow]The graph has divergences: `followgraph repair` rewrites them.[/yellow]")
        raise typer.Exit(1)


@app.command(short_help="Rewrite the fans and mutual sets from the following sets.")
def repair(redis_url: RedisUrl = None, data_dir: DataDir = None) -> None:
    """Rewrite fans and mutual entries from the following sets, the source of truth.

    Best run when writes are quiet; a second run finds nothing left to do.
    """
    report = _check_graph(True, redis_url, data_dir)
    repaired = counted(report.repaired, "entry", "entries")
    console.print(f"Repaired {repaired}." if report.repaired else "Nothing to repair.")


_LONGEST_TOKEN = DEFAULT_MAX_LIFETIME


@app.command(short_help="Print a bearer token for a user id.")
def token(
    user_id: Annotated[
        str, typer.Argument(metavar="USER_ID", help="The user id the token speaks for (its `sub`).")
    ],
    admin: Annotated[bool, typer.Option(help="Grant the admin scope (needed by upsertUser).")] = False,
    ttl: Annotated[
        int | None,
        typer.Option(
            help="Lifetime in seconds, at most FOLLOWGRAPH_JWT_MAX_LIFETIME "
            f"({_LONGEST_TOKEN} seconds, {_LONGEST_TOKEN // 86400} days, unless set).",
            show_default="86400, or FOLLOWGRAPH_JWT_MAX_LIFETIME when shorter",
        ),
    ] = None,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Print a bearer token signed with the configured key, to try the API.

    Warns when the user is not registered in the store (the token is printed all the same),
    unless it is an admin token.
    """
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    config = _auth_config(settings)
    lifetime = _lifetime(ttl, config)
    try:
        minted = mint_token(config, user_id, admin=admin, ttl_seconds=lifetime)
    except ValueError as exc:  # the configuration is valid: what is refused is the lifetime
        raise fail(_ttl_refused(lifetime, config, exc)) from None
    except (AuthConfigError, StoreError) as exc:
        raise fail(f"Cannot mint a token: {exc}") from None
    if not admin:  # an admin token is for upsertUser: its user needs no profile
        _warn_unless_registered(settings, user_id)
    typer.echo(minted)


def _auth_config(settings: Settings) -> AuthConfig:
    try:
        return settings.auth_config()
    except ConfigError as exc:
        raise fail(f"Configuration error: {exc}") from None


def _lifetime(ttl: int | None, config: AuthConfig, default: int = 86400) -> int:
    """--ttl when given; else `default`, or the longest lifetime FOLLOWGRAPH_JWT_MAX_LIFETIME allows
    when that is shorter."""
    return min(default, config.max_lifetime_seconds) if ttl is None else ttl


def _ttl_refused(ttl: int, config: AuthConfig, exc: ValueError) -> str:
    """Why --ttl was refused, naming FOLLOWGRAPH_JWT_MAX_LIFETIME when that is the bound exceeded."""
    limit = config.max_lifetime_seconds
    if ttl > limit:
        return (
            f"Cannot mint a token: --ttl {ttl} is longer than FOLLOWGRAPH_JWT_MAX_LIFETIME allows "
            f"({limit} seconds): pass a shorter --ttl."
        )
    return f"Cannot mint a token: --ttl {ttl}: {exc}"


def _warn_unless_registered(settings: Settings, user_id: str) -> None:
    async def work(store: FollowStore) -> bool:
        return (await store.registered([user_id]))[0]

    try:
        with resolve_redis_url(settings) as url:
            registered = asyncio.run(on_store(replace(settings, redis_url=url), work))
    except (StoreUnavailable, RedisServerError, OSError) as exc:
        console.print(
            f"Could not check that user {user_id} is registered: {exc}", markup=False, style="yellow"
        )
        return
    if not registered:
        console.print(
            f"Warning: no user {user_id} is registered. The token is valid, but its viewer is null "
            "and its mutations fail until the user is registered (import or upsertUser).",
            markup=False,
            style="yellow",
        )


@app.command("cluster", short_help="Run a local Redis Cluster in the foreground.")
def cluster_command(
    masters: Annotated[int, typer.Option(min=1, max=16, help="Master nodes (no replicas).")] = 3,
    port: Annotated[
        int, typer.Option(min=1024, max=55535 - 16, help="Port of the first node; the others follow.")
    ] = 7000,
    data_dir: DataDir = None,
) -> None:
    """Run a local Redis Cluster in the foreground, to try cluster mode (Ctrl-C stops it).

    Each start forms a new, empty cluster; nothing is kept. Serve on it with
    --redis-url redis+cluster://127.0.0.1:PORT.
    """
    settings = settings_from(data_dir=data_dir)
    cluster = LocalCluster(
        directory=settings.data_dir / "cluster", masters=masters, ports=tuple(range(port, port + masters))
    )
    try:
        cluster.start()
    except RedisServerError as exc:
        raise fail(f"Could not start the cluster: {exc}", 1) from None
    signal.signal(signal.SIGTERM, exit_on_signal)
    console.print(f"Redis Cluster of {masters} masters ready. Ctrl-C stops it.")
    typer.echo(cluster.url)
    try:
        while cluster.running:
            time.sleep(0.5)
        raise fail("A cluster node exited; stopping the others.", 1)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


@app.command("export-schema")
def export_schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the GraphQL schema (SDL)."""
    from followgraph.schema import schema

    sdl = schema.as_str() + "\n"
    if output is None:
        typer.echo(sdl, nl=False)
    else:
        try:
            output.write_text(sdl)
        except OSError as exc:
            raise fail(f"Cannot write {output}: {exc.strerror or exc}.", 1) from None


app.command(short_help="Feed the SQL copy from the change log (apart from serve).")(cli_log.sync)
app.command(short_help="Rebuild an empty Redis from the SQL copy.")(cli_log.rebuild)
app.command(short_help="Compare the SQL copy with Redis (--repair-sql rewrites it).")(cli_log.reconcile)
app.add_typer(cli_log.events, name="events", short_help="Read the change log (events tail).")


def main() -> None:
    app()
