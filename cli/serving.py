"""Running the server for `followgraph serve` (cli/serve.py): the checks made before anything
starts (tracing's settings, the ports, the web app's build), uvicorn's options with the guarded
protocols, one process or several workers, and /metrics on a port of its own. Imported when the
server is served, so that the other commands do not load uvicorn and the app.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import shutil
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn
from prometheus_client import CollectorRegistry

from followgraph.cli.support import console, fail
from followgraph.server.embedded import OWNER_ENV
from followgraph.server.private import private_directory
from followgraph.server.settings import Settings
from followgraph.server.watchdog import RedisWatchdog
from followgraph.transport.http_protocol import GuardedHttpToolsProtocol, connection_cap
from followgraph.transport.metrics import MULTIPROC_ENV, serve_metrics, workers_registry
from followgraph.transport.tracing_config import TracingConfigError, check_config, tracing_from_env
from followgraph.transport.web import WEB_PROJECT, WebBuild, build_notice
from followgraph.transport.ws_protocol import GoingAwayWebSocketProtocol

log = logging.getLogger("followgraph")


def check_before_start(settings: Settings) -> None:
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


def uvicorn_options(settings: Settings) -> dict[str, Any]:
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


def serve_one(settings: Settings, watchdog: RedisWatchdog | None, options: dict[str, Any]) -> None:
    from followgraph.server.app import create_app

    application = create_app(settings, watchdog=watchdog, tracing=tracing_from_env())
    with _metrics_port(settings, application.state.metrics.registry):
        uvicorn.run(application, **options)


def serve_workers(settings: Settings, watchdog: RedisWatchdog | None, options: dict[str, Any]) -> None:
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


def log_serving(settings: Settings) -> None:
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
