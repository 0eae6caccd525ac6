"""Blocks, mutes, locked accounts, follow requests and hidden lists over HTTP, on real Redis and on
the real cluster: the block matrix from both sides, the request flow, and that a hidden list leaks
through no field."""

from __future__ import annotations

from typing import Any

import pytest

from tests.served import Served

PAYLOAD = """
  changed relationship pending
  errors { code message field }
  user { userId relationship viewerBlocks blocksViewer viewerMutes viewerRequestedFollow
         requestedFollowViewer isLocked followingCount fansCount }
  viewer { userId followingCount fansCount }
"""


def mutation(name: str) -> str:
    return f"mutation($id: ID!) {{ {name}(input: {{userId: $id}}) {{ {PAYLOAD} }} }}"


SETTINGS = """
mutation($locked: Boolean, $hideFollowing: Boolean, $hideFans: Boolean) {
  updateSettings(input: {locked: $locked, hideFollowing: $hideFollowing, hideFans: $hideFans}) {
    settings { locked hideFollowing hideFans }
    viewer { userId isLocked settings { locked hideFollowing hideFans } fansCount followRequestCount }
    errors { code message }
  }
}
"""
LISTS = """
query($id: ID!, $other: ID!) {
  user(userId: $id) {
    followingCount fansCount mutualCount
    following { ...Page }
    fans { ...Page }
    mutuals { hidden totalCount nodes { userId } }
    commonFollowing(userId: $other) { hidden totalCount nodes { userId } }
    fansYouFollow { hidden totalCount nodes { userId } }
    followRequests { totalCount nodes { userId } }
    sentFollowRequests { totalCount nodes { userId } }
    blocking { totalCount nodes { userId } }
    muting { totalCount nodes { userId } }
    followRequestCount
    settings { locked hideFollowing hideFans }
  }
}
fragment Page on FollowConnection {
  hidden totalCount edges { node { userId } } nodes { userId } pageInfo { hasNextPage endCursor }
}
"""


async def act(api: Served, name: str, as_user: str, other: str) -> dict[str, Any]:
    data = await api.data(mutation(name), {"id": other}, as_user=as_user)
    payload: dict[str, Any] = data[name]
    return payload


async def settings(api: Served, as_user: str, **values: bool) -> dict[str, Any]:
    payload: dict[str, Any] = (await api.data(SETTINGS, values, as_user=as_user))["updateSettings"]
    return payload


async def lists(api: Served, user_id: str, as_user: str | None, other: str = "x") -> dict[str, Any]:
    user: dict[str, Any] = (await api.data(LISTS, {"id": user_id, "other": other}, as_user=as_user))["user"]
    return user


def ids(connection: dict[str, Any]) -> list[str]:
    return [node["userId"] for node in connection["nodes"]]


@pytest.fixture
async def graph(api: Served) -> Served:
    await api.register("ann", "bob", "cat", "dan", "x")
    for follower, followee in [("ann", "bob"), ("bob", "ann"), ("ann", "cat"), ("dan", "ann"), ("x", "bob")]:
        await api.store.follow(follower=follower, followee=followee)
    return api


# -- blocks -------------------------------------------------------------------------------------------


async def test_a_block_ends_both_follows_and_every_count_shows_it(graph: Served) -> None:
    blocked = await act(graph, "block", "ann", "bob")
    assert blocked["changed"] and blocked["relationship"] == "NONE" and not blocked["errors"]
    assert blocked["user"]["viewerBlocks"] and not blocked["user"]["blocksViewer"]
    assert blocked["viewer"] == {"userId": "ann", "followingCount": 1, "fansCount": 1}
    assert blocked["user"]["followingCount"] == 0 and blocked["user"]["fansCount"] == 1  # x
    again = await act(graph, "block", "ann", "bob")
    assert not again["changed"] and not again["errors"]

    own = await lists(graph, "ann", "ann")
    assert ids(own["blocking"]) == ["bob"] and own["blocking"]["totalCount"] == 1
    assert ids(own["mutuals"]) == [] and not own["mutuals"]["hidden"]


