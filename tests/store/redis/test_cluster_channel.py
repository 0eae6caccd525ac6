"""The cluster read channel (store/redis/cluster_channel.py) on a real 3-master cluster: routing by slot,
one write per node, and the way back to redis-py when a slot moved, a connection died or a node
did not answer."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import fakeredis
import pytest
import redis
from redis.asyncio import RedisCluster
from redis.crc import key_slot

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer
from followgraph.store import FollowStore
from followgraph.store.graph.events import EventKind
from followgraph.store.graph.model import ListKind, Parts
from followgraph.store.graph.repair import verify
from followgraph.store.log.stream import EventLog
from followgraph.store.redis.channel import ReadChannel
from followgraph.store.redis.channels import open_reads
from followgraph.store.redis.cluster_channel import ClusterReadChannel
from followgraph.store.redis.lua import LuaScript, ReadCommand, ScriptCall
from tests.store.writes import Writes

GET = LuaScript("return redis.call('GET', KEYS[1])")
# One key on each master: slots 0-5460, 5461-10922 and 10923-16383 (LocalCluster.slot_ranges).
KEYS = ["{a}", "{b}", "{c}"]  # slots 15495, 3300, 7365


def _gets(*keys: str) -> list[ScriptCall]:
    return [(GET, [k], []) for k in keys]


@pytest.fixture
async def channel(cluster_client: RedisCluster) -> AsyncIterator[ClusterReadChannel]:
    opened = ClusterReadChannel(cluster_client, timeout=2.0, on_send=Writes())
    yield opened
    await opened.aclose()


def _writes(channel: ClusterReadChannel) -> Writes:
    assert isinstance(channel.on_send, Writes)
    return channel.on_send


def _node_index(cluster: LocalCluster, key: str) -> int:
    slot = key_slot(key.encode())
    client = cluster.client(0)
    try:
        for start, end, (_, port, *_), *_ in client.cluster("SLOTS"):
            if start <= slot <= end:
                return [node.port for node in cluster.nodes].index(port)
    finally:
        client.close()
    raise AssertionError(f"slot {slot} is not covered")


async def test_calls_go_to_their_slots_nodes_in_one_write_per_node(
    channel: ClusterReadChannel, cluster_client: RedisCluster, redis_cluster: LocalCluster
) -> None:
    assert sorted(_node_index(redis_cluster, k) for k in KEYS) == [0, 1, 2]
    for key in KEYS:
        await cluster_client.set(key, f"value of {key}")
    await channel.run_scripts(_gets(*KEYS))  # connects to the three nodes
    _writes(channel).count = 0
    reads = [_gets(KEYS[i % 3], KEYS[(i + 1) % 3], "{none}") for i in range(30)]
    replies = await asyncio.gather(*(channel.run_scripts(calls) for calls in reads))
    assert replies == [[f"value of {KEYS[i % 3]}", f"value of {KEYS[(i + 1) % 3]}", None] for i in range(30)]
    assert _writes(channel).count == 3
    assert channel.rerouted == 0


async def test_a_reader_that_gives_up_leaves_the_others_their_replies(
    channel: ClusterReadChannel, cluster_client: RedisCluster
) -> None:
    for key in KEYS:
        await cluster_client.set(key, key)
    await channel.run_scripts(_gets(*KEYS))  # connects to the three nodes
    gone = asyncio.create_task(channel.run_scripts(_gets(*KEYS)))
    await asyncio.sleep(0)  # queued on the three connections
    gone.cancel()
    after = await asyncio.gather(*(channel.run_scripts(_gets(*KEYS[i:])) for i in range(3)))
    assert after == [KEYS[i:] for i in range(3)]
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert channel.rerouted == 0


async def test_scripts_unknown_to_a_node_are_loaded_there_and_plain_reads_go_beside_them(
    channel: ClusterReadChannel, cluster_client: RedisCluster
) -> None:
    await cluster_client.set(KEYS[0], "x")
    await cluster_client.set(KEYS[1], "y")
    get = ReadCommand("GET")
    mixed: list[ScriptCall] = [(get, [KEYS[1]], []), *_gets(*KEYS), (get, [KEYS[2]], [])]
    for calls, replies in ((_gets(*KEYS), ["x", "y", None]), (mixed, ["y", "x", "y", None, None])):
        await cluster_client.script_flush()
        assert await channel.run_scripts(calls) == replies
    assert channel.rerouted == 0


async def test_nothing_to_run_is_no_round_trip(channel: ClusterReadChannel) -> None:
    assert await channel.run_scripts([]) == []
    assert _writes(channel).count == 0


async def test_an_error_in_a_script_is_raised(channel: ClusterReadChannel) -> None:
    broken = LuaScript("return redis.call('NOSUCHCOMMAND', KEYS[1])")
    with pytest.raises(redis.exceptions.ResponseError):
        await channel.run_scripts([(broken, [KEYS[0]], []), (GET, [KEYS[1]], [])])
    assert await channel.run_scripts([(GET, [KEYS[1]], [])]) == [None]


@contextmanager
def _moved(cluster: LocalCluster, key: str) -> Iterator[None]:
    """The slot of `key` moved, with its keys, to another master for the block; moved back after."""
    slot = key_slot(key.encode())
    source = _node_index(cluster, key)
    target = (source + 1) % len(cluster.nodes)
    clients = [cluster.client(i) for i in range(len(cluster.nodes))]
    ids = [c.cluster("MYID") for c in clients]

    def move(src: int, dst: int) -> None:
        clients[dst].cluster("SETSLOT", slot, "IMPORTING", ids[src])
        clients[src].cluster("SETSLOT", slot, "MIGRATING", ids[dst])
        while keys := clients[src].cluster("GETKEYSINSLOT", slot, 100):
            clients[src].migrate("127.0.0.1", cluster.nodes[dst].port, keys, 0, 5000)
        for client in clients:
            client.cluster("SETSLOT", slot, "NODE", ids[dst])

    try:
        move(source, target)
        yield
    finally:
        move(target, source)
        for client in clients:
            client.close()


async def test_a_read_of_a_moved_slot_goes_through_redis_py_and_the_next_ones_go_direct(
    channel: ClusterReadChannel, cluster_client: RedisCluster, redis_cluster: LocalCluster
) -> None:
    for key in KEYS:
        await cluster_client.set(key, f"value of {key}")
    calls = _gets(*KEYS)
    expected = [f"value of {k}" for k in KEYS]
    assert await channel.run_scripts(calls) == expected
    with _moved(redis_cluster, KEYS[1]):
        assert await channel.run_scripts(calls) == expected
        assert channel.rerouted == 1
        # redis-py followed the MOVED reply and updated the slot map the channel routes by.
        assert await channel.run_scripts(calls) == expected
        assert channel.rerouted == 1
    assert await channel.run_scripts(calls) == expected
    assert await channel.run_scripts(calls) == expected
    assert channel.rerouted == 2


async def test_a_killed_connection_to_a_node_is_replaced(
    channel: ClusterReadChannel, cluster_client: RedisCluster, redis_cluster: LocalCluster
) -> None:
    for key in KEYS:
        await cluster_client.set(key, key)
    calls = _gets(*KEYS)
    assert await channel.run_scripts(calls) == KEYS
    node = redis_cluster.client(_node_index(redis_cluster, KEYS[0]))
    try:
        killed = node.client_kill_filter(_type="normal", skipme=True)
        assert killed >= 1
    finally:
        node.close()
    assert await channel.run_scripts(calls) == KEYS


async def test_a_node_that_does_not_answer_in_time_leaves_the_read_to_redis_py(
    cluster_client: RedisCluster, redis_cluster: LocalCluster
) -> None:
    channel = ClusterReadChannel(cluster_client, timeout=0.3)
    try:
        for key in KEYS:
            await cluster_client.set(key, key)
        calls = _gets(*KEYS)
        assert await channel.run_scripts(calls) == KEYS
        process = redis_cluster.nodes[_node_index(redis_cluster, KEYS[2])].process
        assert process is not None
        # A stopped node holds its connections silent; redis-py (10 s timeout) waits it out.
        os.kill(process.pid, signal.SIGSTOP)
        asyncio.get_running_loop().call_later(1.0, os.kill, process.pid, signal.SIGCONT)
        try:
            assert await channel.run_scripts(calls) == KEYS
        finally:
            os.kill(process.pid, signal.SIGCONT)
        assert channel.rerouted == 1
        assert await channel.run_scripts(calls) == KEYS
        assert channel.rerouted == 1
    finally:
        await channel.aclose()


async def test_an_unknown_slot_map_leaves_the_read_to_redis_py(redis_cluster: LocalCluster) -> None:
    client = connect(redis_cluster.url, timeout=10.0)
    assert isinstance(client, RedisCluster)
    channel = ClusterReadChannel(client)
    try:
        await client.initialize()
        await client.set(KEYS[0], "known")
        fresh = connect(redis_cluster.url, timeout=10.0)
        assert isinstance(fresh, RedisCluster)
        lazy = ClusterReadChannel(fresh)
        try:
            assert await lazy.run_scripts([(GET, [KEYS[0]], [])]) == ["known"]
            assert lazy.rerouted == 1
            assert await lazy.run_scripts([(GET, [KEYS[0]], [])]) == ["known"]
            assert lazy.rerouted == 1
        finally:
            await lazy.aclose()
            await fresh.aclose()
    finally:
        await channel.aclose()
        await client.aclose()


def test_a_cluster_without_tls_gets_a_channel_per_node(redis_server: RedisServer) -> None:
    cluster = connect("redis+cluster://reader:pw@127.0.0.1:7000", timeout=0.7)
    found = ClusterReadChannel.for_client(cluster)
    assert found is not None
    assert (found.timeout, found.username, found.password) == (0.7, "reader", "pw")
    assert isinstance(open_reads(cluster), ClusterReadChannel)
    assert ClusterReadChannel.for_client(connect("rediss+cluster://127.0.0.1:7000")) is None
    assert ClusterReadChannel.for_client(connect(redis_server.url)) is None
    assert isinstance(open_reads(connect(redis_server.url)), ReadChannel)
    assert open_reads(fakeredis.FakeAsyncRedis(decode_responses=True)) is None
    raw: Any = RedisCluster(host="127.0.0.1", port=7000)
    assert ClusterReadChannel.for_client(raw) is None  # replies as bytes: not what the store reads


async def test_a_store_page_of_twenty_users_on_many_slots_is_one_write_per_node(
    cluster_client: RedisCluster,
) -> None:
    channel = ClusterReadChannel(cluster_client, on_send=Writes())
    store = FollowStore(cluster_client, reads=channel)
    try:
        users = [f"u{i}" for i in range(20)]
        assert len({store.keys.slot(u) for u in users}) > 10
        for user in [*users, "star"]:
            await store.upsert_user(user, name=f"Name {user}")
        for user in users:
            await store.follow(follower=user, followee="star")
        # Connects to the nodes and loads the scripts there.
        await store.facts("star", users, Parts(profile=True, relation=True, counts=True))
        await store.page(ListKind.FANS, "star", first=20)
        _writes(channel).count = 0
        misses = channel.cache_stats.misses
        page = await store.page(ListKind.FANS, "star", first=20)
        facts = await store.facts(
            "star", [e.user_id for e in page.entries], Parts(profile=True, relation=True, counts=True)
        )
        names = {f.user_id: f.profile.name if f.profile else None for f in facts}
        assert names == {u: f"Name {u}" for u in users}
        assert all(f.counts is not None and f.counts.following == 1 for f in facts)
        # The page on one node, then the facts on all three: the scripts on one connection per
        # node, the profiles (kept from the first read) a PING on another.
        assert _writes(channel).count == 1 + 3 + 3
        assert channel.cache_stats.misses == misses
        assert channel.rerouted == 0
    finally:
        await channel.aclose()


async def test_an_unlock_s_steps_go_direct_and_each_accepts_once_when_a_slot_moved(
    cluster_client: RedisCluster, redis_cluster: LocalCluster
) -> None:
    channel = ClusterReadChannel(cluster_client, on_send=Writes())
    store = FollowStore(cluster_client, reads=channel)
    log = EventLog(store)
    requesters = [f"r{i}" for i in range(40)]
    try:
        for user in ["owner", *requesters]:
            await store.upsert_user(user)
        await store.update_settings("owner", locked=True)
        for requester in requesters:
            await store.follow(follower=requester, followee="owner")  # a request: the owner is locked
        await store.update_settings("owner", locked=False)
        start = await log.last_id()
        moved = next(r for r in requesters if _node_index(redis_cluster, store.keys.profile(r)) == 0)
        with _moved(redis_cluster, store.keys.profile(moved)):
            # The steps on the other nodes ran on the channel; the moved one's node said MOVED, and
            # the whole part ran again through redis-py, where the steps already run did nothing.
            assert await store.accept_all("owner", batch=len(requesters)) == len(requesters)
            assert channel.rerouted == 1
        accepted = [e.target for e in await log.read(start) if e.kind is EventKind.ACCEPT_FOLLOW_REQUEST]
        assert sorted(map(str, accepted)) == sorted(requesters)  # one event each
        fans = await store.page(ListKind.FANS, "owner", first=100)
        assert sorted(e.user_id for e in fans.entries) == sorted(requesters)
        for requester in requesters:
            following = await store.page(ListKind.FOLLOWING, requester, first=5)
            assert [e.user_id for e in following.entries] == ["owner"]
            assert (await store.page(ListKind.REQUESTS_OUT, requester, first=5)).entries == []
        assert (await verify(store)).clean
    finally:
        await channel.aclose()
