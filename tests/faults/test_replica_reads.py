"""Reads from replicas (FOLLOWGRAPH_READ_FROM_REPLICAS=1) on a primary, its replicas and three
Sentinels of the embedded server's binary, and on a Redis Cluster with replicas: pages are read
from the replicas (their own command counts say so), a viewer's next page shows their follow
whichever process serves it, reads go to the primary while there are more replicas than the writes
wait for, and the settings that cannot keep that promise stop the start."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis

from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_sentinel import LocalSentinel
from followgraph.server.settings import ConfigError, Settings
from followgraph.store.redis.cluster_channel import ClusterReadChannel
from followgraph.store.redis.replica_reads import ReplicaReads
from tests.faults.support import fault_settings
from tests.served import Served, serve
from tests.server.processes import free_ports

FOLLOW = "mutation($id: ID!) { follow(input: {userId: $id}) { changed errors { code } } }"
FOLLOWING = "query($id: ID!) { user(userId: $id) { following(first: 50) { edges { node { userId } } } } }"
USERS = [f"r{i:02}" for i in range(30)]


def evalsha_calls(port: int) -> int:
    """The scripts a Redis has run (EVALSHA), from its own command counts."""
    client = redis.Redis(port=port, decode_responses=True)
    try:
        stats: dict[str, Any] = client.info("commandstats")
        return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))
    finally:
        client.close()


def replica_settings(tmp_path: Path, redis_url: str, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "redis_timeout": 1.0,
        "follow_rate_limit": "off",
        "database_url": "off",
        "search_index": False,
        "write_replicas": 1,
        "write_replicas_timeout": 0.5,
        "read_from_replicas": True,
    }
    values.update(changes)
    return fault_settings(tmp_path, redis_url, **values)


@pytest.fixture
def one_replica(tmp_path: Path) -> Iterator[LocalSentinel]:
    with LocalSentinel(tmp_path / "ha", tuple(free_ports(1 + 1 + 3)), replicas=1) as local:
        yield local


async def follow_and_read(writer: Served, reader: Served, follower: str, followee: str) -> list[str]:
    """`follower` follows `followee` through `writer`, then reads their following page through
    `reader` (another server process, with its own clients)."""
    body = (await writer.post(FOLLOW, {"id": followee}, as_user=follower)).json()
    assert body["data"]["follow"]["errors"] == [], body
    page = await reader.data(FOLLOWING, {"id": follower}, as_user=follower)
    return [edge["node"]["userId"] for edge in page["user"]["following"]["edges"]]


@pytest.mark.slow
async def test_pages_come_from_the_replica_and_show_the_viewers_own_follows(
    one_replica: LocalSentinel, tmp_path: Path
) -> None:
    settings = replica_settings(tmp_path, one_replica.url)
    primary = one_replica.primary_port()
    assert primary is not None
    [replica] = [port for port in one_replica.ports[:2] if port != primary]
    async with serve(settings) as writer, serve(settings) as reader:
        await writer.register("viewer", *USERS)
        before = evalsha_calls(primary), evalsha_calls(replica)
        for i, user in enumerate(USERS):
            # Read-your-writes: the follow just answered is on the page, read from the replica by
            # another process.
            shown = await follow_and_read(writer, reader, "viewer", user)
            assert user in shown and len(shown) == i + 1, (user, shown)
        after = evalsha_calls(primary), evalsha_calls(replica)
        reads = reader.app.state.store.reads
        assert isinstance(reads, ReplicaReads)
        # The facts and the page of each: two reads a page, all on the replica.
        assert reads.served == {"replica": 2 * len(USERS), "primary": 0, "unfit": 0}
    # Every page ran on the replica; the primary ran the follows (and their payloads' reads), not
    # the other process's pages.
    assert after[1] - before[1] >= len(USERS)
    assert after[0] - before[0] < 4 * len(USERS)


@pytest.mark.slow
async def test_with_more_replicas_than_writes_wait_for_the_primary_is_read(tmp_path: Path) -> None:
    ports = tuple(free_ports(1 + 2 + 3))
    with LocalSentinel(tmp_path / "ha", ports, replicas=2) as sentinel:
        settings = replica_settings(tmp_path, sentinel.url)
        async with serve(settings) as api:
            await api.register("viewer", *USERS[:6])
            for user in USERS[:3]:
                assert user in await follow_and_read(api, api, "viewer", user)
            reads = api.app.state.store.reads
            assert isinstance(reads, ReplicaReads)
            assert reads.allowed is False
            assert reads.served == {"replica": 0, "primary": 6, "unfit": 0}
        # Writes that wait for both replicas: each has every answered write, and serves reads.
        async with serve(replace(settings, write_replicas=2)) as api:
            for user in USERS[3:6]:
                assert user in await follow_and_read(api, api, "viewer", user)
            reads = api.app.state.store.reads
            assert isinstance(reads, ReplicaReads)
            assert reads.allowed is True
            assert reads.served == {"replica": 6, "primary": 0, "unfit": 0}


def cluster_calls(cluster: LocalCluster) -> tuple[int, int]:
    """The scripts the cluster's masters and its replicas have run, each side's summed."""
    roles = _roles(cluster)
    masters = sum(evalsha_calls(port) for port, role in roles if role == "master")
    return masters, sum(evalsha_calls(port) for port, role in roles if role != "master")


def _roles(cluster: LocalCluster) -> list[tuple[int, str]]:
    """Each node's port and role (master or slave), as it says."""
    roles = []
    for node in cluster.nodes:
        client = redis.Redis(port=node.port, decode_responses=True)
        try:
            roles.append((node.port, str(client.info("replication")["role"])))
        finally:
            client.close()
    return roles


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path / "cluster", masters=3, replicas=getattr(request, "param", 1))
    local.start()
    try:
        yield local
    finally:
        local.kill()


