"""Round trips per request, counted in-process: the apps run here on a counting connection pool.

A round trip is one write to a Redis socket: one per command, or one per pipeline (as in
tests/dataloaders/test_batching.py), handshakes aside. The same in-process apps also give the
reference responses the harness compares the servers' answers with.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection

from bench.queries import FOLLOW_MUTATION, UNFOLLOW_MUTATION, bearer, fans_query_body, raw_body
from bench.rawapp import create_bench_app
from followgraph.server.app import create_app
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.roundtrips import RoundTripCounter


class CountingConnection(RoundTripCounter, Connection):
    """A counting TCP connection."""


async def counted(action: Callable[[], Awaitable[Any]]) -> tuple[int, Any]:
    """Round trips `action` makes, and what it returned."""
    CountingConnection.sent = 0
    result = await action()
    return CountingConnection.sent, result


class InProcess:
    """Server A's app and the B/C/D app, in this process, on one counting pool."""

    def __init__(self, client: aioredis.Redis, a: httpx.AsyncClient, bcd: httpx.AsyncClient) -> None:
        self.client = client
        self.store = FollowStore(client)
        self.a = a
        self.bcd = bcd

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, port: int, secret: str, data_dir: Path) -> AsyncIterator[InProcess]:
        pool = aioredis.ConnectionPool(
            connection_class=CountingConnection, host="127.0.0.1", port=port, decode_responses=True
        )
        client = aioredis.Redis(connection_pool=pool)
        settings = Settings.from_env({}, jwt_secret=secret, production=True, data_dir=data_dir)
        app_a = create_app(settings, redis=client)
        app_bcd = create_bench_app(secret=secret, redis=client)
        try:
            async with (
                app_a.router.lifespan_context(app_a),
                app_bcd.router.lifespan_context(app_bcd),
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app_a), base_url="http://a") as a,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app_bcd), base_url="http://b") as bcd,
            ):
                yield cls(client, a, bcd)
        finally:
            await client.aclose()
            await pool.disconnect()

    async def fans_page(
        self, route: str, token: str, user_id: str, first: int, offset: int = 0
    ) -> tuple[int, Any]:
        """(round trips, JSON answer) of one fans page through route 'A', 'B', 'C' or 'D'."""

        async def go() -> Any:
            if route == "A":
                response = await self.a.post(
                    "/graphql", content=fans_query_body(user_id, first), headers=_json(token)
                )
            else:
                response = await self.bcd.post(
                    f"/{route.lower()}", content=raw_body(user_id, first, offset), headers=_json(token)
                )
            response.raise_for_status()
            return response.json()

        return await counted(go)

    async def mutation(self, token: str, user_id: str, *, follow: bool) -> tuple[int, Any]:
        query = FOLLOW_MUTATION if follow else UNFOLLOW_MUTATION

        async def go() -> Any:
            response = await self.a.post(
                "/graphql", json={"query": query, "variables": {"userId": user_id}}, headers=bearer(token)
            )
            response.raise_for_status()
            return response.json()

        return await counted(go)

    async def raw_follow(self, follower: str, followee: str, *, follow: bool) -> tuple[int, Any]:
        if follow:
            return await counted(lambda: self.store.follow(follower=follower, followee=followee))
        return await counted(lambda: self.store.unfollow(follower=follower, followee=followee))


def _json(token: str) -> dict[str, str]:
    return {**bearer(token), "Content-Type": "application/json"}
