"""A primary, its replicas and three Sentinels on this machine, from the embedded server's binary:
`followgraph serve --demo-ha` (a failover to try on a laptop) and the tests' failovers.

Each process is a `RedisServer` in a directory of its own, named after its port, with its pid in
`redis.pid` there: `kill -9 $(cat <dir>/<port>/redis.pid)` is a crash. The Sentinels watch the
primary under one service name; `redis+sentinel://127.0.0.1:P1,P2,P3/<service>` (`url`) is how
FollowGraph finds it. `start()` returns once the replicas have synced and every Sentinel knows the
primary, the replicas and the other two, so that a failover can begin at once. After a failover,
`heal()` starts a Redis that exited again, as a replica of the new primary.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import redis

from followgraph.server.redis_server import RedisServer, RedisServerError, Started, find_redis_server

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
SERVICE = "followgraph"
SENTINELS = 3


@dataclass
class SentinelServer(RedisServer):
    """A Redis Sentinel: a RedisServer in sentinel mode, watching `service` on `primary_port` with a
    quorum of 2, on a configuration file of its own that it rewrites as it learns."""

    service: str = SERVICE
    primary_port: int = 0
    down_after_ms: int = 1000
    failover_timeout_ms: int = 5000

    @property
    def config_path(self) -> Path:
        return self.directory / "sentinel.conf"

    def command(self) -> list[str]:
        # The configuration file comes first, then the mode; the options after are RedisServer's.
        redis_server, *options = super().command()
        return [redis_server, str(self.config_path.resolve()), "--sentinel", *options]

    def start(self, timeout: float = 15.0) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = self.service
        self.config_path.write_text(
            f"sentinel monitor {name} {HOST} {self.primary_port} 2\n"
            f"sentinel down-after-milliseconds {name} {self.down_after_ms}\n"
            f"sentinel failover-timeout {name} {self.failover_timeout_ms}\n"
            f"sentinel parallel-syncs {name} 1\n"
        )
        super().start(timeout)


@dataclass
class LocalSentinel(Started):
    """A primary (`ports[0]`) and `replicas` replicas (the next ports) watched by three Sentinels
    (the last three), all under `directory`. `appendonly` gives the Redis an AOF; `down_after_ms`
    is how long the Sentinels wait before they call the primary down and fail over."""

    directory: Path
    ports: tuple[int, ...]
    replicas: int = 1
    service: str = SERVICE
    appendonly: bool = False
    down_after_ms: int = 1000
    failover_timeout_ms: int = 5000
    binary: str = field(default_factory=find_redis_server)
    servers: list[RedisServer] = field(default_factory=list, init=False)
    sentinels: list[SentinelServer] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if len(self.ports) != 1 + self.replicas + SENTINELS:
            raise ValueError(
                f"Give {1 + self.replicas + SENTINELS} ports: the primary's, the replicas', the Sentinels'."
            )

    @property
    def url(self) -> str:
        hosts = ",".join(f"{HOST}:{sentinel.port}" for sentinel in self.sentinels)
        return f"redis+sentinel://{hosts}/{self.service}"

    def _server(self, port: int, *extra: str) -> RedisServer:
        directory = self.directory / str(port)
        return RedisServer(
            directory,
            port=port,
            appendonly=self.appendonly,
            extra_args=("--pidfile", str((directory / "redis.pid").resolve()), *extra),
            binary=self.binary,
        )

    def start(self, timeout: float = 30.0) -> None:
        """Start the five processes; RedisServerError if they are not ready within `timeout`."""
        deadline = time.monotonic() + timeout
        primary, *replicas = self.ports[: 1 + self.replicas]
        watching = self.ports[1 + self.replicas :]
        self.servers = [self._server(primary)]
        self.servers += [self._server(port, "--replicaof", HOST, str(primary)) for port in replicas]
        self.sentinels = [
            SentinelServer(
                self.directory / str(port),
                port=port,
                binary=self.binary,
                service=self.service,
                primary_port=primary,
                down_after_ms=self.down_after_ms,
                failover_timeout_ms=self.failover_timeout_ms,
            )
            for port in watching
        ]
        try:
            for server in [*self.servers, *self.sentinels]:
                server.start()
            self._wait("the replicas to sync", deadline, lambda: all(map(self._synced, replicas)))
            self._wait("the Sentinels to know each other", deadline, self._watching)
        except BaseException:
            self.kill()
            raise
        log.info("primary, replica and sentinels ready", extra={"ports": list(self.ports)})

    def _synced(self, port: int) -> bool:
        info = self._ask(port, lambda client: client.info("replication"))
        return bool(info.get("master_link_status") == "up")

    def _watching(self) -> bool:
        """Every Sentinel names the primary, sees the replicas and knows the other Sentinels."""
        for sentinel in self.sentinels:
            master = self._ask(sentinel.port, lambda client: client.sentinel_master(self.service))
            if (
                int(master["num-slaves"]) < self.replicas
                or int(master["num-other-sentinels"]) < SENTINELS - 1
            ):
                return False
        return True

    @staticmethod
    def _ask(port: int, question: Callable[[redis.Redis], Any]) -> Any:
        client = redis.Redis(host=HOST, port=port, socket_timeout=1.0, decode_responses=True)
        try:
            return question(client)
        finally:
            client.close()

    @staticmethod
    def _wait(what: str, deadline: float, ready: Callable[[], bool]) -> None:
        while True:
            try:
                if ready():
                    return
            except (redis.RedisError, OSError, KeyError):
                pass
            if time.monotonic() > deadline:
                raise RedisServerError(f"Gave up waiting for {what}.")
            time.sleep(0.1)

    def primary_port(self) -> int | None:
        """The port of the primary as the first Sentinel that answers names it; None if none does."""
        for sentinel in self.sentinels:
            try:
                address = self._ask(
                    sentinel.port, lambda client: client.sentinel_get_master_addr_by_name(self.service)
                )
            except (redis.RedisError, OSError):
                continue
            if address:
                return int(cast("tuple[str, int]", address)[1])
        return None

    def server(self, port: int) -> RedisServer:
        """The Redis of the set listening on `port`."""
        return next(server for server in self.servers if server.port == port)

    def heal(self) -> list[int]:
        """Start again, as replicas of the primary the Sentinels name, the Redis that exited once
        the Sentinels have moved on from them; the ports started."""
        primary = self.primary_port()
        started = []
        for i, server in enumerate(self.servers):
            if server.running or primary is None or server.port == primary:
                continue
            base = server.extra_args[:2]  # its pid file
            again = dataclasses.replace(server, extra_args=(*base, "--replicaof", HOST, str(primary)))
            again.start()
            self.servers[i] = again
            started.append(server.port)
        return started

    @property
    def running(self) -> bool:
        return all(server.running for server in [*self.servers, *self.sentinels])

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the Sentinels, then the Redis (SIGTERM)."""
        for server in [*self.sentinels, *self.servers]:
            server.stop(timeout)

    def kill(self) -> None:
        """Stop every process at once (SIGKILL)."""
        for server in [*self.sentinels, *self.servers]:
            server.kill()