@pytest.mark.slow
async def test_a_clusters_pages_come_from_its_replicas_and_show_the_viewers_own_follows(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    settings = replica_settings(tmp_path, cluster.url)
    async with serve(settings) as writer, serve(settings) as reader:
        await writer.register("viewer", *USERS)
        before = cluster_calls(cluster)
        for i, user in enumerate(USERS):
            shown = await follow_and_read(writer, reader, "viewer", user)
            assert user in shown and len(shown) == i + 1, (user, shown)
        after = cluster_calls(cluster)
        reads = reader.app.state.store.reads
        assert isinstance(reads, ReplicaReads)
        assert reads.served == {"replica": 2 * len(USERS), "primary": 0, "unfit": 0}
        channel = reads.replicas
        assert isinstance(channel, ClusterReadChannel) and channel.replica
        # Each read was answered by the replicas themselves: none went back to redis-py (a master).
        assert channel.rerouted == 0
        masters = {f"127.0.0.1:{port}" for port, role in _roles(cluster) if role == "master"}
        assert channel.nodes and not channel.nodes & masters, (channel.nodes, masters)
    # The pages' scripts ran on the replicas; the masters ran the follows (two steps each, on a
    # cluster) and their payloads' reads, not the other process's pages.
    assert after[1] - before[1] >= len(USERS)
    assert after[0] - before[0] < 6 * len(USERS)


@pytest.mark.slow
async def test_a_replica_gone_sends_the_reads_to_the_masters_for_a_while(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """redis-py talks to the masters alone, so its slot map keeps a replica that died: the read
    channel stops asking the replicas for a while after one failed, rather than at every read."""
    async with serve(replica_settings(tmp_path, cluster.url)) as api:
        await api.register("viewer", "r00")
        assert "r00" in await follow_and_read(api, api, "viewer", "r00")
        reads = api.app.state.store.reads
        assert isinstance(reads, ReplicaReads) and isinstance(reads.replicas, ClusterReadChannel)
        channel = reads.replicas
        assert channel.rerouted == 0 and channel.resting_until == 0
        [gone] = cluster.replicas_of(api.store.keys.slot("viewer"))
        gone.kill()
        # (Writes to its master fail meanwhile: they wait for a replica it no longer has.)
        for _ in range(10):
            page = await api.data(FOLLOWING, {"id": "viewer"}, as_user="viewer")
            assert [edge["node"]["userId"] for edge in page["user"]["following"]["edges"]] == ["r00"]
        # The first read after the kill met the dead replica and went to the masters; the others
        # went there at once.
        assert channel.rerouted == 1, channel.rerouted
        assert channel.resting_until > 0


@pytest.mark.slow
@pytest.mark.parametrize("cluster", [2], indirect=True, ids=["2 replicas per master"])
async def test_a_cluster_with_more_replicas_than_writes_wait_for_is_read_on_its_masters(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    async with serve(replica_settings(tmp_path, cluster.url)) as api:
        await api.register("viewer", *USERS[:3])
        for user in USERS[:3]:
            assert user in await follow_and_read(api, api, "viewer", user)
        reads = api.app.state.store.reads
        assert isinstance(reads, ReplicaReads)
        assert reads.allowed is False
        # The three pages and their facts at least (a cluster's follow reads through them too).
        assert reads.served["replica"] == 0 and reads.served["primary"] >= 6, reads.served


def test_settings_that_cannot_keep_the_promise_stop_the_start(tmp_path: Path) -> None:
    sentinel_url = "redis+sentinel://127.0.0.1:26379/mymaster"
    reading: dict[str, Any] = {"data_dir": tmp_path, "read_from_replicas": True}
    with pytest.raises(ConfigError, match="needs replicas to read from"):
        Settings(**reading, redis_url="redis://127.0.0.1:6379/0").validate()
    with pytest.raises(ConfigError, match="do not speak TLS"):
        Settings(**reading, redis_url="rediss+cluster://10.0.0.1:6379", write_replicas=1).validate()
    Settings(**reading, redis_url="redis+cluster://10.0.0.1:6379", write_replicas=1).validate()
    with pytest.raises(ConfigError, match="WRITE_REPLICAS of at least 1"):
        Settings(**reading, redis_url=sentinel_url).validate()
    Settings(**reading, redis_url=sentinel_url, write_replicas=1).validate()
