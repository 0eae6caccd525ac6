"""Proof that the raw bulk loader writes what the store writes.

A small fan graph is written twice into scratch databases of the harness' Redis: once by the raw
loader, once through the store itself (UPSERT_USER and the FOLLOW script, given the same times);
then every key of the graph in both is compared, type and content. The store's change log is left
out: the raw loader writes none (the benchmark's graphs are not copied to SQL).
"""

from __future__ import annotations

from typing import Any, cast

import redis.asyncio as aioredis

from bench.graph import CREATED_MS, FanGraph, fan_graph_edges, fan_graph_users, load_fan_graph
from followgraph.store import FollowStore
from followgraph.store.graph.bulk import Edge, UserRow, follow_many, upsert_many

RAW_DB, STORE_DB = 14, 15
CHUNK = 2000


async def _dump(client: aioredis.Redis) -> dict[str, Any]:
    keys = sorted([key async for key in client.scan_iter(count=1000)])
    dump: dict[str, Any] = {}
    for key in keys:
        kind = await client.type(key)
        if kind == "zset":
            dump[key] = ("zset", await client.zrange(key, 0, -1, withscores=True))
        elif kind == "hash":
            dump[key] = ("hash", await cast("Any", client.hgetall(key)))
        else:
            dump[key] = (kind, None)
    return dump


async def raw_loader_matches_store(host: str, port: int) -> str:
    graph = FanGraph(sizes=(1000, 3000), writers=("w1", "w2"))
    raw = aioredis.Redis(host=host, port=port, db=RAW_DB, decode_responses=True)
    via_store = aioredis.Redis(host=host, port=port, db=STORE_DB, decode_responses=True)
    try:
        await raw.flushdb()
        await via_store.flushdb()
        load_fan_graph(graph, host, port, db=RAW_DB)
        store = FollowStore(via_store)
        users = [
            UserRow(user_id, name, f"https://avatars.example.com/{user_id}.png", CREATED_MS)
            for user_id, name in fan_graph_users(graph)
        ]
        for start in range(0, len(users), CHUNK):
            await upsert_many(store, users[start : start + CHUNK])
        edges = [Edge(a, b, at) for a, b, at in fan_graph_edges(graph)]
        for start in range(0, len(edges), CHUNK):
            await follow_many(store, edges[start : start + CHUNK])
        expected, got = await _dump(via_store), await _dump(raw)
        for key in store.keys.logs():
            expected.pop(key, None)
        if expected == got:
            return f"identical ({len(got):,} keys, {len(edges):,} follows)"
        differing = sorted(k for k in expected.keys() | got.keys() if expected.get(k) != got.get(k))
        return f"DIFFERENT in {len(differing)} keys, e.g. {differing[:3]}"
    finally:
        await raw.flushdb()
        await via_store.flushdb()
        await raw.aclose()
        await via_store.aclose()
