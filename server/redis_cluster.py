"""A real Redis Cluster on this machine: N master processes, each with K replicas (none by default),
for the tests and the benchmark.

Every node is a `RedisServer` with cluster mode on, listening on 127.0.0.1 (and on its own unix
socket). `LocalCluster.start()` forms a fresh cluster each time: it assigns the 16384 hash slots in
even, contiguous ranges, introduces the nodes to each other, makes the replicas replicate their
masters and waits until they all agree and every replica is in sync, so that a failover can begin
at once. A master that dies (or stops answering) for longer than `node_timeout_ms` is failed over
by the cluster itself: its replica is promoted and takes its slots.
"""

from __future__ import annotations

import logging
import os
import random
import signal
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


def _covered_slots(cluster_slots: Any) -> tuple[int, bool, int]:
    """How many slots a CLUSTER SLOTS reply assigns, whether every owner has the address HOST, and
    the fewest replicas a range lists."""
    covered = 0
    addressed = True
    replicas = min((len(entry) - 3 for entry in cluster_slots), default=0)
    for entry in cluster_slots:
        start, end, owner = int(entry[0]), int(entry[1]), entry[2]
        covered += end - start + 1
        ip = owner[0].decode() if isinstance(owner[0], bytes) else str(owner[0])
        addressed = addressed and ip == HOST
    return covered, addressed, replicas


def _port_of(address: str) -> int:
    return int(address.rpartition(":")[2])


def _pid(node: RedisServer) -> int:
    if node.process is None or node.process.poll() is not None:
        raise RedisServerError(f"The node on port {node.port} is not running.")
    return node.process.pid


def _asked(node: RedisServer) -> redis.Redis:
    """A client on `node`'s unix socket that gives up within a second (a node may be frozen)."""
    return redis.Redis(unix_socket_path=str(node.socket_path), decode_responses=True, socket_timeout=1.0)


