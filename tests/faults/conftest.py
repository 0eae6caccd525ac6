"""Fixtures of the fault suite: every test starts its own Redis servers, so it may stop, kill or
pause them without disturbing any other test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from followgraph.server.redis_server import RedisServer

StartRedis = Callable[..., RedisServer]


@pytest.fixture
def start_redis(tmp_path: Path) -> Iterator[StartRedis]:
    """start_redis(name="redis", **options): a started RedisServer in tmp_path/name, stopped at the end."""
    servers: list[RedisServer] = []

    def start(name: str = "redis", **options: Any) -> RedisServer:
        server = RedisServer(tmp_path / name, **options)
        servers.append(server)
        server.start()
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.kill()
