from __future__ import annotations

from pathlib import Path

import pytest
import redis

from followgraph.server.redis_server import RedisServer, RedisServerError, answers, socket_path_for


def test_an_aof_server_finds_its_data_after_a_restart(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", appendonly=True)
    with server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        client.zadd("z", {"a": 1})
        client.close()
    assert not server.running
    assert not answers(server.socket_path)
    with RedisServer(tmp_path / "redis", appendonly=True) as again:
        client = redis.Redis(unix_socket_path=str(again.socket_path), decode_responses=True)
        assert client.zrange("z", 0, -1, withscores=True) == [("a", 1.0)]
        client.close()


def test_without_aof_nothing_survives(tmp_path: Path) -> None:
    with RedisServer(tmp_path) as server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        client.set("k", "v")
        client.close()
    with RedisServer(tmp_path) as server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        assert client.get("k") is None
        client.close()


def test_a_long_directory_gets_a_short_socket_path_that_is_stable(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    path = socket_path_for(deep)
    assert len(str(path)) < 108
    assert socket_path_for(deep) == path
    with RedisServer(deep) as server:
        assert server.socket_path == path
        assert answers(path)


def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    server = RedisServer(tmp_path, extra_args=("--no-such-option", "1"))
    with pytest.raises(RedisServerError, match="exited at start"):
        server.start()


def test_a_missing_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOLLOWGRAPH_REDIS_SERVER", "/nonexistent/redis-server")
    from followgraph.server.redis_server import find_redis_server

    with pytest.raises(RedisServerError, match="FOLLOWGRAPH_REDIS_SERVER"):
        find_redis_server()