@dataclass
class LocalCluster(Started):
    """`masters` cluster-mode redis-server processes under `directory`, one slot range each, and
    `replicas` replica processes of each master.

    `nodes` holds the masters first, then the replicas of the first master, of the second, and so
    on: `nodes[masters + i * replicas + j]` is the j-th replica of master i, as started (a failover
    swaps the roles; `master_of` and `replicas_of` ask the cluster). `ports` fixes the client ports
    in that order (each also needs port + 10000 for the cluster bus); left empty, free ones are
    picked, and picked again if a node finds its port taken at start. A master silent for
    `node_timeout_ms` is failed over to one of its replicas, a second or so later.
    """

    directory: Path
    masters: int = 3
    ports: tuple[int, ...] = ()
    node_timeout_ms: int = 5000
    replicas: int = 0
    binary: str = field(default_factory=find_redis_server)
    nodes: list[RedisServer] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.masters < 1:
            raise ValueError("A cluster needs at least one master.")
        if self.replicas < 0:
            raise ValueError("A master cannot have fewer than 0 replicas.")
        if self.ports and len(self.ports) != self.size:
            replicas = f" and {self.masters * self.replicas} replicas" if self.replicas else ""
            raise ValueError(f"Got {len(self.ports)} ports for {self.masters} masters{replicas}.")

    @property
    def size(self) -> int:
        """How many nodes the cluster has: its masters and their replicas."""
        return self.masters * (1 + self.replicas)

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
            ports = list(self.ports) or free_cluster_ports(self.size)
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
                    # A master syncs a replica at once rather than waiting 5 s for others to join
                    # (Valkey syncs over the socket): each of these has one master, on this machine.
                    "--repl-diskless-sync-delay", "0",
                ),
                binary=self.binary,
            )  # fmt: skip
            self.nodes.append(node)
            node.start(timeout)

    def _form(self, deadline: float, timeout: float) -> None:
        clients = [self.client(i) for i in range(len(self.nodes))]
        try:
            masters = clients[: self.masters]
            for i, (client, slots) in enumerate(zip(masters, slot_ranges(self.masters), strict=True)):
                client.cluster("ADDSLOTS", *slots)
                # Distinct config epochs up front, so the nodes need not settle a collision.
                client.cluster("SET-CONFIG-EPOCH", i + 1)
            first = self.nodes[0].port
            for client in clients[1:]:
                client.cluster("MEET", HOST, first)
            ids = [client.cluster("MYID") for client in clients[: self.masters]]
            # Each replica waits for its master's id until it has heard of the master.
            following = {
                self.masters + i * self.replicas + j: master
                for i, master in enumerate(ids)
                for j in range(self.replicas)
            }
            while True:
                for i, master in list(following.items()):
                    try:
                        clients[i].cluster("REPLICATE", master)
                        del following[i]
                    except redis.ResponseError:  # "Unknown node": not yet
                        pass
                problems = [f"node {i}: {p}" for i, c in enumerate(clients) if (p := self._problem(c, i))]
                problems += [f"node {i}: does not know its master yet" for i in following]
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

    def _problem(self, client: redis.Redis, index: int) -> str | None:
        """Why node `index` is not ready yet, or None when it is."""
        info: dict[str, Any] = client.cluster("INFO")
        state = info.get("cluster_state")
        known = int(info.get("cluster_known_nodes", 0))
        if state != "ok":
            return f"cluster_state:{state}"
        if known != self.size:
            return f"knows {known} of {self.size} nodes"
        covered, addressed, replicas = _covered_slots(client.cluster("SLOTS"))
        if covered != SLOTS:
            return f"CLUSTER SLOTS covers {covered} of {SLOTS} slots"
        if not addressed:
            return "CLUSTER SLOTS has a node without its address"
        if replicas < self.replicas:
            return f"CLUSTER SLOTS lists {replicas} of {self.replicas} replicas for a range"
        if index >= self.masters and client.info("replication").get("master_link_status") != "up":
            return "the replica is not in sync with its master"
        return None

    # -- roles, and faults ------------------------------------------------------------------------

    def node(self, port: int) -> RedisServer:
        """The node listening on `port`."""
        return next(node for node in self.nodes if node.port == port)

    def _view(self) -> dict[str, dict[str, Any]]:
        """CLUSTER NODES, by address, as the first node that answers sees it. (Not CLUSTER SLOTS:
        counted on the nodes, those are the clients' topology refreshes.)"""
        for node in self.nodes:
            if not node.running:
                continue
            client = _asked(node)
            try:
                view: dict[str, dict[str, Any]] = client.cluster("NODES")
                return view
            except (redis.RedisError, OSError):
                continue
            finally:
                client.close()
        raise RedisServerError("No node of the cluster answers.")

    def _holder(self, view: dict[str, dict[str, Any]], slot: int) -> tuple[str, dict[str, Any]]:
        for address, info in view.items():
            if "master" in info["flags"].split(",") and any(
                int(held[0]) <= slot <= int(held[-1]) for held in info["slots"]
            ):
                return address, info
        raise RedisServerError(f"No node serves slot {slot}.")

    def master_of(self, slot: int) -> RedisServer:
        """The master of `slot`, as the cluster says now (one that failed holds its slots until a
        replica takes them over)."""
        address, _ = self._holder(self._view(), slot)
        return self.node(_port_of(address))

    def replicas_of(self, slot: int) -> list[RedisServer]:
        """The replicas of the master of `slot`, leaving out any the cluster marks as failed."""
        view = self._view()
        _, master = self._holder(view, slot)
        return [
            self.node(_port_of(address))
            for address, info in view.items()
            if info["master_id"] == master["node_id"] and "fail" not in info["flags"].split(",")
        ]

    def freeze(self, node: RedisServer) -> None:
        """Stop `node` answering without closing anything (SIGSTOP), as a hung or cut-off machine
        would; `node.kill()` is a crash."""
        os.kill(_pid(node), signal.SIGSTOP)

    def thaw(self, node: RedisServer) -> None:
        """Let a frozen node go on (SIGCONT)."""
        os.kill(_pid(node), signal.SIGCONT)

    def restart(self, node: RedisServer, timeout: float = 15.0) -> None:
        """Start a node that exited again, on its directory: it rejoins the cluster as its nodes.conf
        says, and a master whose slots were failed over meanwhile becomes a replica of the new one."""
        node.start(timeout)

    def in_sync(self) -> bool:
        """Whether every running node agrees the cluster is ok and every replica's link to its master
        is up."""
        for node in self.nodes:
            if not node.running:
                continue
            client = _asked(node)
            try:
                if client.cluster("INFO").get("cluster_state") != "ok":
                    return False
                replication = client.info("replication")
                if replication.get("role") == "slave" and replication.get("master_link_status") != "up":
                    return False
            except (redis.RedisError, OSError):
                return False
            finally:
                client.close()
        return True

    def flushall(self) -> None:
        """Empty every master (their replicas follow)."""
        for i in range(len(self.nodes)):
            client = self.client(i)
            try:
                if self.replicas == 0 or client.info("replication").get("role") == "master":
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
