"""The operator's commands: `verify` and `repair` of the derived sets, `reindex` of search, `token`
for a user, `cluster` (a local Redis Cluster) and `export-schema`."""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from followgraph.cli.support import (
    DataDir,
    RedisUrl,
    StoreUnavailable,
    console,
    counted,
    exit_on_signal,
    fail,
    on_store,
    progress_bar,
    redis_for,
    settings_from,
    with_store,
)
from followgraph.server.embedded import redis_url as resolve_redis_url
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServerError
from followgraph.server.settings import ConfigError, Settings
from followgraph.store import FollowStore, StoreError
from followgraph.store.graph.repair import Report, verify

if TYPE_CHECKING:
    from followgraph.transport.auth import AuthConfig

# The longest token lifetime accepted unless FOLLOWGRAPH_JWT_MAX_LIFETIME says otherwise.
_LONGEST_TOKEN = Settings().jwt_max_lifetime


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


def repair(redis_url: RedisUrl = None, data_dir: DataDir = None) -> None:
    """Rewrite fans and mutual entries from the following sets, the source of truth.

    Best run when writes are quiet; a second run finds nothing left to do.
    """
    report = _check_graph(True, redis_url, data_dir)
    repaired = counted(report.repaired, "entry", "entries")
    console.print(f"Repaired {repaired}." if report.repaired else "Nothing to repair.")


def reindex(redis_url: RedisUrl = None, data_dir: DataDir = None) -> None:
    """Rebuild the search index (searchUsers) from every registered user.

    serve builds it the first time and keeps it from the change log; run this after the log's cap
    dropped events the index had not read, or to mend an index that disagrees with the names.
    Best run when writes are quiet: a user renamed while it runs may be indexed under the old name
    until the next change (or a second run).
    """
    # With the index's feeder comes the SQL copy's (server/sync.py): loaded by this command only.
    from followgraph.server.search import build_index

    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    with redis_for(settings) as settings, progress_bar("users") as bar:
        task = bar.add_task("index", total=None)

        async def advance(users: int) -> None:
            bar.advance(task, users)

        async def work(store: FollowStore) -> int:
            return await build_index(store, progress=advance)

        users = asyncio.run(with_store(settings, work))
    console.print(f"Indexed {counted(users, 'user')} for search.")


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
    from followgraph.transport.auth import AuthConfigError, mint_token

    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    config = _auth_config(settings)
    lifetime = token_lifetime(ttl, config)
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


def token_lifetime(ttl: int | None, config: AuthConfig, default: int = 86400) -> int:
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


def cluster_command(
    masters: Annotated[int, typer.Option(min=1, max=16, help="Master nodes.")] = 3,
    replicas: Annotated[
        int,
        typer.Option(
            min=0,
            max=3,
            help="Replicas of each master: a master killed fails over to one (try it with "
            "FOLLOWGRAPH_WRITE_REPLICAS=1 and FOLLOWGRAPH_READ_FROM_REPLICAS=1).",
        ),
    ] = 0,
    port: Annotated[
        int, typer.Option(min=1024, max=55535 - 64, help="Port of the first node; the others follow.")
    ] = 7000,
    data_dir: DataDir = None,
) -> None:
    """Run a local Redis Cluster in the foreground, to try cluster mode (Ctrl-C stops it).

    Each start forms a new, empty cluster; nothing is kept. Serve on it with
    --redis-url redis+cluster://127.0.0.1:PORT.
    """
    settings = settings_from(data_dir=data_dir)
    nodes = masters * (1 + replicas)
    cluster = LocalCluster(
        directory=settings.data_dir / "cluster",
        masters=masters,
        replicas=replicas,
        ports=tuple(range(port, port + nodes)),
    )
    try:
        cluster.start()
    except RedisServerError as exc:
        raise fail(f"Could not start the cluster: {exc}", 1) from None
    signal.signal(signal.SIGTERM, exit_on_signal)
    each = f", {replicas} replica(s) each" if replicas else ""
    ports = f"ports {port} to {port + nodes - 1}"
    console.print(f"Redis Cluster of {masters} masters{each} ready, on {ports}. Ctrl-C stops it.")
    typer.echo(cluster.url)
    try:
        while cluster.running:
            time.sleep(0.5)
        raise fail("A cluster node exited; stopping the others.", 1)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


def export_schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
    federation: Annotated[
        bool,
        typer.Option(
            "--federation",
            help="The subgraph's schema (FOLLOWGRAPH_FEDERATION=1), with its federation directives, "
            "as _service { sdl } gives it to a gateway.",
        ),
    ] = False,
) -> None:
    """Print the GraphQL schema (SDL)."""
    from followgraph.schema import schema
    from followgraph.schema.federation import build_subgraph_schema

    served = build_subgraph_schema() if federation else schema
    sdl = served.as_str() + "\n"
    if output is None:
        typer.echo(sdl, nl=False)
    else:
        try:
            output.write_text(sdl)
        except OSError as exc:
            raise fail(f"Cannot write {output}: {exc.strerror or exc}.", 1) from None
