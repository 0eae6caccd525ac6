"""Which read channel a client gets: for the store's pages and users' facts (`open_reads`), and for
bulk reads of many keys, such as exports (`open_keyed_reads`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from followgraph.store.redis.channel import KeyedReads, ReadChannel, Reads
from followgraph.store.redis.cluster_channel import ClusterReadChannel
from followgraph.store.redis.keeping_channel import KeepingReadChannel
from followgraph.store.redis.lua import Client
from followgraph.store.redis.tracking import DEFAULT_CAPACITY

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer


def open_reads(
    client: Client,
    *,
    timeout: float | None = None,
    cache: int = DEFAULT_CAPACITY,
    tracer: Tracer | None = None,
) -> Reads | None:
    """The read channel for `client`: one connection to a single Redis, one per master node of a
    cluster, and one more (per node) keeping up to `cache` profiles; None where the store reads
    through redis-py (TLS, an in-memory fake). With a `tracer`, its round trips get spans."""
    if cache > 0:
        kept = KeepingReadChannel.for_client(client, timeout=timeout, tracer=tracer, capacity=cache)
        if kept is not None:
            return kept
    single = ReadChannel.for_client(client, timeout=timeout, tracer=tracer)
    if single is not None:
        return single
    return ClusterReadChannel.for_client(client, timeout=timeout, cache=cache, tracer=tracer)


def open_keyed_reads(client: Client, *, timeout: float | None = None) -> KeyedReads | None:
    """A channel for bulk reads of many keys (exports), keeping nothing: one connection to a single
    Redis, one per master node of a cluster; None where they go through redis-py (TLS, a fake)."""
    single = ReadChannel.for_client(client, timeout=timeout)
    if single is not None:
        return single
    return ClusterReadChannel.for_client(client, timeout=timeout, cache=0)
