"""The Redis a command uses: the configured URL, or the embedded server of the data directory."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from followgraph.server.redis_server import RedisServer, answers, socket_path_for
from followgraph.server.settings import Settings
from followgraph.server.watchdog import RedisWatchdog

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Embedded:
    """Where the Redis is, and the watchdog of the embedded one when this process started it."""

    url: str
    watchdog: RedisWatchdog | None = None


@contextmanager
def redis_url(settings: Settings) -> Iterator[str]:
    """Yield a Redis URL: settings.redis_url, the embedded Redis another followgraph process already
    runs on this data directory, or an embedded Redis started here and stopped on exit."""
    with embedded_redis(settings) as embedded:
        yield embedded.url


@contextmanager
def embedded_redis(
    settings: Settings, *, watch: bool = False, on_give_up: Callable[[], None] | None = None
) -> Iterator[Embedded]:
    """Like redis_url(); with `watch`, an embedded Redis started here is restarted when it exits."""
    if settings.redis_url is not None:
        yield Embedded(settings.redis_url)
        return
    directory = settings.data_dir / "redis"
    socket = socket_path_for(directory)
    if answers(socket):
        log.info("using the embedded redis already running at %s", socket)
        yield Embedded(f"unix://{socket}")
        return
    server = RedisServer(directory, appendonly=True, appendfsync=settings.appendfsync)
    server.start()
    log.info("embedded redis started at %s (data in %s)", server.url, directory)
    watchdog = RedisWatchdog(server, on_give_up=on_give_up) if watch else None
    if watchdog is not None:
        watchdog.start()
    try:
        yield Embedded(server.url, watchdog)
    finally:
        if watchdog is not None:
            watchdog.stop()
        server.stop()
        log.info("embedded redis stopped")
