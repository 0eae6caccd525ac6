"""A Redis Cluster master failover under load, Jepsen-style: concurrent follow and unfollow writers,
and a reader, through the API, on three masters with one replica each
(server/redis_cluster.py); one master SIGKILLed (then started again: it comes back as a replica of
the one promoted) or frozen with SIGSTOP past the node timeout (then let go) mid-load; FollowGraph
is not restarted. Then every acknowledged write is checked against the final graph
(tests/faults/history.py) and the SQL copy (fed from every slot's stream of the change log by one
of the two server processes), the graph's invariants and counts are checked, and the cluster's and
the server's view of the switch are counted: the CLUSTER SLOTS the nodes were asked (each a
topology refresh of a client), the MOVED and CLUSTERDOWN replies they gave, and the reads the
read channel sent back to redis-py.

Writes on the other masters' slots go on during the switch; "writes back" is measured on the edges
that touch a slot of the master that failed (either user's).

A follow or unfollow is two steps on a cluster (the follower's slot, then the followee's): one
that failed may have made only the first, leaving the followee's side behind until it is sent
again or `followgraph repair` rewrites the derived entries. So the graph may have such cut edges
only where the last operation failed; they are counted, repaired, and the invariants checked.

With FOLLOWGRAPH_WRITE_REPLICAS=1 none may be lost (asserted); with 0 what was lost is reported.
Each run logs its figures (docs/production.md, "Failover", has a table of them):

    .venv/bin/pytest tests/faults/test_cluster_failover.py -p no:randomly -o log_cli=true --log-cli-level=INFO
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
import redis

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.graph.repair import verify
from followgraph.store.redis.cluster_channel import ClusterReadChannel
from followgraph.store.redis.replicas import WRITE_NOT_REPLICATED
from tests.faults.history import Edge, Run, write, writer
from tests.faults.support import Graph, check_graph, fault_settings, read_graph
from tests.served import Served, serve
from tests.server.copies import copy_differences

log = logging.getLogger(__name__)

USERS = [f"k{i:02}" for i in range(16)]
WRITERS = 8
# Follows sent at once to a frozen master let go (each on an edge of its own, from one of its users).
SPIKE = 24
NODE_TIMEOUT_MS = 1000
# Writes before the fault, and after they succeed again on the failed master's slots.
BEFORE = 1.5
AFTER = 2.0
# A run gives up waiting for the failover, or for writes to succeed again, after this long.
RECOVERY = 30.0
VIEWER = "{ viewer { userId followingCount } }"
LISTS = "query($id: ID!) { user(userId: $id) { followingCount fans(first: 5) { nodes { userId name } } } }"
# What a node counts of the switch: the topology refreshes of its clients, and the errors it answered.
ERRORS = ("MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN")


@dataclass(frozen=True)
class Scenario:
    """What a run does: the writes wait for `write_replicas`, and the fault is a SIGKILL of a master
    started again once its replica took over ("kill") or a SIGSTOP until the failover, plus a node
    timeout ("stop")."""

    write_replicas: int
    fault: str

    def __str__(self) -> str:
        what = "kill, then started again" if self.fault == "kill" else "stop past the node timeout"
        return f"WRITE_REPLICAS={self.write_replicas}, 1 replica per master, {what}"


SCENARIOS = [
    Scenario(0, "kill"),
    Scenario(1, "kill"),
    Scenario(0, "stop"),
    Scenario(1, "stop"),
]


@dataclass
class Reads:
    """The reader's outcomes: reads of the failed master's users that failed, and when each read
    that began after the fault succeeded."""

    fault_at: float = float("inf")
    failed: int = 0
    ok_at: list[float] = field(default_factory=list)

    def back_after(self) -> float | None:
        return min(self.ok_at) - self.fault_at if self.ok_at else None


async def reader(api: Served, users: list[str], run: Run, reads: Reads) -> None:
    """Lists of the failed master's users, one after the other (through the cluster read channel)."""
    while not run.stop:
        for user in users:
            began = time.monotonic()
            response = await api.post(LISTS, {"id": user}, as_user=user)
            if response.status_code == 200 and not response.json().get("errors"):
                if began >= reads.fault_at:
                    reads.ok_at.append(time.monotonic())
            else:
                reads.failed += 1
                await asyncio.sleep(0.05)


def _client(node: RedisServer) -> redis.Redis:
    return redis.Redis(unix_socket_path=str(node.socket_path), decode_responses=True, socket_timeout=5.0)


def reset_counts(cluster: LocalCluster) -> None:
    for node in cluster.nodes:
        client = _client(node)
        try:
            client.config_resetstat()
        finally:
            client.close()


