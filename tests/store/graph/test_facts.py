from __future__ import annotations

from followgraph.store import Counts, FollowStore, Relationship


async def test_user_facts_loads_only_the_parts_asked_for(store: FollowStore) -> None:
    for user_id in ("v", "a", "b"):
        await store.upsert_user(user_id, name=user_id.upper())
    await store.follow(follower="v", followee="a", at=10)
    await store.follow(follower="a", followee="v", at=20)
    await store.follow(follower="b", followee="v", at=30)

    everything = await store.user_facts(
        "v", ["a", "b", "v", "nobody"], profile=True, relation=True, counts=True
    )
    assert [f.user_id for f in everything] == ["a", "b", "v", "nobody"]
    assert [f.profile.name if f.profile else None for f in everything] == ["A", "B", "V", None]
    assert [f.relation.relationship for f in everything] == [
        Relationship.MUTUAL,
        Relationship.FOLLOWED_BY,
        Relationship.SELF,
        Relationship.NONE,
    ]
    assert everything[0].relation.viewer_followed_at == 10
    assert everything[1].relation.followed_viewer_at == 30
    assert [f.counts for f in everything] == [
        Counts(1, 1, 1),
        Counts(1, 0, 0),
        Counts(1, 2, 1),
        Counts(0, 0, 0),
    ]

    bare = await store.user_facts("v", ["a"], profile=False, relation=False, counts=False)
    assert (bare[0].profile, bare[0].relation.relationship, bare[0].counts) == (None, Relationship.NONE, None)
    anonymous = await store.user_facts(None, ["a"], profile=False, relation=True, counts=False)
    assert anonymous[0].relation.relationship is Relationship.NONE
    assert await store.user_facts("v", [], profile=True, relation=True, counts=True) == []
