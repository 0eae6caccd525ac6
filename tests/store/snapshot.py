"""A full picture of a Redis database, to show what an operation changed (or that it changed nothing)."""

from __future__ import annotations

from typing import cast

import redis.asyncio as aioredis

Snapshot = dict[str, tuple[str, object]]


async def dump(client: aioredis.Redis) -> Snapshot:
    """Every key in the database with its type and full contents."""
    snapshot: Snapshot = {}
    for key in sorted(cast("list[str]", await client.keys("*"))):
        kind = await client.type(key)
        if kind == "zset":
            snapshot[key] = (kind, await client.zrange(key, 0, -1, withscores=True))
        elif kind == "hash":
            snapshot[key] = (kind, await client.hgetall(key))
        elif kind == "string":
            snapshot[key] = (kind, await client.get(key))
        else:
            raise AssertionError(f"unexpected key {key!r} of type {kind!r}")
    return snapshot
