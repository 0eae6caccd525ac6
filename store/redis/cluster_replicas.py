"""A cluster's replicas as the read channel reads them (store/redis/cluster_channel.py,
`replica=True`, for FOLLOWGRAPH_READ_FROM_REPLICAS and store/redis/replica_reads.py).

The calls go to a replica of each slot's master, on connections that said READONLY, and keep no
profiles: a slot the map lists no replica for is read on its master, and a replica that redirects
or refuses a read sends it through redis-py, to the master. redis-py talks to the masters alone, so
its map may list a replica that is gone for as long as the masters stay: a replica out of reach (or
loading, or refusing stale reads) sends the reads to the masters for RESTING seconds.
"""

from __future__ import annotations

from redis.asyncio.cluster import ClusterNode

from followgraph.store.redis.channel import Command, ReadChannel
from followgraph.store.redis.replica_reads import UNFIT as UNFIT

# Seconds the reads go to the masters after a replica could not serve one (UNFIT).
RESTING = 5.0


def master_of(nodes: list[ClusterNode]) -> str:
    return nodes[0].name


def replica_of(nodes: list[ClusterNode]) -> str:
    """A replica of a slot's master (the same one each time for each master, so that a page's
    reads of one master share a connection), or the master when the map lists none."""
    return nodes[1].name if len(nodes) > 1 else nodes[0].name


class ReplicaChannel(ReadChannel):
    """A ReadChannel to a replica of a cluster: its connection says READONLY first, so that the
    replica serves the reads of its master's slots rather than redirect them."""

    def _login(self) -> list[Command]:
        return [*super()._login(), ("READONLY",)]
