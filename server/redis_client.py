"""The Redis client of a server process: pooled, with timeouts and retries on lost connections.

Retries are safe: every write of the store is an idempotent script, so a command re-sent after a
lost reply leaves the same state as one that arrived once.

`redis+cluster://host:port[,host:port...]` (or `rediss+cluster://` for TLS) selects Redis Cluster:
the client learns the slot map from any of the nodes named and follows it as it changes.

`redis+sentinel://host:port[,host:port...]/service[/db]` (or `rediss+sentinel://`) selects a
primary watched by Redis Sentinel: each new connection asks the sentinels named for the service's
primary, so after a failover the connections that broke are made again to the new one. The user
and password of the URL are the primary's; the sentinels are asked without.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import unquote, urlsplit

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, RedisError, TimeoutError

from followgraph.store.redis.lua import Client

log = logging.getLogger(__name__)

SOCKET_TIMEOUT = 1.0
CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}
SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}
# The URL schemes connect() takes: redis-py's own, the cluster's and Sentinel's.
REDIS_SCHEMES = frozenset({"redis", "rediss", "unix", *CLUSTER_SCHEMES, *SENTINEL_SCHEMES})


class RedisUrlError(ValueError):
    """A Redis URL that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class ClusterUrl:
    nodes: tuple[tuple[str, int], ...]
    username: str | None
    password: str | None
    tls: bool

    @classmethod
    def parse(cls, url: str) -> ClusterUrl | None:
        """The parts of a cluster URL; None for any other URL."""
        scheme, _, rest = url.partition("://")
        if scheme not in CLUSTER_SCHEMES:
            return None
        nodes, username, password, _ = _nodes(url, rest, "Redis Cluster")
        return cls(nodes, username, password, CLUSTER_SCHEMES[scheme])


@dataclass(frozen=True)
class SentinelUrl:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int
    username: str | None
    password: str | None
    tls: bool

    @classmethod
    def parse(cls, url: str) -> SentinelUrl | None:
        """The parts of a Sentinel URL; None for any other URL."""
        scheme, _, rest = url.partition("://")
        if scheme not in SENTINEL_SCHEMES:
            return None
        nodes, username, password, path_text = _nodes(url, rest, "Redis Sentinel")
        path = [part for part in path_text.split("/") if part]
        if not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
            raise RedisUrlError(
                f"Redis Sentinel URL {url!r}: name the service after the sentinels, "
                "as in redis+sentinel://host:26379/mymaster (or /mymaster/DB)."
            )
        db = int(path[1]) if len(path) == 2 else 0
        return cls(nodes, unquote(path[0]), db, username, password, SENTINEL_SCHEMES[scheme])


def _nodes(url: str, rest: str, kind: str) -> tuple[tuple[tuple[str, int], ...], str | None, str | None, str]:
    """The host:port list of a cluster or Sentinel URL (`rest`, after its scheme), its user and
    password, and its path."""
    parts = urlsplit(f"redis://{rest}")
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    nodes = []
    for host in hosts.split(","):
        name, _, port = host.strip().rpartition(":")
        if not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise RedisUrlError(f"{kind} URL {url!r}: {host!r} is not host:port.")
        nodes.append((name, int(port)))
    return tuple(nodes), unquote(username) or None, unquote(password) or None, parts.path


class HiredisPacking(AbstractConnection):
    """Commands packed by hiredis (in C) rather than redis-py's Python encoder: a seventh of a
    page's CPU time went to packing its four script calls (bench/benchmarks.md, profile)."""

    def pack_command(self, *args: Any) -> list[bytes]:
        # As redis-py does: a command name of several words ('SCRIPT LOAD') is several arguments.
        name = args[0]
        if isinstance(name, str) and " " in name:
            args = (*name.split(), *args[1:])
        elif isinstance(name, bytes) and b" " in name:
            args = (*name.split(), *args[1:])
        return [hiredis.pack_command(args)]


_PACKING: dict[type[AbstractConnection], type[AbstractConnection]] = {}


def _hiredis_packing(base: type[AbstractConnection]) -> type[AbstractConnection]:
    """`base` (TCP, TLS or Unix socket connection) packing its commands with hiredis."""
    if base not in _PACKING:
        _PACKING[base] = type(f"Hiredis{base.__name__}", (HiredisPacking, base), {})
    return _PACKING[base]


def _retry() -> Retry:
    # One retry: enough for a lost reply or a restarted server. redis-py applies this policy to the
    # command and again to the reconnect inside it, so attempts multiply; a second layer of
    # health-check PINGs would multiply them again, hence no health checks.
    return Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=1)


