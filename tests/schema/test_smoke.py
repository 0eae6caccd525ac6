from __future__ import annotations

from tests.conftest import Api


async def test_follow_then_read_the_fans_page(api: Api) -> None:
    await api.register("alice", "bob")
    follow = await api.data('mutation { follow(input: {userId: "bob"}) { changed relationship } }', as_user="alice")
    assert follow == {"follow": {"changed": True, "relationship": "FOLLOWING"}}
    data = await api.data(
        '{ user(userId: "bob") { fans { totalCount edges { relationship node { userId name } } } } }',
        as_user="bob",
    )
    assert data["user"]["fans"] == {
        "totalCount": 1,
        "edges": [{"relationship": "FOLLOWED_BY", "node": {"userId": "alice", "name": "User alice"}}],
    }
