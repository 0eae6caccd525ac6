"""A primary and a live replica, real servers of the tests' binary, for the writes that wait for
replicas (store/redis/replicas.py): the replica paused (SIGSTOP) stops confirming, and the
primary counts the WAITs it was sent."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from followgraph.server.redis_server import RedisServer
from tests.server.processes import free_ports


@dataclass
class Replicated:
    primary: RedisServer
    replica: RedisServer

    @property
    def url(self) -> str:
        return self.primary.url

    def client(self) -> redis.Redis:
        return redis.Redis(unix_socket_path=str(self.primary.socket_path), decode_responses=True)

    def calls(self, command: str) -> int:
        """How many times the primary ran `command` since it started."""
        client = self.client()
        try:
            stats = client.info("commandstats").get(f"cmdstat_{command.lower()}", {})
        finally:
            client.close()
        return int(stats.get("calls", 0))

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The replica frozen: connected, but confirming nothing, as a replica on a stalled machine."""
        assert self.replica.process is not None
        os.kill(self.replica.process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.replica.process.pid, signal.SIGCONT)

    def wait_synced(self, timeout: float = 10.0) -> None:
        """Until the replica has synced and confirms writes."""
        client = self.client()
        try:
            deadline = time.monotonic() + timeout
            while not (client.set("synced", "1") and client.wait(1, 100) >= 1):
                assert time.monotonic() < deadline, "the replica did not catch up"
            client.delete("synced")
        finally:
            client.close()


@contextmanager
def primary_and_replica(directory: Path) -> Iterator[Replicated]:
    """A primary (on a Unix socket and a TCP port) with one replica that has synced."""
    port = free_ports(1)[0]
    primary = RedisServer(directory / "primary", port=port)
    replica = RedisServer(directory / "replica", extra_args=("--replicaof", "127.0.0.1", str(port)))
    primary.start()
    try:
        replica.start()
        try:
            pair = Replicated(primary, replica)
            pair.wait_synced()
            yield pair
        finally:
            replica.kill()
    finally:
        primary.kill()
