"""Relay node(id) / nodes(ids) and the user(userId) / users(userIds) lookups, over HTTP."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.served import Served

NODE = """
query($id: ID!) {
  node(id: $id) { __typename id ... on User { userId name fansCount } }
}
"""
NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on User { userId name } } }"
USERS = "query($ids: [ID!]!) { users(userIds: $ids) { id userId name } }"


def global_id(raw: str) -> str:
    return base64.b64encode(raw.encode()).decode("ascii")


async def errors_of(api: Served, query: str, variables: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """`data` and `errors` of a request that must come back as a 200 with GraphQL errors."""
    response = await api.post(query, variables)
    body = response.json()
    assert response.status_code == 200, body
    assert body.get("errors"), body
    return body.get("data"), body["errors"]


async def test_node_resolves_a_user_from_the_id_the_api_returned(api: Served) -> None:
    await api.register("alice", "bob")
    await api.store.follow(follower="bob", followee="alice")
    user = (await api.data('{ user(userId: "alice") { id userId } }'))["user"]
    assert user["userId"] == "alice"
    assert user["id"] != "alice"

    data = await api.data(NODE, {"id": user["id"]})

    assert data == {
        "node": {
            "__typename": "User",
            "id": user["id"],
            "userId": "alice",
            "name": "User alice",
            "fansCount": 1,
        }
    }


async def test_node_ids_are_distinct_per_user_and_stable_across_requests(api: Served) -> None:
    await api.register("alice", "bob")
    first = await api.data('{ a: user(userId: "alice") { id } b: user(userId: "bob") { id } }')
    again = await api.data('{ a: user(userId: "alice") { id } b: user(userId: "bob") { id } }')

    assert first == again
    assert first["a"]["id"] != first["b"]["id"]


async def test_nodes_in_order_with_null_for_unknown_users(api: Served) -> None:
    await api.register("alice", "bob")
    ids = (await api.data('{ a: user(userId: "alice") { id } b: user(userId: "bob") { id } }')).values()
    alice_id, bob_id = (user["id"] for user in ids)
    ghost = global_id("User:ghost")

    data = await api.data(NODES, {"ids": [bob_id, ghost, alice_id, bob_id]})

    assert data == {
        "nodes": [
            {"__typename": "User", "id": bob_id, "userId": "bob", "name": "User bob"},
            None,
            {"__typename": "User", "id": alice_id, "userId": "alice", "name": "User alice"},
            {"__typename": "User", "id": bob_id, "userId": "bob", "name": "User bob"},
        ]
    }


async def test_unknown_but_well_formed_global_id_is_null(api: Served) -> None:
    await api.register("alice")

    assert await api.data(NODE, {"id": global_id("User:ghost")}) == {"node": None}
    assert await api.data(NODES, {"ids": []}) == {"nodes": []}


@pytest.mark.parametrize(
    "bad_id",
    [
        "not base64!",
        "alice",
        global_id("Post:alice"),
        global_id("User:bad id"),
        global_id("User:" + "x" * 65),
        global_id("Useralice"),
        base64.b64encode(b"\xff\xfe:\x00").decode(),
        "",
    ],
)
async def test_malformed_global_id_is_bad_user_input(api: Served, bad_id: str) -> None:
    await api.register("alice")

    data, errors = await errors_of(api, NODE, {"id": bad_id})

    assert data == {"node": None}
    assert len(errors) == 1
    assert errors[0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert errors[0]["path"] == ["node"]
    assert "Invalid global id" in errors[0]["message"]


async def test_one_malformed_id_fails_nodes(api: Served) -> None:
    await api.register("alice")
    alice_id = (await api.data('{ user(userId: "alice") { id } }'))["user"]["id"]

    data, errors = await errors_of(api, NODES, {"ids": [alice_id, "garbage!"]})

    assert data is None  # nodes is non-null, so the error nulls the whole response
    assert [e["extensions"]["code"] for e in errors] == ["BAD_USER_INPUT"]


async def test_users_in_order_with_nulls_for_unknown_ids(api: Served) -> None:
    await api.register("alice", "bob")

    data = await api.data(USERS, {"ids": ["bob", "nobody", "alice", "bob"]})

    users = data["users"]
    assert [u and u["userId"] for u in users] == ["bob", None, "alice", "bob"]
    assert users[0]["name"] == "User bob"
    assert users[2]["name"] == "User alice"
    assert users[0]["id"] == users[3]["id"] != users[2]["id"]
    assert await api.data(USERS, {"ids": []}) == {"users": []}


async def test_users_accepts_exactly_100_ids(api: Served) -> None:
    await api.register("alice")
    ids = ["alice", *(f"u{i}" for i in range(99))]

    users = (await api.data(USERS, {"ids": ids}))["users"]

    assert len(users) == 100
    assert users[0]["userId"] == "alice"
    assert users[1:] == [None] * 99


@pytest.mark.parametrize("field", ["users(userIds: $ids) { userId }", "nodes(ids: $ids) { id }"])
async def test_more_than_100_ids_is_bad_user_input(api: Served, field: str) -> None:
    await api.register("alice")
    query = f"query($ids: [ID!]!) {{ {field} }}"
    ids = [global_id(f"User:u{i}") for i in range(101)]

    data, errors = await errors_of(api, query, {"ids": ids})

    assert data is None
    assert len(errors) == 1
    assert errors[0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "At most 100 ids" in errors[0]["message"]
    assert "101" in errors[0]["message"]


@pytest.mark.parametrize("user_id", ["bad id", "", "x" * 65, "../alice", "alice\n"])
async def test_user_with_a_malformed_id_is_bad_user_input(api: Served, user_id: str) -> None:
    await api.register("alice")

    data, errors = await errors_of(api, "query($id: ID!) { user(userId: $id) { userId } }", {"id": user_id})

    assert data == {"user": None}
    assert len(errors) == 1
    assert errors[0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert errors[0]["extensions"]["argument"] == "userId"
    assert errors[0]["path"] == ["user"]
    assert "Invalid user id" in errors[0]["message"]


async def test_user_that_is_not_registered_is_null(api: Served) -> None:
    await api.register("alice")
    assert await api.data('{ user(userId: "bob") { userId } }') == {"user": None}
    assert await api.data('{ user(userId: "alice") { userId } }') == {"user": {"userId": "alice"}}