def _common(max_connections: int, timeout: float) -> dict[str, Any]:
    return {
        "decode_responses": True,
        "max_connections": max_connections,
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "retry": _retry(),
        "retry_on_error": [ConnectionError, TimeoutError],
        "health_check_interval": 0,
    }


def connect(url: str, *, max_connections: int = 64, timeout: float = SOCKET_TIMEOUT) -> Client:
    """A client for `url` (redis://, rediss://, unix:// or a cluster URL) that decodes replies to str.

    A command that gets no answer within `timeout` seconds fails (and is retried, then reported);
    the pool blocks up to `timeout` when all its connections are busy, instead of failing the
    request as redis-py's default pool does.
    """
    common = _common(max_connections, timeout)
    cluster = ClusterUrl.parse(url)
    if cluster is not None:
        return RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in cluster.nodes],
            username=cluster.username,
            password=cluster.password,
            ssl=cluster.tls,
            **common,
        )
    sentinel = SentinelUrl.parse(url)
    if sentinel is not None:
        return _sentinel_client(sentinel, common)
    pool = aioredis.BlockingConnectionPool.from_url(url, timeout=timeout, **common)
    pool.connection_class = _hiredis_packing(pool.connection_class)
    return aioredis.Redis.from_pool(pool)


class SentinelFound(aioredis.Redis):
    """The client of a primary, or of its replicas, found through Sentinel: closing it closes its
    sentinels' clients too (redis-py leaves them to the caller)."""

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        await self.connection_pool.sentinel_manager.aclose()  # type: ignore[attr-defined]


def connect_replicas(url: str, *, max_connections: int = 64, timeout: float = SOCKET_TIMEOUT) -> Client:
    """A client of the replicas the sentinels of the Sentinel URL `url` name (each new connection
    goes to the next one they list, and to the primary while they list none)."""
    sentinel = SentinelUrl.parse(url)
    if sentinel is None:
        raise RedisUrlError(f"{url!r} is not a Redis Sentinel URL: replicas are found through Sentinel.")
    return _sentinel_client(sentinel, _common(max_connections, timeout), replicas=True)


def _sentinel_client(url: SentinelUrl, common: dict[str, Any], *, replicas: bool = False) -> Client:
    """A client of the primary the sentinels of `url` name (of its replicas with `replicas`), found
    again at every new connection."""
    timeouts = {key: common[key] for key in ("socket_timeout", "socket_connect_timeout")}
    sentinels = Sentinel(list(url.sentinels), sentinel_kwargs={**timeouts, "decode_responses": True})
    found = sentinels.slave_for if replicas else sentinels.master_for
    client: Client = found(
        url.service,
        redis_class=SentinelFound,
        db=url.db,
        username=url.username,
        password=url.password,
        ssl=url.tls,
        **common,
    )
    return client


async def sentinel_replicas(client: Client) -> int:
    """How many replicas the sentinels of `client` (a client connect_replicas or connect made from a
    Sentinel URL) know of its service, whatever their state; ConnectionError when none answers."""
    pool: Any = cast("aioredis.Redis", client).connection_pool
    for sentinel in pool.sentinel_manager.sentinels:
        try:
            return len(await sentinel.sentinel_slaves(pool.service_name))
        except (ConnectionError, TimeoutError):
            continue
    raise ConnectionError(f"No sentinel answered about {pool.service_name!r}.")


async def cluster_replicas(client: RedisCluster) -> int:
    """The most replicas any master of the cluster `client` talks to has, whatever their state,
    as CLUSTER NODES lists them (CLUSTER SLOTS leaves out those marked as failed)."""
    nodes: dict[str, dict[str, Any]] = await client.cluster_nodes()
    masters = {node["node_id"]: 0 for node in nodes.values() if "master" in node["flags"]}
    for node in nodes.values():
        if "slave" in node["flags"] and node["master_id"] in masters:
            masters[node["master_id"]] += 1
    return max(masters.values(), default=0)


async def warm_up(client: Client) -> None:
    """Learn a cluster's slot map now, before requests use the client concurrently: redis-py (8.1)
    can lose a reply when the first commands of a new cluster client race its lazy start-up. A
    cluster that is not reachable yet is left to the client's own lazy start (and /readyz says so).
    """
    if isinstance(client, RedisCluster):
        try:
            await client.initialize()
        except (RedisError, OSError) as exc:
            log.warning("redis cluster not reachable at start: %s", exc)
