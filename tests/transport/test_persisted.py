"""Automatic persisted queries over HTTP: a hash alone, PersistedQueryNotFound, the document sent
once and then known to every process through Redis, GET and POST."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from followgraph.server.settings import Settings
from followgraph.store.redis.lua import Client
from tests.served import Served, serve

QUERY = '{ user(userId: "a") { name fansCount } }'
DIGEST = hashlib.sha256(QUERY.encode()).hexdigest()


def persisted(digest: str = DIGEST, version: int = 1) -> dict[str, Any]:
    return {"persistedQuery": {"version": version, "sha256Hash": digest}}


async def post(api: Served, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = await api.client.post("/graphql", json=body)
    answer: dict[str, Any] = response.json()
    return response.status_code, answer


async def test_a_hash_is_not_found_until_its_document_is_sent_once(
    api: Served, served_redis: Client, settings: Settings
) -> None:
    await api.register("a")
    status, body = await post(api, {"extensions": persisted()})
    assert status == 200
    assert body["errors"][0]["message"] == "PersistedQueryNotFound"
    assert body["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    status, body = await post(api, {"query": QUERY, "extensions": persisted()})
    assert (status, body) == (200, {"data": {"user": {"name": "User a", "fansCount": 0}}})
    status, body = await post(api, {"extensions": persisted()})
    assert body == {"data": {"user": {"name": "User a", "fansCount": 0}}}
    # Another process, with nothing in memory, finds it in Redis.
    async with serve(settings, served_redis) as other:
        status, body = await post(other, {"extensions": persisted()})
        assert body == {"data": {"user": {"name": "User a", "fansCount": 0}}}


async def test_a_get_with_the_hash_alone(api: Served) -> None:
    await api.register("a")
    await post(api, {"query": QUERY, "extensions": persisted()})
    response = await api.client.get("/graphql", params={"extensions": json.dumps(persisted())})
    assert response.json() == {"data": {"user": {"name": "User a", "fansCount": 0}}}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"query": "{ viewer { userId } }", "extensions": persisted()}, "PERSISTED_QUERY_HASH_MISMATCH"),
        ({"extensions": persisted(version=2)}, "BAD_REQUEST"),
        ({"extensions": persisted(digest="ABC")}, "BAD_REQUEST"),
    ],
)
async def test_a_bad_persisted_query_is_400_and_kept_nowhere(
    api: Served, body: dict[str, Any], code: str
) -> None:
    status, answer = await post(api, body)
    assert status == 400
    assert answer["errors"][0]["extensions"]["code"] == code
    assert await api.store.redis.get(api.store.keys.persisted_query(DIGEST)) is None
    assert (await post(api, {"extensions": persisted()}))[1]["errors"][0][
        "message"
    ] == "PersistedQueryNotFound"


async def test_a_kept_document_expires(api: Served) -> None:
    await post(api, {"query": QUERY, "extensions": persisted()})
    ttl = await api.store.redis.ttl(api.store.keys.persisted_query(DIGEST))
    assert 0 < ttl <= 86_400