@pytest.mark.parametrize(("actor", "other"), [("ann", "bob"), ("bob", "ann")])
@pytest.mark.parametrize("locked", [False, True])
async def test_follows_across_a_block_are_refused_either_way(
    graph: Served, actor: str, other: str, locked: bool
) -> None:
    await act(graph, "block", "ann", "bob")
    if locked:
        await settings(graph, other, locked=True)
    payload = await act(graph, "follow", actor, other)
    assert [e["code"] for e in payload["errors"]] == ["BLOCKED"]
    assert payload["errors"][0]["field"] == ["input", "userId"]
    assert not payload["changed"] and not payload["pending"]
    assert (await graph.store.relations(actor, [other]))[0].relationship.value == "NONE"


async def test_a_blocked_viewer_sees_the_blockers_lists_hidden_with_their_sizes(graph: Served) -> None:
    await act(graph, "block", "ann", "dan")
    seen = await lists(graph, "ann", "dan")
    for name in ("following", "fans", "mutuals"):
        assert seen[name]["hidden"] and seen[name]["nodes"] == [] and seen[name].get("edges", []) == []
    assert seen["following"]["totalCount"] == 2 and seen["fans"]["totalCount"] == 1
    assert seen["following"]["pageInfo"] == {"hasNextPage": False, "endCursor": None}
    assert seen["fansYouFollow"]["hidden"] and seen["commonFollowing"]["hidden"]
    # What only the owner sees is null for anyone else.
    for name in (
        "followRequests",
        "sentFollowRequests",
        "blocking",
        "muting",
        "followRequestCount",
        "settings",
    ):
        assert seen[name] is None
    # The blocker still sees the blocked user's lists.
    assert not (await lists(graph, "dan", "ann"))["following"]["hidden"]


async def test_an_unblock_allows_follows_again_and_restores_none(graph: Served) -> None:
    await act(graph, "block", "bob", "ann")
    lifted = await act(graph, "unblock", "bob", "ann")
    assert lifted["changed"] and lifted["relationship"] == "NONE" and not lifted["user"]["viewerBlocks"]
    assert (await act(graph, "follow", "ann", "bob"))["relationship"] == "FOLLOWING"


# -- mutes --------------------------------------------------------------------------------------------


async def test_a_mute_is_a_flag_and_a_list_of_the_viewers_own(graph: Served) -> None:
    muted = await act(graph, "mute", "ann", "bob")
    assert muted["changed"] and muted["relationship"] == "MUTUAL" and muted["user"]["viewerMutes"]
    assert ids((await lists(graph, "ann", "ann"))["muting"]) == ["bob"]
    assert (await lists(graph, "ann", "bob"))["muting"] is None
    unmuted = await act(graph, "unmute", "ann", "bob")
    assert unmuted["changed"] and not unmuted["user"]["viewerMutes"]


# -- locked accounts and follow requests --------------------------------------------------------------


async def test_a_follow_of_a_locked_account_waits_for_its_answer(graph: Served) -> None:
    locked = await settings(graph, "cat", locked=True)
    assert locked["settings"] == {"locked": True, "hideFollowing": False, "hideFans": False}
    assert locked["viewer"]["isLocked"] and locked["viewer"]["followRequestCount"] == 0

    asked = await act(graph, "follow", "dan", "cat")
    assert asked["changed"] and asked["pending"] and asked["relationship"] == "NONE"
    assert asked["user"]["viewerRequestedFollow"] and asked["user"]["fansCount"] == 1

    owner = await lists(graph, "cat", "cat")
    assert ids(owner["followRequests"]) == ["dan"] and owner["followRequestCount"] == 1
    assert ids((await lists(graph, "dan", "dan"))["sentFollowRequests"]) == ["cat"]

    accepted = await act(graph, "acceptFollowRequest", "cat", "dan")
    assert accepted["changed"] and accepted["relationship"] == "FOLLOWED_BY"
    assert accepted["viewer"]["fansCount"] == 2
    assert not (await act(graph, "acceptFollowRequest", "cat", "dan"))["changed"]
    assert (await lists(graph, "cat", "cat"))["followRequestCount"] == 0