def switch_counts(cluster: LocalCluster) -> dict[str, int]:
    """CLUSTER SLOTS asked, and the redirections and refusals answered, on every node that runs,
    since reset_counts (a node started again counts from its start). Redis 6.2 counts CLUSTER
    commands as one (the tests' CLUSTER NODES among them): CLUSTER SLOTS is -1 there."""
    counts = dict.fromkeys(("CLUSTER SLOTS", *ERRORS), 0)
    for node in cluster.nodes:
        if not node.running:
            continue
        client = _client(node)
        try:
            commands = client.info("commandstats")
            errors = client.info("errorstats")
        finally:
            client.close()
        if "cmdstat_cluster" in commands:
            counts["CLUSTER SLOTS"] = -1
        elif counts["CLUSTER SLOTS"] >= 0:
            counts["CLUSTER SLOTS"] += int(commands.get("cmdstat_cluster|slots", {}).get("calls", 0))
        for error in ERRORS:
            counts[error] += int(errors.get(f"errorstat_{error}", {}).get("count", 0))
    return counts


async def fault(
    cluster: LocalCluster,
    scenario: Scenario,
    victim: RedisServer,
    slot: int,
    run: Run,
    quiet: Served,
    spike: list[Edge],
) -> float:
    """Kill or freeze `victim`, the master of `slot`, and see the failover through; the seconds
    until its replica was promoted. A killed master is started again (it rejoins as a replica);
    a frozen one, once let go, gets a spike of follows of its users through `quiet`, a server
    process that sent nothing while it was frozen: its pooled connections and slot map are
    still the old master's."""
    run.fault_at = time.monotonic()
    if scenario.fault == "kill":
        await asyncio.to_thread(victim.kill)
    else:
        cluster.freeze(victim)
    while (await asyncio.to_thread(cluster.master_of, slot)) is victim:
        assert time.monotonic() - run.fault_at < RECOVERY, "no replica took over"
        await asyncio.sleep(0.05)
    promoted = time.monotonic() - run.fault_at
    if scenario.fault == "kill":
        await asyncio.to_thread(cluster.restart, victim)
    else:
        # Let go: the old master may answer its clients until it learns that it lost its slots.
        await asyncio.sleep(NODE_TIMEOUT_MS / 1000)
        cluster.thaw(victim)
        await asyncio.gather(*(write(quiet, edge, "follow", run) for edge in spike))
    return promoted


def cut(graph: Graph) -> set[Edge]:
    """The edges whose two sides disagree: in the follower's following set or the followee's fans
    set, not both."""
    following = {(a, b) for a, out in graph.lists["following"].items() for b in out}
    fans = {(b, a) for a, ins in graph.lists["fans"].items() for b in ins}
    return following ^ fans


async def _rejoined(cluster: LocalCluster, victim: RedisServer, slot: int) -> None:
    """Until the failed master is a replica of the new one, in sync, and the cluster is ok."""
    deadline = time.monotonic() + RECOVERY
    while not (await asyncio.to_thread(cluster.in_sync)) or victim not in await asyncio.to_thread(
        cluster.replicas_of, slot
    ):
        assert time.monotonic() < deadline, f"the node on {victim.port} did not come back as a replica"
        await asyncio.sleep(0.1)


@pytest.fixture(params=SCENARIOS, ids=str)
def scenario(request: pytest.FixtureRequest) -> Scenario:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path / "cluster", masters=3, replicas=1, node_timeout_ms=NODE_TIMEOUT_MS)
    local.start()
    try:
        yield local
    finally:
        local.kill()  # a frozen node too


