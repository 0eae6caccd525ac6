"""The one way tests reach the app over HTTP: httpx against the ASGI app, with its lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import httpx
from starlette.applications import Starlette

from followgraph.server.app import create_app
from followgraph.server.settings import Settings
from followgraph.server.watchdog import RedisWatchdog
from followgraph.store import FollowStore
from followgraph.store.redis.lua import Client
from followgraph.transport.auth import mint_token
from followgraph.transport.tracing import Tracing


@dataclass
class Served:
    """An app built for some settings, started, and an httpx client speaking to it in process."""

    app: Starlette
    client: httpx.AsyncClient
    settings: Settings
    # The Accept header post() sends unless told otherwise (None: none).
    accept: str | None = None

    @property
    def store(self) -> FollowStore:
        return cast("FollowStore", self.app.state.store)

    def token(self, user_id: str, *, admin: bool = False) -> str:
        return mint_token(self.settings.auth_config(), user_id, admin=admin)

    def auth(self, user_id: str, *, admin: bool = False) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token(user_id, admin=admin)}"}

    async def post(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        as_user: str | None = None,
        accept: str | None = "",
        headers: dict[str, str] | None = None,
        operation_name: str | None = None,
    ) -> httpx.Response:
        """POST one operation; `accept` "" means the default of this client."""
        sent = dict(headers or {})
        accept = self.accept if accept == "" else accept
        if accept is not None:
            sent["accept"] = accept
        if as_user is not None:
            sent.update(self.auth(as_user))
        body: dict[str, Any] = {"query": query}
        if variables is not None:
            body["variables"] = variables
        if operation_name is not None:
            body["operationName"] = operation_name
        return await self.client.post("/graphql", json=body, headers=sent)

    async def data(
        self, query: str, variables: dict[str, Any] | None = None, *, as_user: str | None = None
    ) -> Any:
        """The `data` of a query that must succeed without errors."""
        response = await self.post(query, variables, as_user=as_user)
        body = response.json()
        assert response.status_code == 200, body
        assert "errors" not in body, body["errors"]
        return body["data"]

    async def register(self, *user_ids: str) -> None:
        for user_id in user_ids:
            await self.store.upsert_user(user_id, name=f"User {user_id}")


@asynccontextmanager
async def serve(
    settings: Settings,
    redis: Client | None = None,
    *,
    accept: str | None = None,
    raise_app_exceptions: bool = True,
    watchdog: RedisWatchdog | None = None,
    base_url: str = "http://testserver",
    tracing: Tracing | None = None,
) -> AsyncIterator[Served]:
    """The app for `settings`, started, on `redis` (or the Redis its settings name), with the
    embedded Redis's `watchdog` if any, and `tracing` if any. With `raise_app_exceptions` off, an
    exception the app lets out is a 500, as in production."""
    app = create_app(settings, redis=redis, watchdog=watchdog, tracing=tracing)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            yield Served(app, client, settings, accept)
