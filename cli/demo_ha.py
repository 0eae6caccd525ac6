"""`followgraph serve --demo-ha`: the server on a primary, a replica and three Sentinels of its own
(server/redis_sentinel.py, from the embedded server's binary), so that a failover can be tried on
a laptop. A thread of the command logs each failover and starts a Redis that was killed again, as
a replica of the new primary, once the Sentinels have moved on from it."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import typer

from followgraph.cli.support import console, fail
from followgraph.server.redis_cluster import port_is_free
from followgraph.server.redis_sentinel import HOST, LocalSentinel
from followgraph.server.redis_server import RedisServerError
from followgraph.server.settings import Settings

log = logging.getLogger("followgraph")

# The primary's port by default (fixed, so that the commands of the docs work as written); the
# replica's is the next, and the three Sentinels' are 20000 above those.
DEFAULT_PORT = 6390
SENTINEL_OFFSET = 20000


def ha_ports(port: int) -> tuple[int, ...]:
    """The primary's, the replica's and the three Sentinels' ports, from the primary's."""
    return (port, port + 1, *(port + SENTINEL_OFFSET + i for i in range(3)))


# How long the Sentinels wait before they call a silent primary down and fail over.
DOWN_AFTER_MS = 2000
# How often the thread asks the Sentinels which Redis is the primary.
WATCH_SECONDS = 0.5


def pid_file(data_dir: Path, port: int) -> Path:
    return data_dir / "ha" / str(port) / "redis.pid"


@contextlib.contextmanager
def demo_ha(settings: Settings, port: int = DEFAULT_PORT) -> Iterator[str]:
    """The redis+sentinel:// URL of a primary (on `port`), a replica and Sentinels started for the
    duration."""
    ports = ha_ports(port)
    taken = [port for port in ports if not port_is_free(port)]
    if taken:
        raise fail(
            f"--demo-ha listens on ports {', '.join(map(str, ports))}; taken: {taken} "
            "(choose others with --demo-ha-port).",
            1,
        )
    local = LocalSentinel(settings.data_dir / "ha", ports=ports, appendonly=True, down_after_ms=DOWN_AFTER_MS)
    try:
        local.start()
    except RedisServerError as exc:
        raise fail(f"Could not start the primary, the replica and the Sentinels: {exc}", 1) from None
    _announce(local, settings.data_dir)
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(local, stop), name="demo-ha", daemon=True)
    watcher.start()
    try:
        yield local.url
    finally:
        stop.set()
        watcher.join(5)
        local.stop()


def _announce(local: LocalSentinel, data_dir: Path) -> None:
    primary, replica, *sentinels = local.ports
    console.print(
        f"Redis primary on {HOST}:{primary}, replica on {HOST}:{replica}, Sentinels on "
        f"{', '.join(map(str, sentinels))}: {local.url}",
        markup=False,
        highlight=False,
    )
    typer.echo(f"To fail over, kill the primary: kill -9 $(cat {pid_file(data_dir, primary)})")


def _watch(local: LocalSentinel, stop: threading.Event) -> None:
    """Log failovers and Redis that exit; start those again once the Sentinels moved on."""
    primary = local.primary_port()
    gone: set[int] = set()
    while not stop.wait(WATCH_SECONDS):
        for server in local.servers:
            if not server.running and server.port not in gone:
                gone.add(server.port)
                log.warning("the Redis on %s:%d exited", HOST, server.port)
        now = local.primary_port()
        if now is not None and now != primary:
            log.warning("failover: the Sentinels promoted %s:%d to primary", HOST, now)
            primary = now
        try:
            for port in local.heal():
                gone.discard(port)
                log.info("the Redis on %s:%d is back, as a replica of %s:%d", HOST, port, HOST, primary)
        except RedisServerError as exc:
            log.warning("could not start a Redis of --demo-ha again: %s", exc)
