"""Bulk loading and scanning of the graph: imports, exports and demo data.

Writes go through the same idempotent scripts as single follows, many to a pipeline, so an
import never leaves a half-written edge and can be re-run after an interruption.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from followgraph.store.graph import Edge, FollowStore, upsert_args
from followgraph.store.lua import AnyPipeline, run_pipeline
from followgraph.store.model import Profile
from followgraph.store.scripts import UPSERT_USER_SCRIPT

__all__ = ["Edge", "EdgeStatus", "UserRow", "follow_many", "scan_edges", "scan_users", "upsert_many"]

SCAN_COUNT = 500
# Sorted sets are read FIRST_READ entries each in one pipeline (most sets are smaller), the rest of
# a larger set CHUNK entries a round trip: a celebrity's millions of fans never travel in one reply.
FIRST_READ = 1000
CHUNK = 10_000


class EdgeStatus(enum.IntEnum):
    ADDED = 1
    EXISTED = 0
    FOLLOWER_UNKNOWN = -1
    FOLLOWEE_UNKNOWN = -2


@dataclass(frozen=True, slots=True)
class UserRow:
    user_id: str
    name: str | None = None
    avatar_url: str | None = None
    created_at: int | None = None


async def follow_many(store: FollowStore, edges: Sequence[Edge]) -> list[EdgeStatus]:
    """Apply `edges` in one round trip (three on a cluster). Ids and times must be valid and no edge a
    self-follow."""
    results = await store.follow_edges(edges)
    return [EdgeStatus(changed if status == 0 else status) for status, changed, *_ in results]


async def upsert_many(store: FollowStore, users: Sequence[UserRow]) -> None:
    """Register or update `users` in one round trip. Fields must be valid already."""
    if not users:
        return

    def fill(pipe: AnyPipeline) -> None:
        for user in users:
            args = upsert_args(user.name, user.avatar_url, user.created_at)
            UPSERT_USER_SCRIPT.queue(pipe, [store.keys.profile(user.user_id)], args)

    await run_pipeline(store.redis, fill, [UPSERT_USER_SCRIPT])


async def scan_edges(store: FollowStore) -> AsyncIterator[list[Edge]]:
    """Every follow, a batch of followers at a time (SCAN: consistent enough for a live export)."""
    batch: list[str] = []
    async for key in store.redis.scan_iter(match=store.keys.pattern("following"), count=SCAN_COUNT):
        batch.append(key)
        if len(batch) >= SCAN_COUNT:
            yield await _edges_of(store, batch)
            batch = []
    if batch:
        yield await _edges_of(store, batch)


async def set_entries(store: FollowStore, keys: list[str]) -> AsyncIterator[list[tuple[str, str, int]]]:
    """(owner, member, score) of every entry of the sorted sets `keys`, about CHUNK at a time."""

    def fill(pipe: AnyPipeline) -> None:
        for key in keys:
            pipe.zrange(key, 0, FIRST_READ - 1, withscores=True)

    batch: list[tuple[str, str, int]] = []
    for key, rows in zip(keys, await run_pipeline(store.redis, fill), strict=True):
        owner = store.keys.user_of(key)
        start, size = 0, FIRST_READ
        while True:
            batch += [(owner, member, int(score)) for member, score in rows]
            if len(batch) >= CHUNK:
                yield batch
                batch = []
            if len(rows) < size:
                break
            start, size = start + size, CHUNK
            rows = await store.redis.zrange(key, start, start + size - 1, withscores=True)
    if batch:
        yield batch


async def _edges_of(store: FollowStore, keys: list[str]) -> list[Edge]:
    return [Edge(a, b, at) async for chunk in set_entries(store, keys) for a, b, at in chunk]


async def scan_users(store: FollowStore) -> AsyncIterator[list[Profile]]:
    """Every registered user's profile, a batch at a time."""
    batch: list[str] = []
    async for key in store.redis.scan_iter(match=store.keys.pattern("profile"), count=SCAN_COUNT):
        batch.append(store.keys.user_of(key))
        if len(batch) >= SCAN_COUNT:
            yield [p for p in await store.profiles(batch) if p is not None]
            batch = []
    if batch:
        yield [p for p in await store.profiles(batch) if p is not None]
