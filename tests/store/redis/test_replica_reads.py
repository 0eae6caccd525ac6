"""The choice of side in store/redis/replica_reads.py, on real servers: a replica that refuses
reads while its link to the primary is down (`replica-serve-stale-data no`) has them read from the
primary instead, and one that serves gets them."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from followgraph.server.redis_server import RedisServer
from followgraph.store.redis.lua import LuaScript
from followgraph.store.redis.replica_reads import ClientReads, ReplicaReads
from tests.server.processes import free_ports

READ = LuaScript("return redis.call('GET', KEYS[1])")


async def _one() -> int:
    return 1


def _client(server: RedisServer) -> aioredis.Redis:
    return aioredis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)


async def _set(server: RedisServer, value: str) -> None:
    async with _client(server) as client:
        await client.set("k", value)


def _reads(primary: RedisServer, replica: RedisServer) -> ReplicaReads:
    return ReplicaReads(
        ClientReads(_client(replica), owns=True),
        ClientReads(_client(primary), owns=True),
        waited=1,
        count=_one,
    )


async def test_a_replica_cut_off_from_its_primary_has_its_reads_made_on_the_primary(tmp_path: Path) -> None:
    primary, replica = RedisServer(tmp_path / "primary"), RedisServer(tmp_path / "replica")
    with primary, replica:
        await _set(primary, "on the primary")
        # Its primary is a port nobody listens on: the link never comes up, and it refuses reads.
        async with _client(replica) as client:
            await client.config_set("replica-serve-stale-data", "no")
            await client.replicaof("127.0.0.1", free_ports(1)[0])
        reads = _reads(primary, replica)
        try:
            assert await reads.run_scripts([(READ, ["k"], [])]) == ["on the primary"]
            assert await reads.run_scripts([(READ, ["k"], []), (READ, ["k"], [])]) == ["on the primary"] * 2
            assert reads.allowed is True
            assert reads.served == {"replica": 0, "primary": 2, "unfit": 2}
        finally:
            await reads.aclose()


async def test_a_replica_that_serves_gets_the_reads(tmp_path: Path) -> None:
    primary = RedisServer(tmp_path / "primary")
    # Not replicating at all: what it holds is its own, which tells the sides apart.
    replica = RedisServer(tmp_path / "replica")
    with primary, replica:
        await _set(replica, "on the replica")
        reads = _reads(primary, replica)
        try:
            assert await reads.run_scripts([(READ, ["k"], [])]) == ["on the replica"]
            assert reads.served == {"replica": 1, "primary": 0, "unfit": 0}
        finally:
            await reads.aclose()
