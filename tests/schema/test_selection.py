"""User fields are loaded from what the document selects, however it selects them."""

from __future__ import annotations

import pytest

from tests.served import Served


@pytest.fixture
async def graph(api: Served) -> Served:
    await api.register("star", "fan", "viewer")
    await api.store.follow(follower="fan", followee="star")
    await api.store.follow(follower="viewer", followee="fan")
    await api.store.follow(follower="fan", followee="viewer")
    return api


EXPECTED_FAN = {"name": "User fan", "fansCount": 1, "relationship": "MUTUAL"}


@pytest.mark.parametrize(
    "query",
    [
        '{ user(userId: "star") { fans { nodes { name fansCount relationship } } } }',
        '{ user(userId: "star") { fans { nodes { ...F } } } } '
        "fragment F on User { name fansCount relationship }",
        '{ user(userId: "star") { fans { nodes { ... on User { name } '
        "... on Node { ... on User { fansCount } } relationship } } } }",
        '{ user(userId: "star") { fans { ...C } } } fragment C on FollowConnection { nodes { ...F } } '
        "fragment F on User { name fansCount relationship }",
        '{ user(userId: "star") { fans { nodes { n: name fansCount r: relationship } } } }',
    ],
)
async def test_fields_through_fragments_and_aliases(graph: Served, query: str) -> None:
    data = await graph.data(query, as_user="viewer")
    (fan,) = data["user"]["fans"]["nodes"]
    values = {"name": fan.get("name", fan.get("n")), "fansCount": fan["fansCount"]}
    values["relationship"] = fan.get("relationship", fan.get("r"))
    assert values == EXPECTED_FAN


async def test_edge_relationship_alone_loads_the_relation(graph: Served) -> None:
    data = await graph.data('{ user(userId: "star") { fans { edges { relationship } } } }', as_user="viewer")
    assert data["user"]["fans"]["edges"] == [{"relationship": "MUTUAL"}]


async def test_the_same_connection_asked_twice_with_different_fields(graph: Served) -> None:
    data = await graph.data(
        '{ user(userId: "star") { a: fans { nodes { name } } b: fans { edges { node { fansCount } } } } }',
        as_user="viewer",
    )
    assert data["user"]["a"]["nodes"] == [{"name": "User fan"}]
    assert data["user"]["b"]["edges"] == [{"node": {"fansCount": 1}}]


async def test_merged_fields_of_one_user(graph: Served) -> None:
    data = await graph.data(
        '{ user(userId: "fan") { name } user(userId: "fan") { followingCount relationship } }',
        as_user="viewer",
    )
    assert data["user"] == {"name": "User fan", "followingCount": 2, "relationship": "MUTUAL"}


async def test_node_through_the_interface(graph: Served) -> None:
    user_id = (await graph.data('{ user(userId: "fan") { id } }'))["user"]["id"]
    data = await graph.data(
        "query($id: ID!) { node(id: $id) { id ... on User { name mutualCount viewerIsFollowing } } }",
        {"id": user_id},
        as_user="viewer",
    )
    assert data["node"] == {"id": user_id, "name": "User fan", "mutualCount": 1, "viewerIsFollowing": True}


async def test_payload_users_are_loaded_after_the_write(graph: Served) -> None:
    data = await graph.data(
        'mutation { follow(input: {userId: "star"}) { user { fansCount relationship } '
        "viewer { ...V } } } fragment V on User { followingCount }",
        as_user="viewer",
    )
    assert data["follow"] == {
        "user": {"fansCount": 2, "relationship": "FOLLOWING"},
        "viewer": {"followingCount": 2},
    }
