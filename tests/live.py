"""The app under a real uvicorn in the test's event loop, on a free port: HTTP and WebSocket clients
reach it over TCP (httpx's in-process transport speaks no WebSocket)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import httpx
import uvicorn
from starlette.applications import Starlette

from followgraph.server.app import create_app
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.log.hub import EventHub
from followgraph.store.redis.lua import Client
from followgraph.transport.auth import mint_token
from followgraph.transport.http_protocol import GuardedHttpToolsProtocol
from followgraph.transport.ws_protocol import GoingAwayWebSocketProtocol
from tests.server.processes import free_port


@dataclass
class Live:
    """A started app and where to reach it."""

    app: Starlette
    settings: Settings
    port: int
    http: httpx.AsyncClient
    server: uvicorn.Server
    task: asyncio.Task[None]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    @property
    def store(self) -> FollowStore:
        return cast("FollowStore", self.app.state.store)

    @property
    def hub(self) -> EventHub:
        return cast("EventHub", self.app.state.hub)

    def token(self, user_id: str, **claims: Any) -> str:
        return mint_token(self.settings.auth_config(), user_id, **claims)

    async def register(self, *user_ids: str) -> None:
        for user_id in user_ids:
            await self.store.upsert_user(user_id, name=f"User {user_id}")

    async def data(self, query: str, variables: dict[str, Any] | None = None, *, as_user: str) -> Any:
        """The `data` of an operation over HTTP as `as_user`, which must succeed without errors."""
        response = await self.http.post(
            self.url,
            json={"query": query, "variables": variables or {}},
            headers={"authorization": f"Bearer {self.token(as_user)}"},
        )
        body = response.json()
        assert response.status_code == 200 and "errors" not in body, body
        return body["data"]

    async def stop(self) -> None:
        """Shut the server down as a signal would (open sockets are closed by uvicorn)."""
        self.server.should_exit = True
        await self.task

    async def subscribers(self, count: int, timeout: float = 5.0) -> None:
        """Wait until the hub holds `count` subscribers (their live events are buffered from then)."""
        async with asyncio.timeout(timeout):
            while self.hub.subscribers != count:
                await asyncio.sleep(0.01)


@asynccontextmanager
async def serve_live(
    settings: Settings, redis: Client | None = None, *, guarded: bool = False
) -> AsyncIterator[Live]:
    """The app on uvicorn's own HTTP protocol, or with `guarded` on the one `serve` runs (its read
    limits from `settings`)."""
    app = create_app(settings, redis=redis)
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_config=None,
        lifespan="on",
        http=GuardedHttpToolsProtocol.with_limits(settings.read_limits) if guarded else "auto",
        ws=GoingAwayWebSocketProtocol,
        ws_max_size=settings.max_body_bytes,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    # Signals stay the test runner's.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(10):
        while not server.started:
            assert not task.done(), task.exception() if not task.cancelled() else "cancelled"
            await asyncio.sleep(0.01)
    async with httpx.AsyncClient(timeout=10) as http:
        live = Live(app, settings, port, http, server, task)
        try:
            yield live
        finally:
            await live.stop()
