"""FollowGraph as a subgraph behind a real @apollo/gateway, beside a posts subgraph written with
Apollo Server and @apollo/subgraph (tests/interop/federation/): the gateway composes both from
their `_service { sdl }`, forwards the viewer's bearer token, and its answers are FollowGraph's own;
the entity fetch costs what `users(userIds:)` costs. And composition beside a users subgraph that
owns the profile, which needs name and avatarUrl @shareable.

Needs Node.js and npm (the test installs tests/interop/federation's locked packages the first time);
without Node.js it is skipped unless FOLLOWGRAPH_REQUIRE_WEB=1 (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import UnixDomainSocketConnection

from followgraph.schema.federation import build_subgraph_schema
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.lua import Client
from tests import gateway
from tests.live import Live, serve_live
from tests.roundtrips import RoundTripCounter
from tests.server.processes import free_ports

AUTHOR_FIELDS = """userId name fansCount relationship
  fans(first: 3) { totalCount edges { relationship followedAt node { userId name relationship } } }"""
POSTS = f"query Posts {{ posts {{ id title author {{ {AUTHOR_FIELDS} }} }} }}"
USERS = f"query Authors($ids: [ID!]!) {{ users(userIds: $ids) {{ {AUTHOR_FIELDS} }} }}"
AUTHORS = [f"a{i}" for i in range(10)]


@pytest.fixture(scope="module")
def node() -> str:
    found = gateway.node()
    if found is None:
        if os.environ.get("FOLLOWGRAPH_REQUIRE_WEB") == "1":
            pytest.fail("Node.js and npm are needed for the federation gateway test")
        pytest.skip("Node.js and npm are needed for the federation gateway test")
    return found


class CountingConnection(RoundTripCounter, UnixDomainSocketConnection):
    """A counting unix-socket connection."""


@pytest.fixture
async def counted_redis(redis_server: RedisServer) -> AsyncIterator[Client]:
    pool = aioredis.ConnectionPool(
        connection_class=CountingConnection, path=str(redis_server.socket_path), decode_responses=True
    )
    client = aioredis.Redis(connection_pool=pool)
    await client.flushall()
    yield client
    await client.aclose()
    await pool.disconnect()


async def _graph(store: FollowStore) -> None:
    """Ten authors with fans among thirty readers; the viewer follows some, some follow back."""
    readers = [f"r{i}" for i in range(30)]
    for user_id in [*AUTHORS, *readers, "viewer"]:
        await store.upsert_user(user_id, name=f"User {user_id}")
    for i, author in enumerate(AUTHORS):
        for reader in readers[i : i + 3 + i]:
            await store.follow(follower=reader, followee=author)
    for reader in readers[::2]:
        await store.follow(follower="viewer", followee=reader)
    for reader in readers[::3]:
        await store.follow(follower=reader, followee="viewer")
    await store.follow(follower="viewer", followee="a1")


class Supergraph:
    """FollowGraph served live, the posts subgraph and the gateway in front of both."""

    def __init__(self, followgraph: Live, url: str) -> None:
        self.followgraph = followgraph
        self.url = url

    async def ask(self, query: str, *, as_user: str | None) -> Any:
        """The data of a query asked of the gateway."""
        return await self._data(self.url, query, {}, as_user)

    async def direct(self, query: str, variables: dict[str, Any], *, as_user: str | None) -> Any:
        """The data of a query asked of FollowGraph itself."""
        return await self._data(self.followgraph.url, query, variables, as_user)

    async def _data(self, url: str, query: str, variables: dict[str, Any], as_user: str | None) -> Any:
        headers = {} if as_user is None else {"authorization": f"Bearer {self.followgraph.token(as_user)}"}
        body = {"query": query, "variables": variables}
        response = await self.followgraph.http.post(url, json=body, headers=headers)
        answer = response.json()
        assert response.status_code == 200 and "errors" not in answer, answer
        return answer["data"]


# The gateways: Apollo's (@apollo/gateway, composing at start) and the Hive gateway
# (@graphql-hive/gateway, serving the supergraph @apollo/composition composed): their programs.
GATEWAYS = {"apollo": "gateway.mjs", "hive": "hive.mjs"}


@pytest.fixture(params=list(GATEWAYS))
async def supergraph(
    request: pytest.FixtureRequest, node: str, counted_redis: Client, tmp_path: Path, settings: Settings
) -> AsyncIterator[Supergraph]:
    await _graph(FollowStore(counted_redis))
    # Posts by every author, some by the same one: the gateway asks FollowGraph for them at once.
    posts = [{"id": f"p{i}", "title": f"Post {i}", "authorId": AUTHORS[i % 7]} for i in range(12)]
    posts_file = tmp_path / "posts.json"
    posts_file.write_text(json.dumps(posts))
    subgraph = Settings(
        data_dir=settings.data_dir,
        jwt_secret=settings.jwt_secret,
        database_url="off",
        sync=False,
        search_index=False,
        federation=True,
    )
    posts_port, gateway_port = free_ports(2)
    async with (
        serve_live(subgraph, counted_redis) as live,
        gateway.started(
            node, tmp_path / "posts.log", "posts.mjs", str(posts_port), str(posts_file)
        ) as posts_url,
        gateway.started(
            node,
            tmp_path / "gateway.log",
            GATEWAYS[request.param],
            str(gateway_port),
            f"followgraph={live.url}",
            f"posts={posts_url}",
        ) as gateway_url,
    ):
        yield Supergraph(live, gateway_url)


def _authors_of(posts: list[dict[str, Any]]) -> list[str]:
    return [post["author"]["userId"] for post in posts]


async def test_posts_authors_through_the_gateway_are_followgraphs_answers(supergraph: Supergraph) -> None:
    for viewer in ("viewer", None):
        posts = (await supergraph.ask(POSTS, as_user=viewer))["posts"]
        assert [p["id"] for p in posts] == [f"p{i}" for i in range(12)]
        direct = await supergraph.direct(USERS, {"ids": _authors_of(posts)}, as_user=viewer)
        assert [p["author"] for p in posts] == direct["users"]
    # The token reached FollowGraph: its viewer-relative fields are the viewer's, not anonymous.
    seen = (await supergraph.ask(POSTS, as_user="viewer"))["posts"]
    relationships = {e["relationship"] for p in seen for e in p["author"]["fans"]["edges"]}
    assert {"FOLLOWING", "MUTUAL", "FOLLOWED_BY"} <= relationships
    assert seen[1]["author"]["relationship"] == "FOLLOWING"


async def test_a_bad_token_through_the_gateway_is_refused_not_taken_as_anonymous(
    supergraph: Supergraph,
) -> None:
    headers = {"authorization": "Bearer not-a-token"}
    response = await supergraph.followgraph.http.post(supergraph.url, json={"query": POSTS}, headers=headers)
    body = response.json()
    # FollowGraph's 401 reaches the client: a post's author is not null-able, so no data at all.
    assert body["data"] is None, body
    assert {error["extensions"]["code"] for error in body["errors"]} == {"UNAUTHENTICATED"}


async def test_the_entity_fetch_costs_what_users_costs(supergraph: Supergraph) -> None:
    posts = (await supergraph.ask(POSTS, as_user="viewer"))["posts"]  # scripts loaded
    await supergraph.direct(USERS, {"ids": _authors_of(posts)}, as_user="viewer")
    CountingConnection.sent = 0
    await supergraph.ask(POSTS, as_user="viewer")
    through_gateway = CountingConnection.sent
    CountingConnection.sent = 0
    await supergraph.direct(USERS, {"ids": _authors_of(posts)}, as_user="viewer")
    direct = CountingConnection.sent
    # The authors with their counts, their pages, the pages' users.
    assert through_gateway == direct == 3


async def test_followgraphs_own_fields_through_the_gateway(supergraph: Supergraph) -> None:
    query = '{ user(userId: "a4") { fansCount fans(first: 5) { edges { relationship node { name } } } } }'
    through = await supergraph.ask(query, as_user="viewer")
    assert through == await supergraph.direct(query, {}, as_user="viewer")
    # The gateway's document for FollowGraph's part is compiled as any other that ran once.
    executor = supergraph.followgraph.app.state.endpoint.executor
    assert executor.plans is not None
    sent = [key for key, plan in executor.plans.items() if plan is not None]
    assert len(sent) == 2, executor.plans  # the gateway's and ours


def test_a_users_subgraph_that_owns_the_profile_composes_with_followgraph(node: str, tmp_path: Path) -> None:
    sdl = build_subgraph_schema().as_str()
    ours = tmp_path / "followgraph.graphql"
    ours.write_text(sdl)
    composed = gateway.compose(node, {"followgraph": ours, "users": gateway.USERS_SDL})
    assert composed["errors"] == []
    assert "email: String @join__field(graph: USERS)" in composed["supergraphSdl"]
    # Without @shareable, the profile fields would be resolved by two subgraphs that do not say so.
    unshared = tmp_path / "unshared.graphql"
    unshared.write_text(sdl.replace(" @shareable", ""))
    refused = gateway.compose(node, {"followgraph": unshared, "users": gateway.USERS_SDL})
    assert [e.split(":")[0] for e in refused["errors"]] == [
        'Non-shareable field "User.name" is resolved from multiple subgraphs',
        'Non-shareable field "User.avatarUrl" is resolved from multiple subgraphs',
    ]


def test_the_locked_packages_are_the_pinned_ones() -> None:
    manifest = json.loads((gateway.PROJECT / "package.json").read_text())
    lock = json.loads((gateway.PROJECT / "package-lock.json").read_text())
    for name, version in manifest["dependencies"].items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
