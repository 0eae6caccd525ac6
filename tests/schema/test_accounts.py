"""Accounts switched off, back on and deleted over HTTP, on real Redis and on the real cluster: who
sees what, what the account's own user may still do, and what admins do."""

from __future__ import annotations

from typing import Any

import pytest

from followgraph.store.graph import lifecycle
from tests.served import Served

PAYLOAD = "state errors { code message field } user { userId accountState followingCount fansCount }"
SELF = {
    name: f"mutation {{ {name} {{ {PAYLOAD} }} }}"
    for name in ("deactivateAccount", "reactivateAccount", "deleteAccount")
}
SUSPEND = f"""mutation($id: ID!, $reason: String) {{
  suspendUser(input: {{userId: $id, reason: $reason}}) {{ {PAYLOAD} }}
}}"""
UNSUSPEND = f"mutation($id: ID!) {{ unsuspendUser(input: {{userId: $id}}) {{ {PAYLOAD} }} }}"
DELETE_USER = f"mutation($id: ID!) {{ deleteUser(input: {{userId: $id}}) {{ {PAYLOAD} }} }}"
SEEN = """query($id: ID!) {
  user(userId: $id) { userId accountState }
  users(userIds: [$id]) { userId }
  viewer { userId accountState followingCount fans(first: 5) { totalCount nodes { userId } } }
}"""
FOLLOW = "mutation($id: ID!) { follow(input: {userId: $id}) { changed errors { code message } } }"
COUNTS = "query($id: ID!) { user(userId: $id) { followingCount fansCount following { totalCount } } }"


async def admin(api: Served, query: str, variables: dict[str, Any]) -> Any:
    response = await api.post(query, variables, headers=api.auth("root", admin=True))
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


async def test_a_deactivated_account_is_gone_for_others_and_its_user_can_only_come_back(api: Served) -> None:
    await api.register("ann", "bob")
    await api.store.follow(follower="ann", followee="bob")
    await api.store.follow(follower="bob", followee="ann")

    off = (await api.data(SELF["deactivateAccount"], as_user="ann"))["deactivateAccount"]
    assert off == {
        "state": "DEACTIVATED",
        "errors": [],
        "user": {"userId": "ann", "accountState": "DEACTIVATED", "followingCount": 1, "fansCount": 1},
    }

    seen_by_bob = await api.data(SEEN, {"id": "ann"}, as_user="bob")
    assert seen_by_bob["user"] is None and seen_by_bob["users"] == [None]
    assert seen_by_bob["viewer"]["followingCount"] == 0
    assert seen_by_bob["viewer"]["fans"] == {"totalCount": 0, "nodes": []}
    # Its own user sees it, and what it keeps.
    seen_by_ann = await api.data(SEEN, {"id": "ann"}, as_user="ann")
    assert seen_by_ann["user"] == {"userId": "ann", "accountState": "DEACTIVATED"}
    assert seen_by_ann["viewer"]["fans"]["nodes"] == [{"userId": "bob"}]  # kept, to come back
    # Bob cannot follow it (it does not exist for him), and ann can do nothing but come back.
    refused = (await api.data(FOLLOW, {"id": "ann"}, as_user="bob"))["follow"]
    assert refused["errors"][0]["code"] == "USER_NOT_FOUND"
    own = (await api.data(FOLLOW, {"id": "bob"}, as_user="ann"))["follow"]
    assert own["errors"][0]["code"] == "ACCOUNT_INACTIVE"

    back = (await api.data(SELF["reactivateAccount"], as_user="ann"))["reactivateAccount"]
    assert back["state"] == "ACTIVE" and back["user"]["accountState"] == "ACTIVE"
    assert (await api.data(COUNTS, {"id": "bob"}))["user"] == {
        "followingCount": 1,
        "fansCount": 1,
        "following": {"totalCount": 1},
    }


async def test_suspensions_are_for_admins(api: Served) -> None:
    await api.register("ann", "bob")
    await api.store.follow(follower="bob", followee="ann")

    forbidden = await api.post(SUSPEND, {"id": "ann"}, as_user="bob")
    assert forbidden.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"

    suspended = (await admin(api, SUSPEND, {"id": "ann", "reason": "spam"}))["suspendUser"]
    assert suspended["state"] == "SUSPENDED"
    assert suspended["user"]["accountState"] == "SUSPENDED"  # an admin sees it
    assert (await api.data(COUNTS, {"id": "bob"}))["user"]["followingCount"] == 0

    own = (await api.data(SELF["reactivateAccount"], as_user="ann"))["reactivateAccount"]
    assert own["state"] == "SUSPENDED"
    assert [e["code"] for e in own["errors"]] == ["ACCOUNT_INACTIVE"]

    lifted = (await admin(api, UNSUSPEND, {"id": "ann"}))["unsuspendUser"]
    assert lifted["state"] == "ACTIVE" and lifted["errors"] == []
    assert (await api.data(COUNTS, {"id": "bob"}))["user"]["followingCount"] == 1


async def test_deletion_for_good(api: Served) -> None:
    await api.register("ann", "bob", "cat")
    await api.store.follow(follower="ann", followee="bob")
    await api.store.follow(follower="cat", followee="ann")

    gone = (await api.data(SELF["deleteAccount"], as_user="ann"))["deleteAccount"]
    assert gone == {"state": None, "errors": [], "user": None}
    assert (await api.data(SEEN, {"id": "ann"}, as_user="ann"))["user"] is None
    assert (await api.data(COUNTS, {"id": "bob"}))["user"]["fansCount"] == 0
    assert (await api.data(COUNTS, {"id": "cat"}))["user"]["followingCount"] == 0

    again = (await admin(api, DELETE_USER, {"id": "ann"}))["deleteUser"]
    assert [(e["code"], e["field"]) for e in again["errors"]] == [("USER_NOT_FOUND", ["input", "userId"])]
    own = (await api.data(SELF["reactivateAccount"], as_user="ann"))["reactivateAccount"]
    assert [(e["code"], e["field"]) for e in own["errors"]] == [("USER_NOT_FOUND", None)]
    removed = (await admin(api, DELETE_USER, {"id": "cat"}))["deleteUser"]
    assert removed == {"state": None, "errors": [], "user": None}


async def test_a_deletion_in_batches_shows_its_progress(api: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle, "ATOMIC_LIMIT", 0)
    monkeypatch.setattr(lifecycle, "BATCH", 1)
    await api.register("star", "f1", "f2", "f3")
    for fan in ("f1", "f2", "f3"):
        await api.store.follow(follower=fan, followee="star")
    metrics = api.app.state.metrics
    seen: list[int] = []

    def watch(user_id: str, left: int) -> None:
        seen.append(left)
        metrics.account_change(user_id, left)

    api.store.watch_jobs(watch)
    gone = (await api.data(SELF["deleteAccount"], as_user="star"))["deleteAccount"]
    assert gone == {"state": None, "errors": [], "user": None}
    assert seen == [3, 2, 1, 0, 0]  # the fans, one a step; the end
    shown = (await api.client.get("/metrics")).text
    assert "followgraph_account_change_users_left 0.0" in shown
