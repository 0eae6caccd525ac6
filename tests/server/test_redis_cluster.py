from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from followgraph.server.redis_cluster import (
    BUS_PORT_OFFSET,
    SLOTS,
    LocalCluster,
    free_cluster_ports,
    slot_ranges,
)
from followgraph.server.redis_server import RedisServerError, answers

KEYS = [f"{{u:{i}}}x" for i in range(50)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One cluster for the module (forming one takes about 2 s); its teardown checks stop()."""
    running = LocalCluster(tmp_path_factory.mktemp("cluster"))
    running.start()
    yield running
    processes = [node.process for node in running.nodes]
    running.stop()
    assert all(p is not None and p.poll() is not None for p in processes)
    assert not running.running
    assert not any(answers(node.socket_path) for node in running.nodes)
    assert not any(_listening(port) for _, port in running.startup_nodes)


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
async def cluster_client(cluster: LocalCluster) -> AsyncIterator[RedisCluster]:
    cluster.flushall()
    client = RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in cluster.startup_nodes], decode_responses=True
    )
    await client.initialize()
    yield client
    await client.aclose()


def test_free_cluster_ports_are_distinct_and_leave_the_bus_port_free() -> None:
    ports = free_cluster_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        assert 20000 <= port < 30000
        for candidate in (port, port + BUS_PORT_OFFSET):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", candidate))


def test_the_slot_ranges_cover_every_slot_once() -> None:
    for masters in (1, 3, 7):
        ranges = slot_ranges(masters)
        assert [slot for r in ranges for slot in r] == list(range(SLOTS))
        assert max(len(r) for r in ranges) - min(len(r) for r in ranges) <= 1


def test_the_url_and_startup_nodes_name_every_master(cluster: LocalCluster) -> None:
    assert len(cluster.nodes) == 3
    assert cluster.running
    ports = [node.port for node in cluster.nodes]
    assert cluster.startup_nodes == [("127.0.0.1", port) for port in ports]
    assert cluster.url == "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in ports)


async def test_keys_in_different_slots_spread_over_all_masters(
    cluster: LocalCluster, cluster_client: RedisCluster
) -> None:
    for i, key in enumerate(KEYS):
        await cluster_client.set(key, str(i))
    assert [await cluster_client.get(key) for key in KEYS] == [str(i) for i in range(len(KEYS))]
    sizes = []
    for i in range(len(cluster.nodes)):
        node = cluster.client(i)
        sizes.append(node.dbsize())
        node.close()
    assert sum(sizes) == len(KEYS)
    assert all(size > 0 for size in sizes), sizes


async def test_a_script_on_keys_of_one_slot_runs_through_the_cluster_client(
    cluster_client: RedisCluster,
) -> None:
    script = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCRBY', KEYS[2], ARGV[2])"
    assert await cluster_client.eval(script, 2, "{u:7}a", "{u:7}b", "v", 5) == 5
    sha = await cluster_client.script_load(script)
    assert await cluster_client.evalsha(sha, 2, "{u:7}a", "{u:7}b", "w", 2) == 7
    assert await cluster_client.get("{u:7}a") == "w"
    incr = cluster_client.register_script("return redis.call('INCR', KEYS[1])")
    assert await incr(keys=["{u:9}c"]) == 1


def test_taken_ports_are_a_clear_error_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        (free,) = free_cluster_ports(1)
        cluster = LocalCluster(tmp_path, masters=2, ports=(free, busy))
        with pytest.raises(RedisServerError, match=str(busy)):
            cluster.start()
    assert cluster.nodes == []
    assert not _listening(free)
    cluster.stop()
    cluster.kill()


def test_the_ports_must_match_the_masters(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="2 ports for 3 masters"):
        LocalCluster(tmp_path, ports=(20001, 20002))
    with pytest.raises(ValueError, match="3 ports for 2 masters and 2 replicas"):
        LocalCluster(tmp_path, masters=2, replicas=1, ports=(20001, 20002, 20003))
    with pytest.raises(ValueError, match="at least one master"):
        LocalCluster(tmp_path, masters=0)


def test_each_master_gets_its_replicas_in_sync(tmp_path: Path) -> None:
    with LocalCluster(tmp_path, masters=2, replicas=1) as cluster:
        assert len(cluster.nodes) == 4 and cluster.in_sync()
        masters, replicas = cluster.nodes[:2], cluster.nodes[2:]
        for i, slots in enumerate(slot_ranges(2)):
            assert cluster.master_of(slots[-1]) is masters[i]
            assert cluster.replicas_of(slots[0]) == [replicas[i]]
        slot = key_slot(b"{u:1}x")
        master, [replica] = cluster.master_of(slot), cluster.replicas_of(slot)
        on_master, on_replica = (
            redis.Redis(unix_socket_path=str(node.socket_path), decode_responses=True)
            for node in (master, replica)
        )
        try:
            on_master.set("{u:1}x", "1")
            assert on_master.wait(1, 5000) == 1
            assert on_replica.readonly()
            assert on_replica.get("{u:1}x") == "1"
            cluster.flushall()  # the masters; a replica would refuse
            assert on_master.wait(1, 5000) == 1
            assert on_master.dbsize() == on_replica.dbsize() == 0
        finally:
            on_master.close()
            on_replica.close()
