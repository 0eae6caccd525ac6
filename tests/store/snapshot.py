"""A full picture of a Redis database, to show what an operation changed (or that it changed nothing)."""

from __future__ import annotations

from followgraph.store.redis.lua import Client

Snapshot = dict[str, tuple[str, object]]


async def dump(client: Client, match: str | None = None) -> Snapshot:
    """Every key (matching `match`) with its type and full contents, on every node of a cluster."""
    snapshot: Snapshot = {}
    for key in sorted([str(k) async for k in client.scan_iter(match=match)]):
        kind = await client.type(key)
        value: object
        if kind == "zset":
            value = await client.zrange(key, 0, -1, withscores=True)
        elif kind == "hash":
            value = await client.hgetall(key)
        elif kind == "string":
            value = await client.get(key)
        elif kind == "list":
            value = await client.lrange(key, 0, -1)
        elif kind == "set":
            value = sorted(await client.smembers(key))
        elif kind == "stream":  # the change log
            value = await client.xrange(key)
        else:
            raise AssertionError(f"unexpected key {key!r} of type {kind!r}")
        snapshot[key] = (kind, value)
    return snapshot


def graph_only(snapshot: Snapshot) -> Snapshot:
    """A snapshot without the change log: what two histories reaching one graph both hold."""
    return {key: value for key, value in snapshot.items() if value[0] != "stream"}
