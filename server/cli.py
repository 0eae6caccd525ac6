"""The `followgraph` command line."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import typer
import uvicorn

from server.auth import mint_token
from server.logs import configure_logging
from server.redis_server import RedisServer, RedisServerError
from server.settings import ConfigError, Settings

log = logging.getLogger("followgraph")

app = typer.Typer(
    help="FollowGraph: a GraphQL follow graph on Redis.", no_args_is_help=True, add_completion=False
)

RedisUrl = Annotated[
    str | None,
    typer.Option(help="Redis or Redis Cluster URL [env FOLLOWGRAPH_REDIS_URL]; default: an embedded Redis."),
]
DataDir = Annotated[
    Path | None,
    typer.Option(help="Where the embedded Redis and the JWT secret live [env FOLLOWGRAPH_DATA_DIR]."),
]


def _settings(**overrides: Any) -> Settings:
    try:
        return Settings.from_env(None, **overrides)
    except ConfigError as exc:
        typer.echo(f"Configuration error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to listen on [env FOLLOWGRAPH_HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="TCP port [env FOLLOWGRAPH_PORT].")] = None,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
    production: Annotated[
        bool | None,
        typer.Option("--production/--development", help="Production mode [env FOLLOWGRAPH_PRODUCTION]."),
    ] = None,
    log_level: Annotated[
        str | None, typer.Option(help="debug, info, warning or error [env FOLLOWGRAPH_LOG_LEVEL].")
    ] = None,
) -> None:
    """Serve the GraphQL API (GraphiQL at /graphql in a browser)."""
    from server.app import create_app

    settings = _settings(
        host=host,
        port=port,
        redis_url=redis_url,
        data_dir=data_dir,
        production=production,
        log_level=log_level,
    )
    configure_logging(settings.log_level)
    embedded: RedisServer | None = None
    if settings.redis_url is None:
        embedded = RedisServer(settings.data_dir / "redis", appendonly=True)
        try:
            embedded.start()
        except RedisServerError as exc:
            typer.echo(f"Could not start the embedded Redis: {exc}", err=True)
            raise typer.Exit(1) from None
        settings = settings.with_(redis_url=embedded.url)
        log.info("embedded redis at %s (data in %s)", embedded.url, embedded.directory)
    try:
        application = create_app(settings)
        log.info("serving http://%s:%d/graphql", settings.host, settings.port)
        uvicorn.run(application, host=settings.host, port=settings.port, log_config=None, lifespan="on")
    except ConfigError as exc:
        typer.echo(f"Configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    finally:
        if embedded is not None:
            embedded.stop()


@app.command()
def token(
    user_id: Annotated[str, typer.Argument(help="The user id the token speaks for (its `sub`).")],
    admin: Annotated[bool, typer.Option(help="Grant the admin scope (needed by upsertUser).")] = False,
    ttl: Annotated[int, typer.Option(help="Lifetime in seconds.")] = 86400,
    data_dir: DataDir = None,
) -> None:
    """Print a bearer token signed with the configured key, to try the API."""
    settings = _settings(data_dir=data_dir)
    try:
        print(mint_token(settings.auth_config(), user_id, admin=admin, ttl_seconds=ttl))
    except (ConfigError, ValueError) as exc:
        typer.echo(f"Cannot mint a token: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command("export-schema")
def export_schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the GraphQL schema (SDL)."""
    from schema import schema

    sdl = schema.as_str() + "\n"
    if output is None:
        print(sdl, end="")
    else:
        output.write_text(sdl)


def main() -> None:
    app()
