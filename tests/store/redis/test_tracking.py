"""Profiles kept by the cluster read channel (store/redis/tracking.py), on a real 3-master cluster: a hot
page's profiles are read once, every change Redis makes to one is seen by the next read (whoever
wrote it), and a lost connection takes what it kept with it; the ordering rule at the protocol
level, with the bytes Redis sends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis
from redis.asyncio import RedisCluster
from redis.exceptions import ConnectionError

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.settings import ConfigError, Settings
from followgraph.store import FollowStore
from followgraph.store.graph.model import Parts
from followgraph.store.graph.scripts import PROFILE_READS
from followgraph.store.redis.cluster_channel import ClusterReadChannel
from followgraph.store.redis.tracking import CacheStats, ProfileChanged, _Kept, _TrackingProtocol

USERS = [f"u{i}" for i in range(20)]
PROFILE = Parts(profile=True)


@pytest.fixture
async def kept(cluster_client: RedisCluster) -> AsyncIterator[FollowStore]:
    """A store whose cluster read channel keeps profiles, its users registered."""
    channel = ClusterReadChannel(cluster_client, timeout=2.0)
    store = FollowStore(cluster_client, reads=channel)
    for user in USERS:
        await store.upsert_user(user, name=f"Name {user}")
    yield store
    await channel.aclose()


def _channel(store: FollowStore) -> ClusterReadChannel:
    assert isinstance(store.reads, ClusterReadChannel)
    return store.reads


def _stats(store: FollowStore) -> CacheStats:
    return _channel(store).cache_stats


async def _names(store: FollowStore, users: list[str] = USERS) -> list[str | None]:
    facts = await store.facts(None, users, PROFILE)
    return [f.profile.name if f.profile else None for f in facts]


def _hmgets(cluster: LocalCluster) -> int:
    """HMGETs the nodes have run so far."""
    total = 0
    for i in range(len(cluster.nodes)):
        node = cluster.client(i)
        try:
            total += int(node.info("commandstats").get("cmdstat_hmget", {}).get("calls", 0))
        finally:
            node.close()
    return total


async def test_a_hot_pages_profiles_are_read_once_then_kept(
    kept: FollowStore, cluster_client: RedisCluster, redis_cluster: LocalCluster
) -> None:
    assert len({kept.keys.slot(u) for u in USERS}) > 10
    plain = FollowStore(cluster_client, reads=ClusterReadChannel(cluster_client, cache=0))
    try:
        expected = [f"Name {u}" for u in USERS]
        assert await _names(plain) == expected
        assert await _names(kept) == expected
        assert (_stats(kept).hits, _stats(kept).misses) == (0, 20)
        before = _hmgets(redis_cluster)
        for _ in range(5):
            assert await _names(kept) == expected
        assert _hmgets(redis_cluster) == before
        assert (_stats(kept).hits, _stats(kept).misses) == (100, 20)
        # The same facts, profiles beside relations and counts, as a channel that keeps none.
        await kept.follow(follower="u1", followee="u2")
        parts = Parts(profile=True, relation=True, counts=True)
        assert await kept.facts("u1", USERS, parts) == await plain.facts("u1", USERS, parts)
        assert _channel(kept).rerouted == 0
    finally:
        await _channel(plain).aclose()


async def test_a_profile_written_is_seen_by_the_very_next_read(kept: FollowStore) -> None:
    await _names(kept)
    for i in range(100):
        user = USERS[i % len(USERS)]
        await kept.upsert_user(user, name=f"Name {i}")
        names = await _names(kept)
        assert names[i % len(USERS)] == f"Name {i}"
    assert _stats(kept).invalidations >= 100


async def test_a_write_by_another_client_is_seen_by_the_next_read(
    kept: FollowStore, redis_cluster: LocalCluster
) -> None:
    """As another server process would write: straight to the node, not through this store."""
    await _names(kept)
    key = kept.keys.profile("u3")
    node = next(i for i in range(len(redis_cluster.nodes)) if redis_cluster.client(i).exists(key))
    other = redis_cluster.client(node)
    try:
        for i in range(50):
            other.hset(key, "name", f"Other {i}")
            assert (await _names(kept, ["u3"]))[0] == f"Other {i}"
        other.delete(key)
        assert await _names(kept, ["u3"]) == [None]
    finally:
        other.close()


async def test_a_profile_changed_while_its_read_waits_for_the_nodes_is_read_again(
    kept: FollowStore, redis_cluster: LocalCluster
) -> None:
    """The write reaches its node after a hot page's read began and before the PINGs that fence
    the nodes: the invalidation comes first, and the read takes the profiles from Redis instead."""
    await _names(kept)
    key = kept.keys.profile("u6")
    host, port = redis_cluster.startup_nodes[0]
    writer = redis.RedisCluster(host=host, port=port)
    try:
        reading = asyncio.ensure_future(_names(kept))
        # Runs after the read queued its PINGs and before the write that sends them.
        asyncio.get_running_loop().call_soon(writer.hset, key, "name", "changed")
        names = await reading
    finally:
        writer.close()
    assert names[6] == "changed"
    assert _stats(kept).changed == 1
    assert _channel(kept).rerouted == 1
    assert (await _names(kept))[6] == "changed"


async def test_settings_changed_reach_the_next_read(kept: FollowStore) -> None:
    facts = await kept.facts(None, ["u4"], Parts(profile=True))
    assert facts[0].profile is not None
    for locked in (True, False, True):
        await kept.update_settings("u4", locked=locked, hide_fans=not locked)
        [columns] = [await kept.columns(None, ["u4"], Parts(profile=True))]
        assert columns.locked == [locked]


async def test_a_flush_empties_what_was_kept(kept: FollowStore, cluster_client: RedisCluster) -> None:
    await _names(kept)
    await cluster_client.flushall()
    assert await _names(kept) == [None] * len(USERS)
    for user in USERS:
        await kept.upsert_user(user, name="again")
    assert await _names(kept) == ["again"] * len(USERS)


async def test_a_lost_connection_takes_what_it_kept_with_it(
    kept: FollowStore, redis_cluster: LocalCluster
) -> None:
    await _names(kept)
    for i in range(len(redis_cluster.nodes)):
        node = redis_cluster.client(i)
        try:
            assert node.client_kill_filter(_type="normal", skipme=True) >= 1
        finally:
            node.close()
    # Written while no tracking connection is there to hear of it.
    await kept.upsert_user("u5", name="while away")
    names = await _names(kept)
    assert names[5] == "while away"
    assert names[:5] == [f"Name {u}" for u in USERS[:5]]


async def test_no_more_than_the_capacity_is_kept(cluster_client: RedisCluster) -> None:
    channel = ClusterReadChannel(cluster_client, cache=3)
    store = FollowStore(cluster_client, reads=channel)
    try:
        for user in USERS:
            await store.upsert_user(user, name=user)
        for _ in range(3):
            assert await _names(store) == USERS
        kept_now = [
            len(protocol.kept.replies)
            for protocol in (c._protocol for c in channel._channels.values())
            if isinstance(protocol, _TrackingProtocol)
        ]
        assert len(kept_now) == 3
        assert all(n <= 3 for n in kept_now)
    finally:
        await channel.aclose()


async def test_a_cluster_that_refuses_tracking_is_read_without_keeping(
    redis_cluster: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """As on a managed Redis, or for a user whose ACL has no CLIENT command: said once, then
    every read goes straight to the nodes, none through redis-py."""
    nodes = [redis_cluster.client(i) for i in range(len(redis_cluster.nodes))]
    client = connect(redis_cluster.url.replace("://", "://untracked:pw@"), timeout=10.0)
    try:
        for node in nodes:
            node.acl_setuser(
                "untracked",
                enabled=True,
                passwords=["+pw"],
                keys=["*"],
                channels=["*"],
                commands=["+@all", "-client"],
            )
        assert isinstance(client, RedisCluster)
        await client.initialize()
        channel = ClusterReadChannel.for_client(client)  # logged in as the client is
        assert channel is not None
        store = FollowStore(client, reads=channel)
        for user in USERS[:5]:
            await store.upsert_user(user, name=f"N {user}")
        for _ in range(3):
            assert await _names(store, USERS[:5]) == [f"N {u}" for u in USERS[:5]]
        assert channel.cache == 0
        assert channel.rerouted == 0
        assert (_stats(store).hits, _stats(store).misses) == (0, 0)
        refused = [r for r in caplog.records if "CLIENT TRACKING" in r.getMessage()]
        assert len(refused) == 1
        await channel.aclose()
    finally:
        await client.aclose()
        for node in nodes:
            node.acl_deluser("untracked")
            node.close()


class _Transport:
    """What the protocol writes, kept (the test plays Redis)."""

    def __init__(self) -> None:
        self.written = b""

    def write(self, data: bytes) -> None:
        self.written += data

    def abort(self) -> None:
        pass


def _protocol() -> tuple[_TrackingProtocol, _Transport]:
    protocol = _TrackingProtocol(5.0, None, _Kept(100, CacheStats()))
    transport = _Transport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


def _bulk(value: str) -> bytes:
    return f"${len(value.encode())}\r\n{value}\r\n".encode()


def _profile_reply(name: str) -> bytes:
    return b"*6\r\n" + _bulk(name) + b"_\r\n" + _bulk("1") + b"_\r\n_\r\n_\r\n"


async def test_a_kept_reply_invalidated_before_the_ping_comes_back_is_not_used() -> None:
    protocol, transport = _protocol()
    first = protocol.read(PROFILE_READS, ["k"])
    await asyncio.sleep(0)
    assert transport.written.startswith(b"*8\r\n$5\r\nHMGET\r\n$1\r\nk\r\n")
    protocol.data_received(_profile_reply("old"))
    assert (await first)[0][0] == "old"
    second = protocol.read(PROFILE_READS, ["k"])
    await asyncio.sleep(0)
    assert transport.written.endswith(b"*1\r\n$4\r\nPING\r\n")  # kept: only the barrier goes out
    # Redis changed the key before it ran the PING: the invalidation comes first.
    protocol.data_received(b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n+PONG\r\n")
    [changed] = await second
    assert isinstance(changed, ProfileChanged)


async def test_reads_queued_together_share_one_ping_and_each_gets_its_own_replies() -> None:
    protocol, transport = _protocol()
    first = protocol.read(PROFILE_READS, ["k", "j"])
    await asyncio.sleep(0)
    protocol.data_received(_profile_reply("k") + _profile_reply("j"))
    await first
    sent = len(transport.written)
    reads = [protocol.read(PROFILE_READS, keys) for keys in (["k"], ["j", "k"], ["j"])]
    await asyncio.sleep(0)
    assert transport.written[sent:] == b"*1\r\n$4\r\nPING\r\n"
    assert not any(read.done() for read in reads)
    protocol.data_received(b"+PONG\r\n")
    assert [[reply[0] for reply in await read] for read in reads] == [["k"], ["j", "k"], ["j"]]
    # A read queued after that write gets a PING of its own.
    later = protocol.read(PROFILE_READS, ["k"])
    await asyncio.sleep(0)
    assert transport.written.count(b"PING") == 2
    protocol.fail(ConnectionError("gone"))
    with pytest.raises(ConnectionError, match="gone"):
        await later


async def test_a_reply_is_kept_as_it_arrives_so_a_later_invalidation_finds_it() -> None:
    protocol, _ = _protocol()
    read = protocol.read(PROFILE_READS, ["k", "j"])
    await asyncio.sleep(0)
    # k's reply, then k changes, then j's reply: k must not stay kept with its old value.
    protocol.data_received(_profile_reply("old k") + b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
    protocol.data_received(_profile_reply("j"))
    assert [reply[0] for reply in await read] == ["old k", "j"]
    assert "k" not in protocol.kept.replies
    assert "j" in protocol.kept.replies
    protocol.data_received(b">2\r\n$10\r\ninvalidate\r\n_\r\n")  # a flush: everything goes
    assert not protocol.kept.replies


async def test_a_reply_nobody_asked_for_drops_the_connection() -> None:
    protocol, _ = _protocol()
    protocol.data_received(b"+PONG\r\n")
    assert protocol.lost is not None
    with pytest.raises(ConnectionError, match="nobody asked for"):
        await protocol.read(PROFILE_READS, ["k"])


def test_the_cache_size_is_a_setting() -> None:
    assert Settings.from_env({}).profile_cache == 20_000
    assert Settings.from_env({"FOLLOWGRAPH_PROFILE_CACHE": "0"}).profile_cache == 0
    with pytest.raises(ConfigError, match="PROFILE_CACHE"):
        Settings.from_env({"FOLLOWGRAPH_PROFILE_CACHE": "-1"})