async def test_a_request_can_be_rejected_or_withdrawn(graph: Served) -> None:
    await settings(graph, "cat", locked=True)
    await act(graph, "follow", "dan", "cat")
    await act(graph, "follow", "bob", "cat")
    rejected = await act(graph, "rejectFollowRequest", "cat", "dan")
    assert rejected["changed"] and not rejected["user"]["requestedFollowViewer"]
    withdrawn = await act(graph, "unfollow", "bob", "cat")
    assert withdrawn["changed"] and not withdrawn["user"]["viewerRequestedFollow"]
    assert (await lists(graph, "cat", "cat"))["followRequests"]["totalCount"] == 0


async def test_unlocking_accepts_every_pending_request(graph: Served) -> None:
    await settings(graph, "cat", locked=True)
    for user_id in ("bob", "dan", "x"):
        await act(graph, "follow", user_id, "cat")
    unlocked = await settings(graph, "cat", locked=False)
    assert unlocked["viewer"]["fansCount"] == 4 and unlocked["viewer"]["followRequestCount"] == 0
    assert (await act(graph, "follow", "x", "cat"))["relationship"] == "FOLLOWING"


async def test_a_locked_account_shows_its_lists_to_its_fans_only(graph: Served) -> None:
    await settings(graph, "ann", locked=True)
    assert not (await lists(graph, "ann", "bob"))["following"]["hidden"]  # a fan
    for viewer in ("cat", "x", None):  # followed but not a fan, a stranger, anonymous
        seen = await lists(graph, "ann", viewer)
        assert seen["following"]["hidden"] and seen["fans"]["hidden"] and seen["mutuals"]["hidden"]
    assert not (await lists(graph, "ann", "ann"))["following"]["hidden"]


# -- hidden lists --------------------------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["hideFollowing", "hideFans"])
async def test_a_hidden_list_leaks_through_no_field(graph: Served, setting: str) -> None:
    await graph.store.follow(follower="x", followee="cat")  # x and ann both follow bob and cat
    await graph.store.follow(follower="dan", followee="bob")
    await settings(graph, "ann", **{setting: True})
    hidden = {
        "hideFollowing": ["following", "mutuals", "commonFollowing"],
        "hideFans": ["fans", "fansYouFollow", "mutuals"],
    }
    for viewer in ("x", "dan", None):
        seen = await lists(graph, "ann", viewer, other="x")
        for name in hidden[setting]:
            assert seen[name]["hidden"] and seen[name]["nodes"] == [], (viewer, name)
        for name in {"following", "fans", "mutuals"} - set(hidden[setting]):
            assert not seen[name]["hidden"], (viewer, name)
        # The other side of a common-following list reveals the hidden one too.
        if setting == "hideFollowing":
            reverse = (await lists(graph, "x", viewer, other="ann"))["commonFollowing"]
            assert reverse["hidden"] and reverse["nodes"] == []
    own = await lists(graph, "ann", "ann", other="x")
    assert not any(own[name]["hidden"] for name in ("following", "fans", "mutuals", "commonFollowing"))
    assert own["settings"][setting]


OVERLAPS = """
query($owner: ID!, $puppet: ID!) {
  user(userId: $owner) {
    commonFollowing(userId: $puppet) { hidden totalCount nodes { userId } }
    fansYouFollow { hidden totalCount nodes { userId } }
  }
}
"""


async def overlaps(api: Served, owner: str, puppet: str, viewer: str | None) -> dict[str, Any]:
    found = await api.data(OVERLAPS, {"owner": owner, "puppet": puppet}, as_user=viewer)
    user: dict[str, Any] = found["user"]
    return user


