"""A failing field must not take down other fields that wait for the same DataLoader key."""

from __future__ import annotations

from tests.served import Served


async def test_a_failed_sibling_does_not_cancel_a_shared_load(api: Served) -> None:
    await api.register("u1", "u2")
    # In `a`, commonFollowing fails (bad id) in a non-null position, so graphql-core cancels its
    # siblings, among them a.relationship, which waits for the same relation load as b.relationship.
    response = await api.post(
        """{ a: user(userId: "u1") { relationship commonFollowing(userId: "bad id") { totalCount } }
             b: user(userId: "u1") { relationship } }""",
        as_user="u2",
    )
    body = response.json()
    assert response.status_code == 200, body
    assert body["data"] == {"a": None, "b": {"relationship": "NONE"}}
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["path"] == ["a", "commonFollowing"]
