"""The schema as a Federation 2 subgraph (FOLLOWGRAPH_FEDERATION=1): its SDL and directives,
`_entities` answering as `users(userIds:)` does, and what an entity batch costs in round trips.
A real gateway in front of it: tests/schema/test_federation_gateway.py."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import UnixDomainSocketConnection

from followgraph.schema import build_schema, schema
from followgraph.schema.federation import MAX_REPRESENTATIONS, build_subgraph_schema
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.lua import Client
from tests.roundtrips import RoundTripCounter
from tests.served import Served, serve

ENTITIES = """query($representations: [_Any!]!) { _entities(representations: $representations) {
  ... on User { userId name fansCount relationship fans(first: 3) {
    totalCount edges { relationship followedAt node { userId name } } } } } }"""
USERS = """query($ids: [ID!]!) { users(userIds: $ids) { userId name fansCount relationship fans(first: 3) {
  totalCount edges { relationship followedAt node { userId name } } } } }"""


def representations(*user_ids: str) -> dict[str, Any]:
    return {"representations": [{"__typename": "User", "userId": user_id} for user_id in user_ids]}


def test_with_federation_off_the_schema_is_the_public_one() -> None:
    assert Settings.from_env({}).federation is False
    assert Settings.from_env({"FOLLOWGRAPH_FEDERATION": "1"}).federation is True
    # The federated schema's directives are its own: a public schema built after it prints as the
    # one built at import (which test_sdl holds to the committed SDL).
    build_subgraph_schema()
    assert build_schema().as_str() == schema.as_str()
    assert "@key" not in schema.as_str() and "_entities" not in schema.as_str()


def test_the_subgraph_sdl_keys_user_by_user_id_and_shares_its_profile() -> None:
    sdl = build_subgraph_schema().as_str()
    assert sdl.startswith(
        'schema @link(url: "https://specs.apollo.dev/federation/v2.0", import: ["@key", "@shareable"])'
    )
    assert re.findall(r"^type \w+[^{]*@key\(.*$", sdl, re.MULTILINE) == [
        'type User implements Node @key(fields: "userId", resolvable: true) {'
    ]
    assert re.findall(r"^  (\w+)[^\n]*@shareable$", sdl, re.MULTILINE) == ["name", "avatarUrl"]
    assert "_entities(representations: [_Any!]!): [_Entity]!" in sdl
    assert "union _Entity = User" in sdl
    # Everything else is the public schema's.
    plain = re.sub(r" @(key|shareable)(\([^)]*\))?", "", sdl)
    public = schema.as_str()
    assert set(public.splitlines()) <= set(plain.splitlines())


@pytest.fixture
def federated(settings: Settings) -> Settings:
    return replace(settings, federation=True)


@pytest.fixture
async def subgraph(served_redis: Client, federated: Settings) -> AsyncIterator[Served]:
    """The app as a subgraph, on the real Redis server or the cluster."""
    async with serve(federated, served_redis) as served:
        yield served


async def test_service_sdl_is_the_exported_subgraph_schema(subgraph: Served) -> None:
    data = await subgraph.data("{ _service { sdl } }")
    assert data["_service"]["sdl"] == build_subgraph_schema().as_str()


async def test_a_gateway_gets_the_sdl_with_introspection_off(
    served_redis: Client, federated: Settings
) -> None:
    production = replace(federated, production=True, introspection=False, graphiql=False)
    async with serve(production, served_redis) as api:
        refused = (await api.post("{ __schema { queryType { name } } }")).json()
        assert refused["errors"], refused
        assert (await api.data("{ _service { sdl } }"))["_service"]["sdl"].startswith("schema @link(")


async def _graph(api: Served) -> None:
    await api.register("alice", "bob", "carol", "viewer")
    await api.store.follow(follower="bob", followee="alice")
    await api.store.follow(follower="carol", followee="alice")
    await api.store.follow(follower="viewer", followee="bob")
    await api.store.follow(follower="alice", followee="viewer")


async def test_entities_answer_as_users_does_relative_to_the_viewer(subgraph: Served) -> None:
    await _graph(subgraph)
    ids = ["alice", "nobody", "bob", "alice"]
    entities = await subgraph.data(ENTITIES, representations(*ids), as_user="viewer")
    users = await subgraph.data(USERS, {"ids": ids}, as_user="viewer")
    assert entities["_entities"] == users["users"]
    assert entities["_entities"][1] is None  # unknown users are null, as user(userId:) says
    assert entities["_entities"][0]["relationship"] == "FOLLOWED_BY"
    assert [e["relationship"] for e in entities["_entities"][0]["fans"]["edges"]] == ["NONE", "FOLLOWING"]
    anonymous = await subgraph.data(ENTITIES, representations("alice"))
    assert anonymous["_entities"][0]["relationship"] == "NONE"


async def test_a_malformed_representation_is_an_error_of_its_own(subgraph: Served) -> None:
    await _graph(subgraph)
    variables = {
        "representations": [
            {"__typename": "User", "userId": "alice"},
            {"__typename": "Post", "id": "1"},
            {"__typename": "User"},
            {"__typename": "User", "userId": "no spaces"},
        ]
    }
    response = await subgraph.post(
        "query($representations: [_Any!]!) { _entities(representations: "
        "$representations) { ... on User { userId } } }",
        variables,
    )
    body = response.json()
    assert body["data"] == {"_entities": [{"userId": "alice"}, None, None, None]}
    assert sorted(tuple(e["path"]) for e in body["errors"]) == [("_entities", i) for i in (1, 2, 3)]
    assert {e["extensions"]["code"] for e in body["errors"]} == {"BAD_USER_INPUT"}


async def test_a_batch_past_the_limit_is_refused(subgraph: Served) -> None:
    ids = [f"u{i}" for i in range(MAX_REPRESENTATIONS + 1)]
    response = await subgraph.post(
        "query($representations: [_Any!]!) { _entities(representations: $representations) "
        "{ ... on User { userId } } }",
        representations(*ids),
    )
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert str(MAX_REPRESENTATIONS) in error["message"]


# -- round trips ------------------------------------------------------------------------------


class CountingConnection(RoundTripCounter, UnixDomainSocketConnection):
    """A counting unix-socket connection."""


FANS = 100


@pytest.fixture
async def counted(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Served]:
    """The subgraph on a counting connection pool: 100 users with fans of their own."""
    pool = aioredis.ConnectionPool(
        connection_class=CountingConnection, path=str(redis_server.socket_path), decode_responses=True
    )
    client = aioredis.Redis(connection_pool=pool)
    await client.flushall()
    store = FollowStore(client)
    for i in range(FANS):
        await store.upsert_user(f"u{i}", name=f"User {i}")
    await store.upsert_user("viewer", name="Viewer")
    for i in range(FANS):
        await store.follow(follower=f"u{(i + 1) % FANS}", followee=f"u{i}")
        await store.follow(follower=f"u{(i + 7) % FANS}", followee=f"u{i}")
        if i % 3:
            await store.follow(follower="viewer", followee=f"u{i}")
    # No SQL copy or search index: their reads of the change log would be counted.
    settings = Settings(
        data_dir=tmp_path, jwt_secret="x" * 40, sync=False, search_index=False, federation=True
    )
    async with serve(settings, client) as served:
        yield served
    await client.aclose()
    await pool.disconnect()


async def round_trips(api: Served, query: str, variables: dict[str, Any]) -> int:
    CountingConnection.sent = 0
    await api.data(query, variables, as_user="viewer")
    return CountingConnection.sent


async def test_an_entity_batch_of_100_costs_what_one_of_1_costs_and_what_users_costs(counted: Served) -> None:
    ids = [f"u{i}" for i in range(FANS)]
    await round_trips(counted, ENTITIES, representations(*ids))  # the scripts' first use loads them
    one = await round_trips(counted, ENTITIES, representations("u0"))
    hundred = await round_trips(counted, ENTITIES, representations(*ids))
    users = await round_trips(counted, USERS, {"ids": ids})
    # The users with their counts, then their pages, then the pages' users: 3, as users(userIds:).
    assert one == hundred == users == 3
    # No compiled plan covers _entities: the general executor answers it.
    assert counted.app.state.endpoint.executor.plan(ENTITIES, None) is None
