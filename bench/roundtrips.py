"""Round trips per request, counted in-process: the apps run here on a counting connection pool.

A round trip is one write to a Redis socket: one per command, or one per pipeline (as in
tests/dataloaders/test_batching.py), handshakes aside; B's own client counts its writes the same
way. The same in-process apps also give the reference responses the harness compares the servers'
answers with.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection

from bench.plain import ChannelReads, PlainApp
from bench.queries import FOLLOW_MUTATION, UNFOLLOW_MUTATION, bearer, fans_query_body, raw_body
from bench.rawapp import create_bench_app
from followgraph.server.app import create_app
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from tests.roundtrips import RoundTripCounter


class CountingConnection(RoundTripCounter, Connection):
    """A counting TCP connection."""


async def counted(action: Callable[[], Awaitable[Any]]) -> tuple[int, Any]:
    """Round trips `action` makes, and what it returned."""
    CountingConnection.sent = 0
    result = await action()
    return CountingConnection.sent, result


class InProcess:
    """Server A's app and the C/D app, in this process, on one counting pool; B on its own client."""

    def __init__(
        self,
        client: aioredis.Redis,
        a: httpx.AsyncClient,
        b: tuple[PlainApp, httpx.AsyncClient],
        cd: httpx.AsyncClient,
        general: httpx.AsyncClient,
    ) -> None:
        self.client = client
        self.store = FollowStore(client)
        # The server's follow rate limit (its default): the script loop counts it as A does.
        self.follow_limit = Settings().follow_limit
        self.a = a
        # A without compiled plans: every request through the general executor.
        self.general = general
        self.plain, self.b = b
        self.cd = cd
        self.raw: dict[str, bytes] = {}

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, port: int, secret: str, data_dir: Path) -> AsyncIterator[InProcess]:
        pool = aioredis.ConnectionPool(
            connection_class=CountingConnection, host="127.0.0.1", port=port, decode_responses=True
        )
        client = aioredis.Redis(connection_pool=pool)
        settings = Settings.from_env({}, jwt_secret=secret, production=True, data_dir=data_dir)
        app_a = create_app(settings, redis=client)
        # The general executor's app keeps no SQL copy: two apps migrating one SQLite file race.
        app_g = create_app(
            dataclasses.replace(settings, compiled_queries=False, database_url="off"), redis=client
        )
        app_cd = create_bench_app(secret=secret, redis=client)
        plain = PlainApp(secret, f"redis://127.0.0.1:{port}/0")
        await plain.start()
        try:
            async with (
                app_a.router.lifespan_context(app_a),
                app_g.router.lifespan_context(app_g),
                app_cd.router.lifespan_context(app_cd),
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app_a), base_url="http://a") as a,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=plain), base_url="http://b") as b,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app_cd), base_url="http://c") as cd,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app_g), base_url="http://g") as g,
            ):
                yield cls(client, a, (plain, b), cd, g)
        finally:
            await plain.stop()
            await client.aclose()
            await pool.disconnect()

    async def fans_page(
        self, route: str, token: str, user_id: str, first: int, offset: int = 0
    ) -> tuple[int, Any]:
        """(round trips, JSON answer) of one fans page through route 'A', 'B', 'C' or 'D', or 'G'
        (A's general executor)."""

        async def go() -> Any:
            if route in ("A", "G"):
                response = await (self.a if route == "A" else self.general).post(
                    "/graphql", content=fans_query_body(user_id, first), headers=_json(token)
                )
            else:
                http = self.b if route == "B" else self.cd
                response = await http.post(
                    f"/{route.lower()}", content=raw_body(user_id, first, offset), headers=_json(token)
                )
            response.raise_for_status()
            self.raw[route] = response.content
            return response.json()

        if route != "B":
            return await counted(go)
        reads = self.plain.reads
        assert isinstance(reads, ChannelReads)
        before = reads.writes
        answer = await go()
        return reads.writes - before, answer

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
            limit = self.follow_limit
            return await counted(lambda: self.store.follow(follower=follower, followee=followee, limit=limit))
        return await counted(lambda: self.store.unfollow(follower=follower, followee=followee))


def _json(token: str) -> dict[str, str]:
    return {**bearer(token), "Content-Type": "application/json"}
