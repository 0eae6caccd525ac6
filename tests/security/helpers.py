"""Helpers of the security suite: apps built for given settings, tokens, snapshots and assertions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.applications import Starlette

from followgraph.server.app import create_app
from followgraph.server.auth import mint_token
from followgraph.server.settings import Settings
from followgraph.store import FollowStore, Keys
from followgraph.store.lua import Client
from tests.store.snapshot import Snapshot, dump

GRAPHQL_RESPONSE = "application/graphql-response+json"
MASKED_MESSAGE = "Internal server error."


@dataclass
class Served:
    """An app for some settings, its store, and an httpx client speaking to it in process."""

    app: Starlette
    client: httpx.AsyncClient
    settings: Settings

    @property
    def store(self) -> FollowStore:
        store: FollowStore = self.app.state.store
        return store

    def auth(self, user_id: str, *, admin: bool = False) -> dict[str, str]:
        return {"authorization": f"Bearer {mint_token(self.settings.auth_config(), user_id, admin=admin)}"}

    async def post(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        as_user: str | None = None,
        accept: str | None = GRAPHQL_RESPONSE,
        headers: dict[str, str] | None = None,
        operation_name: str | None = None,
    ) -> httpx.Response:
        sent = dict(headers or {})
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

    async def register(self, *user_ids: str) -> None:
        for user_id in user_ids:
            await self.store.upsert_user(user_id, name=f"User {user_id}")


@asynccontextmanager
async def serve(settings: Settings, redis: Client) -> AsyncIterator[Served]:
    """The app for `settings` on `redis`, started; an exception it lets out is a 500, as in production."""
    app = create_app(settings, redis=redis)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield Served(app, client, settings)


async def full_dump(redis: Client) -> Snapshot:
    """Every key with its type and contents, the rate limiter's included."""
    return await dump(redis)


async def graph_dump(redis: Client, keys: Keys | None = None) -> Snapshot:
    """The follow graph's keys only (no rate limiter state)."""
    return await dump(redis, (keys or Keys()).pattern())


def refused(response: httpx.Response, code: str, *, several: bool = False) -> dict[str, Any]:
    """A request error answered before execution (graphql-response+json): 400, no `data`, errors of
    `code` only (one, unless `several`); the first error is returned."""
    body = response.json()
    assert response.status_code == 400, (response.status_code, body)
    assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    assert "data" not in body, body
    codes = [error.get("extensions", {}).get("code") for error in body["errors"]]
    assert set(codes) == {code}, body
    assert several or len(codes) == 1, body
    error: dict[str, Any] = body["errors"][0]
    return error


def accepted(response: httpx.Response) -> dict[str, Any]:
    """The `data` of a response that ran without any error."""
    body = response.json()
    assert response.status_code == 200, body
    assert "errors" not in body, body["errors"]
    data: dict[str, Any] = body["data"]
    return data
