from __future__ import annotations

import pytest
from redis.asyncio import Redis, RedisCluster

from followgraph.server.redis_client import ClusterUrl, RedisUrlError, connect


def test_a_cluster_url_names_its_nodes_and_credentials() -> None:
    url = ClusterUrl.parse("redis+cluster://app:s%40cret@10.0.0.1:7000,10.0.0.2:7001")
    assert url == ClusterUrl((("10.0.0.1", 7000), ("10.0.0.2", 7001)), "app", "s@cret", tls=False)
    assert ClusterUrl.parse("rediss+cluster://h:1") == ClusterUrl((("h", 1),), None, None, tls=True)


@pytest.mark.parametrize("url", ["redis://localhost:6379/0", "unix:///tmp/redis.sock", "rediss://h:1"])
def test_other_urls_are_not_cluster_urls(url: str) -> None:
    assert ClusterUrl.parse(url) is None


@pytest.mark.parametrize(
    "bad", ["redis+cluster://", "redis+cluster://host", "redis+cluster://h:99999", "redis+cluster://h:1,:2"]
)
def test_a_malformed_cluster_url_is_refused_with_the_part_at_fault(bad: str) -> None:
    with pytest.raises(RedisUrlError, match="is not host:port"):
        ClusterUrl.parse(bad)


async def test_connect_picks_the_client_by_scheme() -> None:
    single = connect("redis://127.0.0.1:1/0")
    cluster = connect("redis+cluster://127.0.0.1:1,127.0.0.1:2")
    try:
        assert isinstance(single, Redis)
        assert isinstance(cluster, RedisCluster)
        assert [(n.host, n.port) for n in cluster.nodes_manager.startup_nodes.values()] == [
            ("127.0.0.1", 1),
            ("127.0.0.1", 2),
        ]
    finally:
        await single.aclose()
        await cluster.aclose()
