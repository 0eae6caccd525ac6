"""Writes that wait for replicas (store/redis/replicas.py), on real servers: a primary with a live
replica confirms each write with one WAIT in the write's round trip; a paused replica makes the
write an error within the timeout, its retry too (the barrier), and reads never wait; on a cluster
the WAIT goes to the node that took the write."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from redis.asyncio import RedisCluster

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster, free_cluster_ports
from followgraph.server.redis_server import RedisServer
from followgraph.store import FollowStore, Keys, Parts
from followgraph.store.graph import scripts
from followgraph.store.redis.channel import ReadChannel
from followgraph.store.redis.lua import LuaScript, run_scripts
from followgraph.store.redis.replicas import (
    ReplicaWait,
    WriteNotReplicatedError,
    command_writes,
    script_writes,
    wait_for_replicas,
    waits_for_replicas,
)
from tests.replicated import Replicated, primary_and_replica

# Long enough for a live replica on a busy machine; what a paused one makes a write wait.
WAIT = ReplicaWait(1, 1.0)
USERS = ("a", "b", "c")
ALL = Parts(profile=True, relation=True, counts=True)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Replicated]:
    with primary_and_replica(tmp_path) as replicated:
        yield replicated


@pytest.fixture
async def store(pair: Replicated) -> AsyncIterator[FollowStore]:
    """A store whose writes wait for one replica; reads through the client (no read channel)."""
    client = connect(pair.url, timeout=2 * WAIT.timeout)
    try:
        wait_for_replicas(client, WAIT, Keys().replicated)
        store = FollowStore(client)
        for user in USERS:
            await store.upsert_user(user, name=user.upper())
        yield store
    finally:
        await client.aclose()


def test_scripts_that_write_are_told_from_reads() -> None:
    assert script_writes(scripts.FOLLOW_SCRIPT.source)
    assert script_writes(scripts.UPSERT_USER_SCRIPT.source)
    for read in (scripts.PAGE_SCRIPT, scripts.COUNTS_SCRIPT, scripts.HIDDEN_SCRIPT, scripts.CONTROLS_SCRIPT):
        assert not script_writes(read.source)
    assert not script_writes("return redis.call('ZSCORE', KEYS[1], ARGV[1])")
    assert script_writes('return redis.pcall("zadd", KEYS[1], 1, ARGV[1])')
    # A command the script does not name could be anything.
    assert script_writes("local cmd = ARGV[1] return redis.call(cmd, KEYS[1])")
    unknown = "0" * 40
    assert command_writes(("EVALSHA", unknown, 0)), "a script not known by its SHA is taken to write"
    assert not command_writes(("HSET", "k", "f", "v")), "plain commands do not wait"
    made = LuaScript("return redis.call('GET', KEYS[1])")
    assert not command_writes(made.command(["k"]))


async def test_a_write_waits_for_the_replica_in_its_own_round_trip(
    store: FollowStore, pair: Replicated
) -> None:
    await store.follow(follower="c", followee="b")  # Redis learns the script
    waits = pair.calls("wait")
    started = time.monotonic()
    result = await store.follow(follower="a", followee="b")
    assert result.changed
    assert time.monotonic() - started < WAIT.timeout
    assert pair.calls("wait") == waits + 1
    # The replica has it: what WAIT confirmed.
    replica = redis.Redis(unix_socket_path=str(pair.replica.socket_path), decode_responses=True)
    try:
        assert replica.zscore(Keys().following("a"), "b") is not None
    finally:
        replica.close()


async def test_reads_send_no_wait(store: FollowStore, pair: Replicated) -> None:
    await store.follow(follower="a", followee="b")
    waits = pair.calls("wait")
    await store.facts("a", list(USERS), ALL)
    await store.profiles(list(USERS))
    await store.new_fans_count("b")
    assert pair.calls("wait") == waits
    with pair.paused():
        started = time.monotonic()
        [facts] = await store.facts("a", ["b"], ALL)
        assert facts.profile is not None and facts.counts is not None and facts.counts.fans == 1
        assert time.monotonic() - started < WAIT.timeout, "a read waited for the paused replica"
    assert pair.calls("wait") == waits


async def test_a_write_the_replica_does_not_confirm_is_an_error_within_the_timeout(
    store: FollowStore, pair: Replicated
) -> None:
    # Redis learns the script first: a call it does not know (NOSCRIPT) waits a second time, when
    # it runs again once loaded.
    await store.follow(follower="b", followee="c")
    with pair.paused():
        started = time.monotonic()
        with pytest.raises(WriteNotReplicatedError) as refused:
            await store.follow(follower="a", followee="c")
        took = time.monotonic() - started
        assert WAIT.timeout <= took < WAIT.timeout + 1.0
        assert "0 of the 1 replica(s) it waits for confirmed it within 1 s" in str(refused.value)
        assert "Send it again" in str(refused.value)
        assert (refused.value.acknowledged, refused.value.wanted) == (0, 1)
        # Made on the primary all the same: its retry changes nothing, and is not confirmed either,
        # even on a connection that never wrote (the barrier: WAIT covers what the primary did).
        other = connect(pair.url, timeout=2 * WAIT.timeout)
        wait_for_replicas(other, WAIT, Keys().replicated)
        try:
            with pytest.raises(WriteNotReplicatedError):
                await FollowStore(other).follow(follower="a", followee="c")
        finally:
            await other.aclose()
    retried = await store.follow(follower="a", followee="c")
    assert not retried.changed


async def test_pipelines_wait_once_after_their_writes(store: FollowStore, pair: Replicated) -> None:
    k = store.keys
    await store.follow(follower="c", followee="b")  # Redis learns the script
    waits = pair.calls("wait")
    # A follow and the reads of its payload in one round trip (the mutations' path): one WAIT.
    result, facts = await store.follow_reading(follower="b", followee="a", limit=None, parts=ALL)
    assert not isinstance(result, Exception) and result.changed
    assert [f.user_id for f in facts] == ["a", "b"]
    assert pair.calls("wait") == waits + 1
    # Reads alone: none.
    await run_scripts(
        store.redis, [(scripts.COUNTS_SCRIPT, [k.following("a"), k.fans("a"), k.mutual("a")], [])]
    )
    assert pair.calls("wait") == waits + 1
    # Scripts the primary forgot (as after a failover): loaded, run, confirmed.
    await store.redis.script_flush()
    assert (await store.unfollow(follower="b", followee="a")).changed
    assert (await store.follow(follower="c", followee="a")).changed
    # A pipeline the caller fills itself, with plain commands beside the write.
    await scripts.MARK_FANS_SEEN_SCRIPT.load(store.redis)
    async with store.redis.pipeline(transaction=False) as pipe:
        pipe.hget(k.profile("a"), "name")
        scripts.MARK_FANS_SEEN_SCRIPT.queue(pipe, [k.fans_seen("a"), k.profile("a")])
        name, seen = await pipe.execute()
    assert name == "A" and int(seen) > 0
    with pair.paused(), pytest.raises(WriteNotReplicatedError):
        async with store.redis.pipeline(transaction=False) as pipe:
            scripts.MARK_FANS_SEEN_SCRIPT.queue(pipe, [k.fans_seen("b"), k.profile("b")])
            await pipe.execute()
    with pytest.raises(TypeError, match="transaction"):
        async with store.redis.pipeline(transaction=True) as pipe:
            scripts.MARK_FANS_SEEN_SCRIPT.queue(pipe, [k.fans_seen("b"), k.profile("b")])
            await pipe.execute()


async def test_repeatable_writes_leave_the_read_channel_for_the_client(pair: Replicated) -> None:
    client = aioredis.Redis(unix_socket_path=str(pair.primary.socket_path), decode_responses=True)
    reads = ReadChannel.for_client(client)
    assert reads is not None
    try:
        store = FollowStore(client, reads=reads)
        await store.upsert_user("a", name="A")
        keys = [store.keys.fans_seen("a"), store.keys.profile("a")]
        await scripts.MARK_FANS_SEEN_SCRIPT.load(client)
        undo = wait_for_replicas(client, WAIT, store.keys.replicated)
        waits = pair.calls("wait")
        await store.run_repeatable([(scripts.MARK_FANS_SEEN_SCRIPT, keys, [])])
        assert pair.calls("wait") == waits + 1
        undo()
        assert not waits_for_replicas(client)
        await store.run_repeatable([(scripts.MARK_FANS_SEEN_SCRIPT, keys, [])])
        assert pair.calls("wait") == waits + 1
        assert "execute_command" not in vars(client) and "pipeline" not in vars(client)
    finally:
        await reads.aclose()
        await client.aclose()


# -- a cluster: two masters, the first with a replica ----------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "cluster", masters=2) as local:
        first = local.client(0)
        # A cluster node needs its port + 10000 free for the cluster bus, below 65536.
        [port] = free_cluster_ports(1)
        replica = RedisServer(
            tmp_path / "replica",
            port=port,
            extra_args=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
            binary=local.binary,
        )
        replica.start()
        try:
            node = redis.Redis(unix_socket_path=str(replica.socket_path), decode_responses=True)
            node.cluster("MEET", "127.0.0.1", str(local.nodes[0].port))
            master_id = first.cluster("MYID")
            deadline = time.monotonic() + 20
            # REPLICATE once it is taken: each call starts the link to the master over (Redis 6.2),
            # so a call every turn could keep a slow full sync from ever finishing.
            replicating = False
            while True:
                try:
                    if not replicating:
                        node.cluster("REPLICATE", master_id)
                        replicating = True
                    if node.info("replication").get("master_link_status") == "up":
                        break
                except redis.ResponseError:  # the new node does not know the master yet
                    pass
                assert time.monotonic() < deadline, "the cluster replica did not sync"
                time.sleep(0.1)
            node.close()
            first.close()
            yield local
        finally:
            replica.kill()


def _on_node(client: RedisCluster, index: int, count: int) -> list[str]:
    """`count` user ids whose slots are on the `index`-th master, by port."""
    port = sorted(node.port for node in client.get_primaries())[index]
    keys = Keys()
    found: list[str] = []
    n = 0
    while len(found) < count:
        user = f"u{n}"
        node = client.get_node_from_key(keys.profile(user))
        if node is not None and node.port == port:
            found.append(user)
        n += 1
    return found


async def test_on_a_cluster_the_wait_goes_to_the_node_of_the_write(cluster: LocalCluster) -> None:
    client = connect(cluster.url, timeout=2 * WAIT.timeout)
    try:
        assert isinstance(client, RedisCluster)
        await client.initialize()
        first = cluster.nodes[0].port
        replicated, lone = (0, 1) if min(node.port for node in cluster.nodes) == first else (1, 0)
        a, b = _on_node(client, replicated, 2)
        [c] = _on_node(client, lone, 1)
        store = FollowStore(client)
        for user in (a, b, c):
            await store.upsert_user(user)
        wait_for_replicas(client, WAIT, store.keys.replicated)
        # Both steps of the follow on the master with a replica: confirmed.
        assert (await store.follow(follower=a, followee=b)).changed
        # The second step on the master without one: not confirmed, though made.
        with pytest.raises(WriteNotReplicatedError, match="0 of the 1 replica"):
            await store.follow(follower=a, followee=c)
        assert await store.redis.zscore(store.keys.fans(c), a) is not None
        # Reads on either master never wait.
        [facts] = await store.facts(a, [c], ALL)
        assert facts.counts is not None and facts.counts.fans == 1
    finally:
        await client.aclose()
