"""Fixtures of the store's tests on the real cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import RedisCluster

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster


@pytest.fixture
async def cluster_client(redis_cluster: LocalCluster) -> AsyncIterator[RedisCluster]:
    client = connect(redis_cluster.url, timeout=10.0)
    assert isinstance(client, RedisCluster)
    await client.flushall()
    await client.initialize()
    yield client
    await client.aclose()