@pytest.mark.parametrize(
    ("hide", "viewer"),
    [
        ({"hideFollowing": True}, None),
        ({"hideFollowing": True}, "z"),
        ({"hideFans": True}, "z"),
        ({"locked": True}, None),
        ({"block": "z"}, "z"),
    ],
)
async def test_a_puppet_cannot_test_membership_of_a_hidden_list(
    graph: Served, hide: dict[str, Any], viewer: str | None
) -> None:
    # ann follows bob and cat; bob and dan follow ann. The puppet z follows one candidate at a time
    # and reads the overlap of its own list with ann's hidden one: nothing in it may depend on
    # whether the candidate is on ann's list.
    await graph.register("z")
    if "block" in hide:
        await act(graph, "block", "ann", hide["block"])
    else:
        await settings(graph, "ann", **hide)
    answers = {}
    for candidate in ("bob", "cat", "dan", "x"):  # followed by ann: bob, cat; fans of ann: bob, dan
        await graph.store.follow(follower="z", followee=candidate)
        answers[candidate] = await overlaps(graph, "ann", "z", viewer)
        await graph.store.unfollow(follower="z", followee=candidate)
    shut = {"locked", "block"} & hide.keys()
    following_hidden, fans_hidden = bool(shut or "hideFollowing" in hide), bool(shut or "hideFans" in hide)
    for candidate, answer in answers.items():
        common, fans_followed = answer["commonFollowing"], answer["fansYouFollow"]
        if following_hidden:
            assert common == {"hidden": True, "totalCount": 0, "nodes": []}, candidate
        else:
            assert common["totalCount"] == len({"bob", "cat"} & {candidate}), candidate
        if fans_hidden:
            assert fans_followed == {"hidden": True, "totalCount": 0, "nodes": []}, candidate
        elif viewer is not None:
            assert fans_followed["totalCount"] == len({"bob", "dan"} & {candidate}), candidate


async def test_suggestions_come_from_follows_and_respect_hidden_lists(graph: Served) -> None:
    query = "{ viewer { suggestions { user { userId } followedByCount followedBy { userId } } } }"
    # dan follows ann, who follows bob and cat: bob and cat are suggested to dan.
    found = (await graph.data(query, as_user="dan"))["viewer"]["suggestions"]
    assert found == [
        {"user": {"userId": "bob"}, "followedByCount": 1, "followedBy": [{"userId": "ann"}]},
        {"user": {"userId": "cat"}, "followedByCount": 1, "followedBy": [{"userId": "ann"}]},
    ]
    await settings(graph, "ann", hideFollowing=True)
    assert (await graph.data(query, as_user="dan"))["viewer"]["suggestions"] == []
    other = '{ user(userId: "ann") { suggestions { user { userId } } } }'
    assert (await graph.data(other, as_user="dan"))["user"]["suggestions"] is None


async def test_a_suggestions_followed_by_size_is_checked(graph: Served) -> None:
    query = "query($n: Int) { viewer { suggestions { followedBy(first: $n) { userId } } } }"
    empty = (await graph.data(query, {"n": 0}, as_user="dan"))["viewer"]["suggestions"]
    assert empty == [{"followedBy": []}, {"followedBy": []}]
    for size in (-1, 51):
        body = (await graph.post(query, {"n": size}, as_user="dan")).json()
        [error] = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert "between 0 and 50" in error["message"]


async def test_unlocking_again_finishes_an_acceptance_cut_short(graph: Served) -> None:
    await settings(graph, "cat", locked=True)
    for user_id in ("bob", "dan"):
        await act(graph, "follow", user_id, "cat")
    # The settings changed, but the acceptance never ran (as if the process died right then).
    await graph.store.update_settings("cat", locked=False)
    assert (await lists(graph, "cat", "cat"))["followRequestCount"] == 2
    unlocked = await settings(graph, "cat", locked=False)
    assert unlocked["viewer"]["followRequestCount"] == 0 and unlocked["viewer"]["fansCount"] == 3
