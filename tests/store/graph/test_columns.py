"""Users' facts in columns hold, user for user, what the objects built from the same replies hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from followgraph.store import FollowStore, Parts, UserColumns, UserFacts
from followgraph.store.graph.columns import PROFILE_WIDTH

EVERYTHING = Parts(profile=True, relation=True, counts=True, controls=True)

# Each column, and what the objects say of a user for it.
COLUMNS: dict[str, Callable[[UserFacts], Any]] = {
    "names": lambda f: f.profile.name if f.profile else None,
    "avatar_urls": lambda f: f.profile.avatar_url if f.profile else None,
    "created_ats": lambda f: f.profile.created_at if f.profile else None,
    "locked": lambda f: f.profile is not None and f.profile.settings.locked,
    "relationships": lambda f: f.relation.relationship,
    "viewer_followed_ats": lambda f: f.relation.viewer_followed_at,
    "followed_viewer_ats": lambda f: f.relation.followed_viewer_at,
}


def assert_columns_match(columns: UserColumns, facts: list[UserFacts]) -> None:
    assert columns.user_ids == [f.user_id for f in facts]
    assert len(columns) == len(facts)
    for name, of in COLUMNS.items():
        assert getattr(columns, name) == [of(f) for f in facts], name


async def graph(store: FollowStore) -> list[str]:
    for user_id in ("v", "a", "b", "c", "d", "e"):
        await store.upsert_user(user_id, name=f"User {user_id}")
    await store.upsert_user("a", name="Ann", avatar_url="https://example.com/a.png")
    await store.update_settings("a", locked=True)
    await store.update_settings("c", hide_fans=True)
    await store.follow(follower="v", followee="b", at=10)
    await store.follow(follower="b", followee="v", at=20)
    await store.follow(follower="c", followee="v", at=30)
    await store.follow(follower="v", followee="d", at=40)
    await store.follow(follower="v", followee="e", at=50)
    await store.block(blocker="d", blocked="v")  # which ends v's follow of d
    return ["a", "b", "v", "nobody", "c", "d", "e"]


@pytest.mark.parametrize("viewer", ["v", "b", None])
async def test_every_column_holds_what_the_objects_hold(store: FollowStore, viewer: str | None) -> None:
    ids = await graph(store)
    columns = await store.columns(viewer, ids, EVERYTHING)
    facts = columns.facts()
    assert facts == await store.facts(viewer, ids, EVERYTHING)
    assert_columns_match(columns, facts)
    # The relationships differ from user to user, so the check above compares something.
    if viewer == "v":
        assert len(set(columns.relationships)) == 5

    first, rest = columns.split_first()
    assert first == facts[0]
    assert_columns_match(rest, facts[1:])
    assert rest.facts() == facts[1:]
    # And again, down to no user at all.
    for n in range(2, len(ids) + 1):
        first, rest = rest.split_first()
        assert first == facts[n - 1]
        assert_columns_match(rest, facts[n:])


async def test_parts_not_read_are_the_objects_defaults(store: FollowStore) -> None:
    ids = await graph(store)
    columns = await store.columns("v", ids, Parts(relation=True))
    assert columns.profiles is None and columns.counts is None and columns.controls is None
    assert columns.relationships == [f.relation.relationship for f in columns.facts()]
    with pytest.raises(ValueError, match="the profiles were not read"):
        _ = columns.names
    anonymous = await store.columns(None, ids, Parts(profile=True, relation=True))
    assert anonymous.relations is None
    assert_columns_match(anonymous, anonymous.facts())
    assert len(await store.columns("v", [], EVERYTHING)) == 0


def test_a_profile_without_a_creation_time_is_no_profile() -> None:
    # A hash left with a name but no createdAt (not a registered user): no name either.
    flat = ["Ann", None, "5", None, None, None, "Ghost", "https://example.com/g.png", None, "1", None, None]
    columns = UserColumns("v", ["a", "g"], profiles=flat)
    facts = columns.facts()
    assert facts[1].profile is None
    assert_columns_match(columns, facts)
    assert columns.names == ["Ann", None]
    assert columns.locked == [False, False]


@pytest.mark.parametrize(
    ("part", "reply", "message"),
    [
        ("profiles", [None] * (PROFILE_WIDTH + 1), "12 profile values expected, got 7"),
        ("relations", [[None, None]], "2 relation replies expected, got 1"),
        ("relations", [[None, None], [None]], "2 relation scores expected, got 1"),
        ("counts", [1, 2, 3], "6 counts expected, got 3"),
        ("controls", [[None, None]] * 4, "5 control replies expected, got 4"),
        ("controls", [[None, None]] * 4 + [[None]], "2 control flags expected, got 1"),
    ],
)
def test_a_reply_that_does_not_fit_the_users_fails(part: str, reply: list[Any], message: str) -> None:
    # Zipping a short reply with the users would cut the page silently.
    with pytest.raises(ValueError, match=message):
        UserColumns("v", ["a", "b"], **{part: reply})
