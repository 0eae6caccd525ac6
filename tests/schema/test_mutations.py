"""follow / unfollow / removeFan / upsertUser over HTTP: idempotence, payloads, errors, auth."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from followgraph.store import ListKind
from tests.served import Served

PAYLOAD = """
  changed
  relationship
  errors { code message field }
  user { userId relationship followingCount fansCount mutualCount viewerIsFollowing isFollowingViewer }
  viewer { userId followingCount fansCount mutualCount }
"""
FOLLOW = f"mutation($id: ID!) {{ follow(input: {{userId: $id}}) {{ {PAYLOAD} }} }}"
UNFOLLOW = f"mutation($id: ID!) {{ unfollow(input: {{userId: $id}}) {{ {PAYLOAD} }} }}"
REMOVE_FAN = f"mutation($id: ID!) {{ removeFan(input: {{userId: $id}}) {{ {PAYLOAD} }} }}"
UPSERT = """
mutation($id: ID!, $name: String, $avatarUrl: String) {
  upsertUser(input: {userId: $id, name: $name, avatarUrl: $avatarUrl}) {
    user { userId name avatarUrl createdAt }
    errors { code message field }
  }
}
"""


async def act(api: Served, mutation: str, as_user: str, other: str) -> dict[str, Any]:
    data = await api.data(mutation, {"id": other}, as_user=as_user)
    (payload,) = data.values()
    assert isinstance(payload, dict)
    return payload


async def members(api: Served, kind: ListKind, user_id: str) -> list[str]:
    page = await api.store.page(kind, user_id, first=100)
    return [entry.user_id for entry in page.entries]


async def graph(api: Served, *user_ids: str) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """Every list of every user, straight from the store."""
    return {
        u: (
            await members(api, ListKind.FOLLOWING, u),
            await members(api, ListKind.FANS, u),
            await members(api, ListKind.MUTUAL, u),
        )
        for u in user_ids
    }


def counts(following: int, fans: int, mutual: int) -> dict[str, int]:
    return {"followingCount": following, "fansCount": fans, "mutualCount": mutual}


async def test_follow_is_idempotent_and_the_payload_is_fresh(api: Served) -> None:
    await api.register("alice", "bob")

    first = await act(api, FOLLOW, "alice", "bob")
    again = await act(api, FOLLOW, "alice", "bob")

    assert first == {
        "changed": True,
        "relationship": "FOLLOWING",
        "errors": [],
        "user": {
            "userId": "bob",
            "relationship": "FOLLOWING",
            **counts(0, 1, 0),
            "viewerIsFollowing": True,
            "isFollowingViewer": False,
        },
        "viewer": {"userId": "alice", **counts(1, 0, 0)},
    }
    assert again == {**first, "changed": False}
    assert await graph(api, "alice", "bob") == {"alice": (["bob"], [], []), "bob": ([], ["alice"], [])}


async def test_follow_back_makes_mutual(api: Served) -> None:
    await api.register("alice", "bob")
    await act(api, FOLLOW, "alice", "bob")

    back = await act(api, FOLLOW, "bob", "alice")

    assert back["changed"] is True
    assert back["relationship"] == "MUTUAL"
    assert back["user"] == {
        "userId": "alice",
        "relationship": "MUTUAL",
        **counts(1, 1, 1),
        "viewerIsFollowing": True,
        "isFollowingViewer": True,
    }
    assert back["viewer"] == {"userId": "bob", **counts(1, 1, 1)}
    assert (await act(api, FOLLOW, "bob", "alice"))["changed"] is False
    assert await graph(api, "alice", "bob") == {
        "alice": (["bob"], ["bob"], ["bob"]),
        "bob": (["alice"], ["alice"], ["alice"]),
    }


async def test_follow_time_is_now_in_iso_8601(api: Served) -> None:
    await api.register("alice", "bob")
    await act(api, FOLLOW, "alice", "bob")

    data = await api.data(
        '{ user(userId: "bob") { viewerFollowedAt followedViewerAt fans { edges { followedAt } } } }',
        as_user="alice",
    )

    stamp = data["user"]["viewerFollowedAt"]
    assert data["user"]["fans"]["edges"] == [{"followedAt": stamp}]
    assert data["user"]["followedViewerAt"] is None
    assert stamp.endswith("Z")
    assert len(stamp) == len("2026-01-01T00:00:00.000Z")
    assert abs(datetime.now(UTC) - datetime.fromisoformat(stamp)) < timedelta(minutes=1)


async def test_unfollow_is_idempotent(api: Served) -> None:
    await api.register("alice", "bob")
    await act(api, FOLLOW, "alice", "bob")
    await act(api, FOLLOW, "bob", "alice")

    first = await act(api, UNFOLLOW, "alice", "bob")
    again = await act(api, UNFOLLOW, "alice", "bob")

    # bob still follows alice: seen from alice, bob is a fan.
    assert first == {
        "changed": True,
        "relationship": "FOLLOWED_BY",
        "errors": [],
        "user": {
            "userId": "bob",
            "relationship": "FOLLOWED_BY",
            **counts(1, 0, 0),
            "viewerIsFollowing": False,
            "isFollowingViewer": True,
        },
        "viewer": {"userId": "alice", **counts(0, 1, 0)},
    }
    assert again == {**first, "changed": False}
    assert await graph(api, "alice", "bob") == {"alice": ([], ["bob"], []), "bob": (["alice"], [], [])}

    last = await act(api, UNFOLLOW, "bob", "alice")
    assert (last["changed"], last["relationship"]) == (True, "NONE")
    assert last["viewer"] == {"userId": "bob", **counts(0, 0, 0)}
    assert await graph(api, "alice", "bob") == {"alice": ([], [], []), "bob": ([], [], [])}


async def test_unfollow_of_someone_never_followed_changes_nothing(api: Served) -> None:
    await api.register("alice", "bob")

    payload = await act(api, UNFOLLOW, "alice", "bob")

    assert (payload["changed"], payload["relationship"], payload["errors"]) == (False, "NONE", [])
    assert payload["user"]["relationship"] == "NONE"


async def test_remove_fan_is_idempotent(api: Served) -> None:
    await api.register("alice", "bob")
    await act(api, FOLLOW, "bob", "alice")

    first = await act(api, REMOVE_FAN, "alice", "bob")
    again = await act(api, REMOVE_FAN, "alice", "bob")

    assert first == {
        "changed": True,
        "relationship": "NONE",
        "errors": [],
        "user": {
            "userId": "bob",
            "relationship": "NONE",
            **counts(0, 0, 0),
            "viewerIsFollowing": False,
            "isFollowingViewer": False,
        },
        "viewer": {"userId": "alice", **counts(0, 0, 0)},
    }
    assert again == {**first, "changed": False}
    assert await graph(api, "alice", "bob") == {"alice": ([], [], []), "bob": ([], [], [])}


async def test_remove_fan_of_a_mutual_leaves_the_viewers_own_follow(api: Served) -> None:
    await api.register("alice", "bob")
    await act(api, FOLLOW, "alice", "bob")
    await act(api, FOLLOW, "bob", "alice")

    payload = await act(api, REMOVE_FAN, "alice", "bob")

    assert payload["changed"] is True
    assert payload["relationship"] == "FOLLOWING"
    assert payload["user"] == {
        "userId": "bob",
        "relationship": "FOLLOWING",
        **counts(0, 1, 0),
        "viewerIsFollowing": True,
        "isFollowingViewer": False,
    }
    assert payload["viewer"] == {"userId": "alice", **counts(1, 0, 0)}
    assert await graph(api, "alice", "bob") == {"alice": (["bob"], [], []), "bob": ([], ["alice"], [])}


async def test_remove_fan_of_someone_who_is_no_fan_changes_nothing(api: Served) -> None:
    await api.register("alice", "bob")
    await act(api, FOLLOW, "alice", "bob")

    payload = await act(api, REMOVE_FAN, "alice", "bob")

    assert (payload["changed"], payload["relationship"], payload["errors"]) == (False, "FOLLOWING", [])
    assert await graph(api, "alice", "bob") == {"alice": (["bob"], [], []), "bob": ([], ["alice"], [])}


async def test_two_follows_in_one_document_see_each_others_effect(api: Served) -> None:
    await api.register("alice", "bob", "carol")
    await act(api, FOLLOW, "bob", "alice")
    mutation = """
    mutation {
      one: follow(input: {userId: "bob"}) {
        changed relationship viewer { followingCount mutualCount } user { fansCount mutualCount }
        list: viewer { following { totalCount nodes { userId relationship } } }
      }
      two: follow(input: {userId: "carol"}) {
        changed relationship viewer { followingCount mutualCount } user { fansCount mutualCount }
      }
      again: follow(input: {userId: "bob"}) { changed viewer { followingCount } }
      drop: unfollow(input: {userId: "bob"}) { changed relationship viewer { followingCount mutualCount } }
    }
    """

    data = await api.data(mutation, as_user="alice")

    assert data == {
        "one": {
            "changed": True,
            "relationship": "MUTUAL",
            "viewer": {"followingCount": 1, "mutualCount": 1},
            "user": {"fansCount": 1, "mutualCount": 1},
            "list": {"following": {"totalCount": 1, "nodes": [{"userId": "bob", "relationship": "MUTUAL"}]}},
        },
        "two": {
            "changed": True,
            "relationship": "FOLLOWING",
            "viewer": {"followingCount": 2, "mutualCount": 1},
            "user": {"fansCount": 1, "mutualCount": 0},
        },
        "again": {"changed": False, "viewer": {"followingCount": 2}},
        "drop": {
            "changed": True,
            "relationship": "FOLLOWED_BY",
            "viewer": {"followingCount": 1, "mutualCount": 0},
        },
    }


@pytest.mark.parametrize("mutation", [FOLLOW, UNFOLLOW, REMOVE_FAN])
async def test_acting_on_oneself_is_cannot_follow_self(api: Served, mutation: str) -> None:
    await api.register("alice")

    payload = await act(api, mutation, "alice", "alice")

    assert payload["changed"] is False
    assert payload["relationship"] is None
    assert payload["user"] is None
    assert payload["viewer"] == {"userId": "alice", **counts(0, 0, 0)}
    assert [{k: e[k] for k in ("code", "field")} for e in payload["errors"]] == [
        {"code": "CANNOT_FOLLOW_SELF", "field": ["input", "userId"]}
    ]
    assert payload["errors"][0]["message"]
    assert await graph(api, "alice") == {"alice": ([], [], [])}


@pytest.mark.parametrize("mutation", [FOLLOW, UNFOLLOW, REMOVE_FAN])
async def test_unknown_user_is_user_not_found(api: Served, mutation: str) -> None:
    await api.register("alice")

    payload = await act(api, mutation, "alice", "nobody")

    assert (payload["changed"], payload["relationship"], payload["user"]) == (False, None, None)
    assert len(payload["errors"]) == 1
    error = payload["errors"][0]
    assert (error["code"], error["field"]) == ("USER_NOT_FOUND", ["input", "userId"])
    assert "nobody" in error["message"]
    assert await graph(api, "alice", "nobody") == {"alice": ([], [], []), "nobody": ([], [], [])}


@pytest.mark.parametrize("bad_id", ["a b", "x" * 65, "", "../bob", "bob\n", "bób"])
@pytest.mark.parametrize("mutation", [FOLLOW, UNFOLLOW, REMOVE_FAN])
async def test_malformed_id_is_invalid_input(api: Served, mutation: str, bad_id: str) -> None:
    await api.register("alice", "bob")

    payload = await act(api, mutation, "alice", bad_id)

    assert (payload["changed"], payload["relationship"], payload["user"]) == (False, None, None)
    assert len(payload["errors"]) == 1
    error = payload["errors"][0]
    assert (error["code"], error["field"]) == ("INVALID_INPUT", ["input", "userId"])
    assert "Invalid user id" in error["message"]
    assert await api.store.redis.keys("*following*") == []


@pytest.mark.parametrize("mutation", [FOLLOW, UNFOLLOW, REMOVE_FAN])
async def test_unregistered_viewer_is_user_not_found(api: Served, mutation: str) -> None:
    await api.register("bob")

    payload = await act(api, mutation, "ghost", "bob")

    assert (payload["changed"], payload["relationship"], payload["user"]) == (False, None, None)
    assert len(payload["errors"]) == 1
    error = payload["errors"][0]
    assert error["code"] == "USER_NOT_FOUND"
    assert "ghost" in error["message"]
    assert error["field"] is None  # the viewer's own id is not an input field
    assert await graph(api, "bob", "ghost") == {"bob": ([], [], []), "ghost": ([], [], [])}


@pytest.mark.parametrize(
    "mutation",
    [
        'mutation { follow(input: {userId: "bob"}) { changed } }',
        'mutation { unfollow(input: {userId: "bob"}) { changed } }',
        'mutation { removeFan(input: {userId: "bob"}) { changed } }',
        "mutation { markFansSeen { seenAt } }",
        'mutation { upsertUser(input: {userId: "carol", name: "Carol"}) { user { userId } } }',
    ],
)
async def test_mutation_without_a_token_is_unauthenticated(api: Served, mutation: str) -> None:
    await api.register("alice", "bob")
    await api.store.follow(follower="bob", followee="alice")
    keys_before = sorted(await api.store.redis.keys("*"))

    response = await api.post(mutation)

    body = response.json()
    assert response.status_code == 200, body
    assert body["data"] is None
    assert len(body["errors"]) == 1
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert "token" in body["errors"][0]["message"]
    assert sorted(await api.store.redis.keys("*")) == keys_before
    assert await graph(api, "alice", "bob") == {"alice": ([], ["bob"], []), "bob": (["alice"], [], [])}


async def test_upsert_user_needs_the_admin_scope(api: Served) -> None:
    await api.register("alice")

    response = await api.post(UPSERT, {"id": "carol", "name": "Carol"}, as_user="alice")

    body = response.json()
    assert response.status_code == 200, body
    assert body["data"] is None
    assert [e["extensions"]["code"] for e in body["errors"]] == ["FORBIDDEN"]
    assert "admin" in body["errors"][0]["message"]
    assert await api.data('{ user(userId: "carol") { userId } }') == {"user": None}


async def upsert(api: Served, **variables: Any) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {api.token('root', admin=True)}"}
    response = await api.client.post(
        "/graphql", json={"query": UPSERT, "variables": variables}, headers=headers
    )
    body = response.json()
    assert response.status_code == 200, body
    assert "errors" not in body, body
    payload: dict[str, Any] = body["data"]["upsertUser"]
    return payload


async def test_upsert_user_with_admin_registers_and_updates(api: Served) -> None:
    created = await upsert(api, id="carol", name="Carol", avatarUrl="https://img.example/carol.png")

    assert created["errors"] == []
    user = created["user"]
    assert {k: user[k] for k in ("userId", "name", "avatarUrl")} == {
        "userId": "carol",
        "name": "Carol",
        "avatarUrl": "https://img.example/carol.png",
    }
    assert abs(datetime.now(UTC) - datetime.fromisoformat(user["createdAt"])) < timedelta(minutes=1)

    renamed = await upsert(api, id="carol", name="  Carol C.  ")
    assert renamed == {
        "user": {
            "userId": "carol",
            "name": "Carol C.",
            "avatarUrl": "https://img.example/carol.png",
            "createdAt": user["createdAt"],
        },
        "errors": [],
    }
    assert await api.data('{ user(userId: "carol") { name avatarUrl } }') == {
        "user": {"name": "Carol C.", "avatarUrl": "https://img.example/carol.png"}
    }
    # A registered user can now be followed; the admin token's own user need not exist for that.
    await api.register("dave")
    assert (await act(api, FOLLOW, "dave", "carol"))["relationship"] == "FOLLOWING"


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"id": "carol", "name": "   "}, ["input", "name"]),
        ({"id": "carol", "name": "x" * 65}, ["input", "name"]),
        ({"id": "carol", "name": "bad\u0000name"}, ["input", "name"]),
        ({"id": "carol", "avatarUrl": "ftp://img.example/a.png"}, ["input", "avatarUrl"]),
        ({"id": "carol", "avatarUrl": "/relative/a.png"}, ["input", "avatarUrl"]),
        ({"id": "carol", "avatarUrl": "javascript:alert(1)"}, ["input", "avatarUrl"]),
        ({"id": "bad id", "name": "Carol"}, ["input", "userId"]),
        ({"id": "x" * 65, "name": "Carol"}, ["input", "userId"]),
    ],
)
async def test_upsert_user_validates_its_fields(
    api: Served, variables: dict[str, Any], field: list[str]
) -> None:
    payload = await upsert(api, **variables)

    assert payload["user"] is None
    assert len(payload["errors"]) == 1
    assert payload["errors"][0]["code"] == "INVALID_INPUT"
    assert payload["errors"][0]["field"] == field
    assert payload["errors"][0]["message"]
    assert await api.store.redis.keys("*") == []


async def test_invalid_update_leaves_the_profile_as_it_was(api: Served) -> None:
    await upsert(api, id="carol", name="Carol", avatarUrl="https://img.example/carol.png")

    payload = await upsert(api, id="carol", name="Caroline", avatarUrl="not a url")

    assert payload["errors"][0]["field"] == ["input", "avatarUrl"]
    assert await api.data('{ user(userId: "carol") { name avatarUrl } }') == {
        "user": {"name": "Carol", "avatarUrl": "https://img.example/carol.png"}
    }


async def test_nobody_can_act_as_another_user(api: Served) -> None:
    await api.register("alice", "bob", "carol")

    # The input has no field for the acting user: it is the token's subject, nothing else.
    smuggled = await api.post(
        'mutation { follow(input: {userId: "bob", followerId: "carol"}) { changed } }', as_user="alice"
    )
    body = smuggled.json()
    assert body.get("data") is None
    assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert await graph(api, "alice", "bob", "carol") == {u: ([], [], []) for u in ("alice", "bob", "carol")}

    # An admin token is no licence to act for someone else either.
    admin = {"authorization": f"Bearer {api.token('carol', admin=True)}"}
    response = await api.client.post(
        "/graphql",
        json={"query": 'mutation { follow(input: {userId: "bob"}) { viewer { userId } } }'},
        headers={**admin, "x-user-id": "alice"},
    )
    assert response.json() == {"data": {"follow": {"viewer": {"userId": "carol"}}}}
    await act(api, REMOVE_FAN, "bob", "carol")
    payload = await act(api, FOLLOW, "alice", "bob")
    assert payload["viewer"]["userId"] == "alice"
    assert await graph(api, "alice", "bob", "carol") == {
        "alice": (["bob"], [], []),
        "bob": ([], ["alice"], []),
        "carol": ([], [], []),
    }
