"""A real Redis Cluster on this machine: N master processes (no replicas) for the tests and the benchmark.

Every node is a `RedisServer` with cluster mode on, listening on 127.0.0.1 (and on its own unix
socket). `LocalCluster.start()` forms a fresh cluster each time: it assigns the 16384 hash slots in
even, contiguous ranges, introduces the nodes to each other and waits until they all agree.
"""

from __future__ import annotations

import logging
import random
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from followgraph.server.redis_server import RedisServer, RedisServerError, Started, find_redis_server

log = logging.getLogger(__name__)

SLOTS = 16384
HOST = "127.0.0.1"
# A cluster node on port p also listens on p + 10000 for the cluster bus.
BUS_PORT_OFFSET = 10000
_PORT_RANGE = range(20000, 30000)
_START_ATTEMPTS = 3


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def free_cluster_ports(n: int) -> list[int]:
    """`n` distinct ports in 20000..29999, in random order, where both p and p + 10000 are free."""
    if n < 0:
        raise ValueError("n must not be negative")
    candidates = list(_PORT_RANGE)
    random.SystemRandom().shuffle(candidates)
    ports: list[int] = []
    for port in candidates:
        if len(ports) == n:
            break
        if port_is_free(port) and port_is_free(port + BUS_PORT_OFFSET):
            ports.append(port)
    if len(ports) < n:
        raise RedisServerError(f"Found only {len(ports)} of {n} free cluster port pairs.")
    return ports


def slot_ranges(masters: int) -> list[range]:
    """The slots of each master: contiguous ranges of (nearly) equal size covering all 16384."""
    if masters < 1:
        raise ValueError("A cluster needs at least one master.")
    return [range(i * SLOTS // masters, (i + 1) * SLOTS // masters) for i in range(masters)]


def _covered_slots(cluster_slots: Any) -> tuple[int, bool]:
    """How many slots a CLUSTER SLOTS reply assigns, and whether every owner has the address HOST."""
    covered = 0
    addressed = True
    for entry in cluster_slots:
        start, end, owner = int(entry[0]), int(entry[1]), entry[2]
        covered += end - start + 1
        ip = owner[0].decode() if isinstance(owner[0], bytes) else str(owner[0])
        addressed = addressed and ip == HOST
    return covered, addressed


@dataclass
class LocalCluster(Started):
    """`masters` cluster-mode redis-server processes under `directory`, one slot range each.

    `ports` fixes the client ports (each also needs port + 10000 for the cluster bus); left empty,
    free ones are picked, and picked again if a node finds its port taken at start.
    """

    directory: Path
    masters: int = 3
    ports: tuple[int, ...] = ()
    node_timeout_ms: int = 5000
    binary: str = field(default_factory=find_redis_server)
    nodes: list[RedisServer] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.masters < 1:
            raise ValueError("A cluster needs at least one master.")
        if self.ports and len(self.ports) != self.masters:
            raise ValueError(f"Got {len(self.ports)} ports for {self.masters} masters.")

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        return [(HOST, node.port) for node in self.nodes]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{host}:{port}" for host, port in self.startup_nodes)

    @property
    def running(self) -> bool:
        return bool(self.nodes) and all(node.running for node in self.nodes)

    def client(self, index: int) -> redis.Redis:
        """A plain client on node `index`'s unix socket (it sees only that node's keys)."""
        return redis.Redis(
            unix_socket_path=str(self.nodes[index].socket_path), decode_responses=True, socket_timeout=5.0
        )

    def start(self, timeout: float = 30.0) -> None:
        """Start the nodes and form the cluster; raise RedisServerError if it is not ready in time."""
        deadline = time.monotonic() + timeout
        attempts = 1 if self.ports else _START_ATTEMPTS
        if self.ports:
            taken = [p for p in self.ports if not (port_is_free(p) and port_is_free(p + BUS_PORT_OFFSET))]
            if taken:
                raise RedisServerError(
                    f"Cluster ports not free (each needs itself and itself + {BUS_PORT_OFFSET}): {taken}"
                )
        for attempt in range(1, attempts + 1):
            ports = list(self.ports) or free_cluster_ports(self.masters)
            try:
                self._start_nodes(ports, max(deadline - time.monotonic(), 1.0))
                break
            except RedisServerError as exc:
                self.kill()
                if attempt == attempts or "already in use" not in str(exc):
                    raise
                log.info("a cluster port was taken; trying other ports", extra={"ports": ports})
        try:
            self._form(deadline, timeout)
        except BaseException:
            self.kill()
            raise
        log.info("redis cluster ready", extra={"ports": [node.port for node in self.nodes]})

    def _start_nodes(self, ports: list[int], timeout: float) -> None:
        self.nodes = []
        for i, port in enumerate(ports):
            directory = self.directory / f"node-{i}"
            # A node that finds an old nodes.conf rejoins its old cluster: every start forms a new one.
            (directory / "nodes.conf").unlink(missing_ok=True)
            node = RedisServer(
                directory=directory,
                port=port,
                extra_args=(
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", str(self.node_timeout_ms),
                ),
                binary=self.binary,
            )  # fmt: skip
            self.nodes.append(node)
            node.start(timeout)

    def _form(self, deadline: float, timeout: float) -> None:
        clients = [self.client(i) for i in range(len(self.nodes))]
        try:
            for i, (client, slots) in enumerate(zip(clients, slot_ranges(self.masters), strict=True)):
                client.cluster("ADDSLOTS", *slots)
                # Distinct config epochs up front, so the nodes need not settle a collision.
                client.cluster("SET-CONFIG-EPOCH", i + 1)
            first = self.nodes[0].port
            for client in clients[1:]:
                client.cluster("MEET", HOST, first)
            while True:
                problems = [f"node {i}: {p}" for i, c in enumerate(clients) if (p := self._problem(c))]
                if not problems:
                    return
                if time.monotonic() > deadline:
                    raise RedisServerError(
                        f"The cluster did not form within {timeout:.0f}s: " + "; ".join(problems)
                    )
                time.sleep(0.05)
        finally:
            for client in clients:
                client.close()

    def _problem(self, client: redis.Redis) -> str | None:
        """Why this node is not ready yet, or None when it is."""
        info: dict[str, Any] = client.cluster("INFO")
        state = info.get("cluster_state")
        known = int(info.get("cluster_known_nodes", 0))
        if state != "ok":
            return f"cluster_state:{state}"
        if known != self.masters:
            return f"knows {known} of {self.masters} nodes"
        covered, addressed = _covered_slots(client.cluster("SLOTS"))
        if covered != SLOTS:
            return f"CLUSTER SLOTS covers {covered} of {SLOTS} slots"
        if not addressed:
            return "CLUSTER SLOTS has a node without its address"
        return None

    def flushall(self) -> None:
        """Empty every node."""
        for i in range(len(self.nodes)):
            client = self.client(i)
            try:
                client.flushall()
            finally:
                client.close()

    def stop(self, timeout: float = 15.0) -> None:
        """Shut every node down cleanly (SIGTERM)."""
        for node in self.nodes:
            node.stop(timeout)

    def kill(self) -> None:
        """Stop every node at once (SIGKILL)."""
        for node in self.nodes:
            node.kill()