@pytest.mark.slow
async def test_no_acknowledged_write_is_lost_in_a_cluster_failover(
    cluster: LocalCluster, scenario: Scenario, tmp_path: Path
) -> None:
    rng = random.Random(20261206)
    settings: Settings = fault_settings(
        tmp_path,
        cluster.url,
        redis_timeout=1.0,
        follow_rate_limit="off",
        search_index=False,
        # The SQL copy, fed by `api` alone from every slot's stream, follows the failover too.
        database_url=f"sqlite:///{tmp_path / 'copy.sqlite3'}",
        write_replicas=scenario.write_replicas,
        write_replicas_timeout=0.5,
    )
    edges = [(a, b) for a in USERS for b in USERS if a != b]
    rng.shuffle(edges)
    run = Run({edge: [] for edge in edges})
    reads = Reads()
    async with serve(settings) as api, serve(replace(settings, sync=False)) as quiet:
        keys = api.store.keys
        slot = keys.slot(USERS[0])
        victim = await asyncio.to_thread(cluster.master_of, slot)
        on_victim = {u for u in USERS if await asyncio.to_thread(cluster.master_of, keys.slot(u)) is victim}

        def touching(edge: Edge) -> bool:
            return edge[0] in on_victim or edge[1] in on_victim

        for user in USERS:
            await api.store.upsert_user(user, name=f"User {user}")
        async with asyncio.timeout(BEFORE + RECOVERY * 2 + AFTER + 10):
            spike = [edge for edge in edges if edge[0] in on_victim][:SPIKE]
            steady = [edge for edge in edges if edge not in spike]
            tasks = [
                asyncio.create_task(writer(api, steady[i::WRITERS], run, random.Random(rng.random())))
                for i in range(WRITERS)
            ]
            tasks.append(asyncio.create_task(reader(api, sorted(on_victim), run, reads)))
            await asyncio.sleep(BEFORE)
            # The quiet process's reads leave connections idle in its pool, as a busy server has.
            await asyncio.gather(*(quiet.post(VIEWER, as_user=user) for user in USERS * 2))
            await asyncio.to_thread(reset_counts, cluster)
            reads.fault_at = time.monotonic()
            promoted = await fault(cluster, scenario, victim, slot, run, quiet, spike)
            while run.back_after(touching) is None or reads.back_after() is None:
                assert time.monotonic() - run.fault_at < RECOVERY, f"writes did not come back: {run.failures}"
                await asyncio.sleep(0.1)
            await asyncio.sleep(AFTER)
            run.stop = True
            await asyncio.gather(*tasks)
        counts = await asyncio.to_thread(switch_counts, cluster)
        elapsed = time.monotonic() - run.fault_at
        channels = [served.store.reads for served in (api, quiet)]
        assert all(isinstance(channel, ClusterReadChannel) for channel in channels)
        rerouted = [channel.rerouted for channel in channels if isinstance(channel, ClusterReadChannel)]
        await _rejoined(cluster, victim, slot)
        # One more read, and the read channel holds connections to the masters alone.
        await api.post(VIEWER, as_user=USERS[0])
        reads_channel = api.store.reads
        assert isinstance(reads_channel, ClusterReadChannel)
        masters = {node.name for node in reads_channel.client.get_primaries()}
        assert reads_channel.nodes <= masters, (reads_channel.nodes, masters)
        assert f"127.0.0.1:{victim.port}" not in reads_channel.nodes
        cuts = cut(await read_graph(api.store.redis, USERS, api.store.keys))
        late = [edge for edge in cuts if run.history[edge][-1].acknowledged]
        assert not late, f"cut by their last operation, which was acknowledged: {late[:10]}"
        repaired = (await verify(api.store, fix=True)).repaired
        # The copy, caught up on every slot's stream, against the graph the masters hold.
        diverged = await copy_differences(api)
    client = connect(cluster.url)
    try:
        graph = await check_graph(FollowStore(client), USERS)
    finally:
        await client.aclose()
    lost = run.lost(graph.edges())
    acknowledged = run.acknowledged()
    back = run.back_after(touching)
    read_back = reads.back_after()
    # The follows sent to the frozen master once let go (none after a kill).
    spiked = sum(op.acknowledged for edge in spike for op in run.history[edge])
    assert back is not None and read_back is not None
    log.info(
        "%s: %d writes acknowledged, %d failed (%s), replica promoted %.1f s after the fault, "
        "writes back %.1f s, reads back %.1f s (%d failed), %d acknowledged writes lost, %d edges cut "
        "(%d entries repaired), %d of the spike's follows acknowledged, SQL copy %s; "
        "on the nodes: %s; reads rerouted through redis-py: %d and %d",
        scenario,
        acknowledged,
        run.failed(),
        run.failure_codes(),
        promoted,
        back,
        read_back,
        reads.failed,
        len(lost),
        len(cuts),
        repaired,
        spiked,
        "equal to Redis" if diverged.total == 0 else f"diverged: {diverged.counts}",
        ", ".join(f"{count} {name}" for name, count in counts.items()),
        *rerouted,
    )
    assert acknowledged > 100, acknowledged
    # The new slot map was learnt, in a few refreshes: those that errors ask for are a second apart
    # at most in each process (redis-py's pacing); a storm would be one per failed command.
    if counts["CLUSTER SLOTS"] >= 0:
        assert 1 <= counts["CLUSTER SLOTS"] <= 2 * 2 * elapsed, (counts, elapsed)
    if scenario.write_replicas:
        assert not lost, f"acknowledged writes lost: {lost[:10]}"
        assert diverged.total == 0, diverged.examples
        if scenario.fault == "stop":
            assert run.failures.get(WRITE_NOT_REPLICATED, 0) > 0, run.failures
