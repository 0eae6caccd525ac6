"""The Redis a command uses: the configured URL, or the embedded server of the data directory."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from followgraph.server.redis_server import RedisServer, answers, socket_path_for
from followgraph.server.settings import Settings

log = logging.getLogger(__name__)


@contextmanager
def redis_url(settings: Settings) -> Iterator[str]:
    """Yield a Redis URL: settings.redis_url, the embedded Redis another followgraph process already
    runs on this data directory, or an embedded Redis started here and stopped on exit."""
    if settings.redis_url is not None:
        yield settings.redis_url
        return
    directory = settings.data_dir / "redis"
    socket = socket_path_for(directory)
    if answers(socket):
        log.info("using the embedded redis already running at %s", socket)
        yield f"unix://{socket}"
        return
    server = RedisServer(directory, appendonly=True, appendfsync=settings.appendfsync)
    server.start()
    log.info("embedded redis started at %s (data in %s)", server.url, directory)
    try:
        yield server.url
    finally:
        server.stop()
        log.info("embedded redis stopped")
