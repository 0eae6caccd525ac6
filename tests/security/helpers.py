"""Helpers of the security suite: apps built for given settings, tokens, snapshots and assertions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from followgraph.server.settings import Settings
from followgraph.store import Keys
from followgraph.store.redis.lua import Client
from tests.served import Served
from tests.served import serve as served
from tests.store.snapshot import Snapshot, dump

GRAPHQL_RESPONSE = "application/graphql-response+json"
MASKED_MESSAGE = "Internal server error."


@asynccontextmanager
async def serve(settings: Settings, redis: Client) -> AsyncIterator[Served]:
    """The app for `settings` on `redis`, started, asking for graphql-response+json; an exception
    it lets out is a 500, as in production."""
    async with served(settings, redis, accept=GRAPHQL_RESPONSE, raise_app_exceptions=False) as app:
        yield app


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
