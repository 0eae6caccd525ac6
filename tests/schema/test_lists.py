"""Following / fans / mutual lists end to end over HTTP: the scenarios of the source documents.

A viewer looking at their own following list sees only FOLLOWING and MUTUAL, at their own fans
only FOLLOWED_BY and MUTUAL; looking at someone else's lists they may see all four states, and
SELF where they are in the list themselves.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.served import Served

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00.000Z
Lists = dict[str, list[tuple[str, int]]]  # list field -> (member, follow time ms), newest first
ISO_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def at(second: int) -> int:
    """A follow time of the scenario graph: distinct seconds, with milliseconds that show."""
    return T0 + second * 1000 + 123


def iso(ms: int) -> str:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


# The scenario graph, (follower, followee) -> follow time.
#   viv, the viewer: mutual with mia, follows fay and gus, followed by ben and hal.
#   tom, the user viv looks at: follows and is followed by viv, mia, fay, ben and nel.
EDGES: dict[tuple[str, str], int] = {
    ("viv", "fay"): at(1),
    ("mia", "viv"): at(2),
    ("viv", "mia"): at(3),
    ("ben", "viv"): at(4),
    ("viv", "gus"): at(5),
    ("hal", "viv"): at(6),
    ("tom", "viv"): at(10),
    ("tom", "mia"): at(11),
    ("tom", "fay"): at(12),
    ("tom", "ben"): at(13),
    ("tom", "nel"): at(14),
    ("viv", "tom"): at(20),
    ("mia", "tom"): at(21),
    ("fay", "tom"): at(22),
    ("ben", "tom"): at(23),
    ("nel", "tom"): at(24),
}
PEOPLE = ("viv", "tom", "mia", "fay", "ben", "nel", "gus", "hal")

NODE_FIELDS = "userId relationship viewerIsFollowing isFollowingViewer viewerFollowedAt followedViewerAt"
CONNECTION = f"""
  totalCount
  edges {{ cursor followedAt relationship node {{ {NODE_FIELDS} }} }}
  nodes {{ userId }}
  pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
"""
LISTS = f"""
query($u: ID!) {{
  viewer {{ userId newFansCount }}
  user(userId: $u) {{
    userId relationship followingCount fansCount mutualCount newFansCount
    following {{ {CONNECTION} }}
    fans {{ {CONNECTION} }}
    mutuals {{ {CONNECTION} }}
  }}
}}
"""


async def build_scenario(api: Served) -> None:
    await api.register(*PEOPLE)
    for (follower, followee), when in EDGES.items():
        result = await api.store.follow(follower=follower, followee=followee, at=when)
        assert result.changed


def expected_node(viewer: str | None, user_id: str) -> dict[str, Any]:
    """What the node fields must say about `user_id`, worked out from EDGES alone."""
    if viewer is None:
        out = back = None
    else:
        out, back = EDGES.get((viewer, user_id)), EDGES.get((user_id, viewer))
    if viewer == user_id:
        relationship = "SELF"
    elif out is not None:
        relationship = "MUTUAL" if back is not None else "FOLLOWING"
    else:
        relationship = "FOLLOWED_BY" if back is not None else "NONE"
    return {
        "userId": user_id,
        "relationship": relationship,
        "viewerIsFollowing": out is not None and viewer != user_id,
        "isFollowingViewer": back is not None and viewer != user_id,
        "viewerFollowedAt": None if out is None or viewer == user_id else iso(out),
        "followedViewerAt": None if back is None or viewer == user_id else iso(back),
    }


def check_connection(
    connection: dict[str, Any], viewer: str | None, expected: list[tuple[str, str, int]]
) -> None:
    """`expected` is the whole list, newest first, as (userId, relationship, followedAt ms)."""
    edges = connection["edges"]
    assert [(e["node"]["userId"], e["relationship"]) for e in edges] == [(u, r) for u, r, _ in expected]
    assert [e["followedAt"] for e in edges] == [iso(ms) for _, _, ms in expected]
    assert connection["totalCount"] == len(expected)
    assert connection["nodes"] == [{"userId": u} for u, _, _ in expected]
    for edge in edges:
        assert ISO_MS.fullmatch(edge["followedAt"]), edge
        assert edge["relationship"] == edge["node"]["relationship"]
        assert edge["node"] == expected_node(viewer, edge["node"]["userId"])
        for stamp in (edge["node"]["viewerFollowedAt"], edge["node"]["followedViewerAt"]):
            assert stamp is None or ISO_MS.fullmatch(stamp), edge
    assert len({e["cursor"] for e in edges}) == len(edges)
    assert connection["pageInfo"] == {
        "hasNextPage": False,
        "hasPreviousPage": False,
        "startCursor": edges[0]["cursor"] if edges else None,
        "endCursor": edges[-1]["cursor"] if edges else None,
    }


async def test_own_following_list_shows_only_following_and_mutual(api: Served) -> None:
    await build_scenario(api)

    data = await api.data(LISTS, {"u": "viv"}, as_user="viv")

    user = data["user"]
    expected = [("tom", "MUTUAL", at(20)), ("gus", "FOLLOWING", at(5)), ("mia", "MUTUAL", at(3))]
    expected.append(("fay", "FOLLOWING", at(1)))
    check_connection(user["following"], "viv", expected)
    assert {e["relationship"] for e in user["following"]["edges"]} == {"FOLLOWING", "MUTUAL"}
    assert user["followingCount"] == 4
    # The fields behind the relationship: viv follows everyone here, the mutual ones follow back.
    tom = user["following"]["edges"][0]["node"]
    assert tom["viewerIsFollowing"] is True
    assert tom["isFollowingViewer"] is True
    assert tom["viewerFollowedAt"] == "2026-01-01T00:00:20.123Z"
    assert tom["followedViewerAt"] == "2026-01-01T00:00:10.123Z"
    gus = user["following"]["edges"][1]["node"]
    assert (gus["viewerIsFollowing"], gus["isFollowingViewer"], gus["followedViewerAt"]) == (
        True,
        False,
        None,
    )


async def test_own_fans_list_shows_only_followed_by_and_mutual(api: Served) -> None:
    await build_scenario(api)

    data = await api.data(LISTS, {"u": "viv"}, as_user="viv")

    user = data["user"]
    expected = [("tom", "MUTUAL", at(10)), ("hal", "FOLLOWED_BY", at(6)), ("ben", "FOLLOWED_BY", at(4))]
    expected.append(("mia", "MUTUAL", at(2)))
    check_connection(user["fans"], "viv", expected)
    assert {e["relationship"] for e in user["fans"]["edges"]} == {"FOLLOWED_BY", "MUTUAL"}
    assert user["fansCount"] == 4
    ben = user["fans"]["edges"][2]["node"]
    assert ben == {
        "userId": "ben",
        "relationship": "FOLLOWED_BY",
        "viewerIsFollowing": False,
        "isFollowingViewer": True,
        "viewerFollowedAt": None,
        "followedViewerAt": "2026-01-01T00:00:04.123Z",
    }
    # The mutual list: newest mutual first, at the time the second of the two follows happened.
    check_connection(user["mutuals"], "viv", [("tom", "MUTUAL", at(20)), ("mia", "MUTUAL", at(3))])
    assert user["mutualCount"] == 2
    assert user["relationship"] == "SELF"


async def test_someone_elses_lists_show_all_four_states_and_self(api: Served) -> None:
    await build_scenario(api)

    data = await api.data(LISTS, {"u": "tom"}, as_user="viv")

    user = data["user"]
    assert user["userId"] == "tom"
    assert user["relationship"] == "MUTUAL"
    following = [
        ("nel", "NONE", at(14)),
        ("ben", "FOLLOWED_BY", at(13)),
        ("fay", "FOLLOWING", at(12)),
        ("mia", "MUTUAL", at(11)),
        ("viv", "SELF", at(10)),
    ]
    check_connection(user["following"], "viv", following)
    fans = [
        ("nel", "NONE", at(24)),
        ("ben", "FOLLOWED_BY", at(23)),
        ("fay", "FOLLOWING", at(22)),
        ("mia", "MUTUAL", at(21)),
        ("viv", "SELF", at(20)),
    ]
    check_connection(user["fans"], "viv", fans)
    mutuals = [("nel", "NONE", at(24)), ("ben", "FOLLOWED_BY", at(23)), ("fay", "FOLLOWING", at(22))]
    mutuals += [("mia", "MUTUAL", at(21)), ("viv", "SELF", at(20))]
    check_connection(user["mutuals"], "viv", mutuals)
    assert (user["followingCount"], user["fansCount"], user["mutualCount"]) == (5, 5, 5)

    edges = {e["node"]["userId"]: e["node"] for e in user["following"]["edges"]}
    assert edges["viv"] == {
        "userId": "viv",
        "relationship": "SELF",
        "viewerIsFollowing": False,
        "isFollowingViewer": False,
        "viewerFollowedAt": None,
        "followedViewerAt": None,
    }
    assert edges["mia"]["viewerFollowedAt"] == "2026-01-01T00:00:03.123Z"
    assert edges["mia"]["followedViewerAt"] == "2026-01-01T00:00:02.123Z"
    assert edges["fay"]["viewerFollowedAt"] == "2026-01-01T00:00:01.123Z"
    assert edges["fay"]["followedViewerAt"] is None
    assert edges["nel"]["viewerIsFollowing"] is False
    assert edges["nel"]["isFollowingViewer"] is False


async def test_the_same_list_seen_by_another_viewer(api: Served) -> None:
    await build_scenario(api)

    data = await api.data(LISTS, {"u": "tom"}, as_user="mia")

    # mia follows viv and tom, and is followed by viv and tom: nobody else relates to her.
    following = [
        ("nel", "NONE", at(14)),
        ("ben", "NONE", at(13)),
        ("fay", "NONE", at(12)),
        ("mia", "SELF", at(11)),
        ("viv", "MUTUAL", at(10)),
    ]
    check_connection(data["user"]["following"], "mia", following)
    assert data["viewer"] == {"userId": "mia", "newFansCount": 2}
    assert data["user"]["newFansCount"] is None


async def test_anonymous_viewer_sees_none_everywhere(api: Served) -> None:
    await build_scenario(api)

    data = await api.data(LISTS, {"u": "tom"})

    assert data["viewer"] is None
    user = data["user"]
    assert user["relationship"] == "NONE"
    assert user["newFansCount"] is None
    following = [("nel", 14), ("ben", 13), ("fay", 12), ("mia", 11), ("viv", 10)]
    check_connection(user["following"], None, [(u, "NONE", at(s)) for u, s in following])
    fans = [("nel", 24), ("ben", 23), ("fay", 22), ("mia", 21), ("viv", 20)]
    check_connection(user["fans"], None, [(u, "NONE", at(s)) for u, s in fans])
    for edge in user["following"]["edges"] + user["fans"]["edges"] + user["mutuals"]["edges"]:
        assert edge["relationship"] == "NONE"
        assert edge["node"]["viewerIsFollowing"] is False
        assert edge["node"]["isFollowingViewer"] is False
        assert edge["node"]["viewerFollowedAt"] is None
        assert edge["node"]["followedViewerAt"] is None


async def test_common_following_and_fans_you_follow(api: Served) -> None:
    await build_scenario(api)
    query = """
    query($first: Int, $after: String) {
      viv: user(userId: "viv") {
        commonFollowing(userId: "tom", first: $first, after: $after) { ...C }
        nobody: commonFollowing(userId: "nobody") { ...C }
      }
      tom: user(userId: "tom") {
        commonFollowing(userId: "viv") { ...C }
        fansYouFollow { ...C }
      }
      own: user(userId: "viv") { fansYouFollow { ...C } }
    }
    fragment C on FollowConnection {
      totalCount
      edges { followedAt relationship node { userId relationship } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
    """

    data = await api.data(query, as_user="viv")

    def rows(connection: dict[str, Any]) -> list[tuple[str, str, str]]:
        return [(e["node"]["userId"], e["relationship"], e["followedAt"]) for e in connection["edges"]]

    # Both follow fay and mia; each list is ordered by when its owner followed them.
    viv_common = data["viv"]["commonFollowing"]
    assert rows(viv_common) == [("mia", "MUTUAL", iso(at(3))), ("fay", "FOLLOWING", iso(at(1)))]
    assert viv_common["totalCount"] == 2
    assert rows(data["tom"]["commonFollowing"]) == [
        ("fay", "FOLLOWING", iso(at(12))),
        ("mia", "MUTUAL", iso(at(11))),
    ]
    assert data["viv"]["nobody"]["totalCount"] == 0
    assert data["viv"]["nobody"]["edges"] == []
    # tom's fans whom viv follows, newest fan first, with the time they followed tom.
    fans_you_follow = data["tom"]["fansYouFollow"]
    assert rows(fans_you_follow) == [("fay", "FOLLOWING", iso(at(22))), ("mia", "MUTUAL", iso(at(21)))]
    assert fans_you_follow["totalCount"] == 2
    assert fans_you_follow["pageInfo"]["hasNextPage"] is False
    # viv's own fans whom she follows back are her mutuals.
    assert [r[0] for r in rows(data["own"]["fansYouFollow"])] == ["tom", "mia"]

    first = (await api.data(query, {"first": 1}, as_user="viv"))["viv"]["commonFollowing"]
    assert rows(first) == [("mia", "MUTUAL", iso(at(3)))]
    assert first["totalCount"] == 2
    assert first["pageInfo"]["hasNextPage"] is True
    assert first["pageInfo"]["hasPreviousPage"] is False
    after = first["pageInfo"]["endCursor"]
    second = (await api.data(query, {"first": 1, "after": after}, as_user="viv"))["viv"]["commonFollowing"]
    assert rows(second) == [("fay", "FOLLOWING", iso(at(1)))]
    assert second["pageInfo"]["hasNextPage"] is False
    assert second["pageInfo"]["hasPreviousPage"] is True

    anonymous = await api.data(query)
    assert anonymous["tom"]["fansYouFollow"]["totalCount"] == 0
    assert anonymous["tom"]["fansYouFollow"]["edges"] == []
    assert [r[1] for r in rows(anonymous["viv"]["commonFollowing"])] == ["NONE", "NONE"]


async def test_new_fans_count_is_the_viewers_only_and_mark_fans_seen_resets_it(api: Served) -> None:
    await build_scenario(api)
    counts = """
    { viewer { userId newFansCount fansCount }
      viv: user(userId: "viv") { newFansCount }
      tom: user(userId: "tom") { newFansCount } }
    """

    before = await api.data(counts, as_user="viv")
    assert before == {
        "viewer": {"userId": "viv", "newFansCount": 4, "fansCount": 4},
        "viv": {"newFansCount": 4},
        "tom": {"newFansCount": None},
    }
    assert (await api.data(counts))["viv"] == {"newFansCount": None}

    marked = await api.data(
        "mutation { markFansSeen { seenAt viewer { userId newFansCount fansCount } } }", as_user="viv"
    )
    payload = marked["markFansSeen"]
    assert payload["viewer"] == {"userId": "viv", "newFansCount": 0, "fansCount": 4}
    assert ISO_MS.fullmatch(payload["seenAt"]), payload
    seen_at = datetime.fromisoformat(payload["seenAt"])
    assert abs(datetime.now(UTC) - seen_at) < timedelta(minutes=1)

    after = await api.data(counts, as_user="viv")
    assert after["viewer"] == {"userId": "viv", "newFansCount": 0, "fansCount": 4}

    follow = await api.data('mutation { follow(input: {userId: "viv"}) { changed } }', as_user="nel")
    assert follow == {"follow": {"changed": True}}
    later = await api.data(counts, as_user="viv")
    assert later["viewer"] == {"userId": "viv", "newFansCount": 1, "fansCount": 5}
    assert (await api.data(counts, as_user="tom"))["tom"] == {"newFansCount": 5}


# Paging a longer list to the end, both ways.

HUB = "hub"
MEMBERS = [f"p{i:02d}" for i in range(55)]


def hub_lists() -> Lists:
    """hub follows p00..p44; p10..p54 follow hub. Times come in pairs and triples so ties occur."""
    following = {m: T0 + (i // 2) * 1000 + 7 for i, m in enumerate(MEMBERS[:45])}
    fans = {m: T0 + 100_000 + (i // 3) * 1000 + 9 for i, m in enumerate(MEMBERS[10:])}
    mutual = {m: max(following[m], fans[m]) for m in following.keys() & fans.keys()}

    def newest_first(times: dict[str, int]) -> list[tuple[str, int]]:
        # Ties on the time are ordered by member, descending, as the cursor keys are.
        return sorted(times.items(), key=lambda item: (item[1], item[0]), reverse=True)

    return {"following": newest_first(following), "fans": newest_first(fans), "mutuals": newest_first(mutual)}


@pytest.fixture
async def hub(api: Served) -> Lists:
    lists = hub_lists()
    await api.register(HUB, *MEMBERS)
    for member, when in lists["following"]:
        await api.store.follow(follower=HUB, followee=member, at=when)
    for member, when in lists["fans"]:
        await api.store.follow(follower=member, followee=HUB, at=when)
    assert (len(lists["following"]), len(lists["fans"]), len(lists["mutuals"])) == (45, 45, 35)
    return lists


def page_query(field: str) -> str:
    return f"""
    query($u: ID!, $first: Int, $after: String, $last: Int, $before: String) {{
      user(userId: $u) {{
        followingCount fansCount mutualCount
        list: {field}(first: $first, after: $after, last: $last, before: $before) {{
          totalCount
          edges {{ cursor followedAt node {{ userId }} }}
          pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
        }}
      }}
    }}
    """


COUNT_FIELD = {"following": "followingCount", "fans": "fansCount", "mutuals": "mutualCount"}


async def fetch_page(api: Served, field: str, **arguments: Any) -> dict[str, Any]:
    user = (await api.data(page_query(field), {"u": HUB, **arguments}, as_user=HUB))["user"]
    connection: dict[str, Any] = user["list"]
    assert connection["totalCount"] == user[COUNT_FIELD[field]]
    edges = connection["edges"]
    assert connection["pageInfo"]["startCursor"] == (edges[0]["cursor"] if edges else None)
    assert connection["pageInfo"]["endCursor"] == (edges[-1]["cursor"] if edges else None)
    return connection


def rows(connection: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["node"]["userId"], e["followedAt"]) for e in connection["edges"]]


@pytest.mark.parametrize("field", ["following", "fans", "mutuals"])
@pytest.mark.parametrize("size", [1, 7, 20])
async def test_paging_forward_to_the_end(api: Served, hub: Lists, field: str, size: int) -> None:
    expected = [(member, iso(when)) for member, when in hub[field]]
    seen: list[tuple[str, str]] = []
    after: str | None = None
    while True:
        connection = await fetch_page(api, field, first=size, after=after)
        start = len(seen)
        stop = min(start + size, len(expected))
        assert rows(connection) == expected[start:stop]
        assert connection["totalCount"] == len(expected)
        assert connection["pageInfo"]["hasNextPage"] is (stop < len(expected))
        assert connection["pageInfo"]["hasPreviousPage"] is (start > 0)
        seen += rows(connection)
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
        assert len(seen) <= len(expected)
    assert seen == expected
    assert len({member for member, _ in seen}) == len(expected)
    # Past the end: an empty page that knows there is something before it.
    beyond = await fetch_page(api, field, first=size, after=connection["pageInfo"]["endCursor"])
    assert beyond["edges"] == []
    assert beyond["pageInfo"] == {
        "hasNextPage": False,
        "hasPreviousPage": True,
        "startCursor": None,
        "endCursor": None,
    }


@pytest.mark.parametrize("field", ["following", "fans", "mutuals"])
@pytest.mark.parametrize("size", [1, 7, 20])
async def test_paging_backward_to_the_start(api: Served, hub: Lists, field: str, size: int) -> None:
    expected = [(member, iso(when)) for member, when in hub[field]]
    seen: list[tuple[str, str]] = []
    before: str | None = None
    while True:
        connection = await fetch_page(api, field, last=size, before=before)
        stop = len(expected) - len(seen)
        start = max(stop - size, 0)
        assert rows(connection) == expected[start:stop]
        assert connection["totalCount"] == len(expected)
        assert connection["pageInfo"]["hasPreviousPage"] is (start > 0)
        assert connection["pageInfo"]["hasNextPage"] is (stop < len(expected))
        seen = rows(connection) + seen
        if not connection["pageInfo"]["hasPreviousPage"]:
            break
        before = connection["pageInfo"]["startCursor"]
        assert len(seen) <= len(expected)
    assert seen == expected
    assert len({member for member, _ in seen}) == len(expected)


async def test_forward_and_backward_cursors_meet(api: Served, hub: Lists) -> None:
    expected = [(member, iso(when)) for member, when in hub["following"]]
    middle = await fetch_page(api, "following", first=7, after=None)
    after_seven = await fetch_page(api, "following", first=5, after=middle["pageInfo"]["endCursor"])
    assert rows(after_seven) == expected[7:12]
    back = await fetch_page(api, "following", last=3, before=after_seven["pageInfo"]["startCursor"])
    assert rows(back) == expected[4:7]
    assert back["pageInfo"]["hasPreviousPage"] is True
    assert back["pageInfo"]["hasNextPage"] is True


async def test_a_cursor_survives_changes_to_the_list(api: Served, hub: Lists) -> None:
    expected = [(member, iso(when)) for member, when in hub["following"]]
    assert [m for m, _ in hub["following"][:9]] == [
        "p44",
        "p43",
        "p42",
        "p41",
        "p40",
        "p39",
        "p38",
        "p37",
        "p36",
    ]
    page = await fetch_page(api, "following", first=8)
    cursor = page["pageInfo"]["endCursor"]  # p37, followed at the same time as p36
    assert rows(page)[-1][0] == "p37"

    # The cursor's own entry leaves the list, a neighbour leaves and a new follow lands on top.
    await api.store.unfollow(follower=HUB, followee="p37")
    await api.store.unfollow(follower=HUB, followee="p40")
    await api.store.follow(follower=HUB, followee="p50", at=T0 + 999_000)

    forward = await fetch_page(api, "following", first=3, after=cursor)
    assert rows(forward) == expected[8:11]
    assert forward["totalCount"] == 44
    assert forward["pageInfo"]["hasPreviousPage"] is True
    backward = await fetch_page(api, "following", last=3, before=cursor)
    assert rows(backward) == [expected[3], expected[5], expected[6]]
    assert backward["pageInfo"]["hasPreviousPage"] is True
    assert backward["pageInfo"]["hasNextPage"] is True


async def test_default_page_size_is_20(api: Served, hub: Lists) -> None:
    query = """
    { user(userId: "hub") {
        following { totalCount edges { node { userId } } pageInfo { hasNextPage hasPreviousPage } }
        fans { edges { node { userId } } }
        mutuals { edges { node { userId } } }
        lastFive: following(last: 5) { edges { node { userId } } pageInfo { hasNextPage hasPreviousPage } }
        none: following(first: 0) { totalCount edges { cursor } pageInfo { hasNextPage startCursor } }
    } }
    """

    user = (await api.data(query, as_user=HUB))["user"]

    assert [e["node"]["userId"] for e in user["following"]["edges"]] == [m for m, _ in hub["following"][:20]]
    assert user["following"]["totalCount"] == 45
    assert user["following"]["pageInfo"] == {"hasNextPage": True, "hasPreviousPage": False}
    assert [e["node"]["userId"] for e in user["fans"]["edges"]] == [m for m, _ in hub["fans"][:20]]
    assert [e["node"]["userId"] for e in user["mutuals"]["edges"]] == [m for m, _ in hub["mutuals"][:20]]
    assert [e["node"]["userId"] for e in user["lastFive"]["edges"]] == [m for m, _ in hub["following"][-5:]]
    assert user["lastFive"]["pageInfo"] == {"hasNextPage": False, "hasPreviousPage": True}
    assert user["none"] == {
        "totalCount": 45,
        "edges": [],
        "pageInfo": {"hasNextPage": True, "startCursor": None},
    }


# Bad page arguments: BAD_USER_INPUT, never a 500.


async def list_error(api: Served, field: str, arguments: str, variables: dict[str, Any] | None = None) -> Any:
    variables = {"u": HUB, **(variables or {})}
    declared = ", $c: String" if "$c" in arguments else ""
    query = f"query($u: ID!{declared}) {{ user(userId: $u) {{ {field}({arguments}) {{ totalCount }} }} }}"
    response = await api.post(query, variables, as_user=HUB)
    body = response.json()
    assert response.status_code == 200, body
    assert body["data"] == {"user": None}, body
    assert len(body["errors"]) == 1, body
    error = body["errors"][0]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert error["path"] == ["user", field.split("(")[0]]
    assert "Internal server error" not in error["message"]
    return error


async def page_size_error(api: Served, field: str, arguments: str) -> Any:
    """A page size out of range is refused before execution: no `data`, one error naming it."""
    query = f'{{ user(userId: "{HUB}") {{ {field}({arguments}) {{ totalCount }} }} }}'
    response = await api.post(query, as_user=HUB)
    body = response.json()
    assert response.status_code == 200, body
    assert "data" not in body, body
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    return error


@pytest.mark.parametrize("field", ["following", "fans", "mutuals", "commonFollowing", "fansYouFollow"])
async def test_first_above_100_is_bad_user_input(api: Served, hub: Lists, field: str) -> None:
    extra = ', userId: "p10"' if field == "commonFollowing" else ""

    error = await page_size_error(api, field, f"first: 101{extra}")

    assert error["extensions"]["argument"] == "first"
    assert "`first`" in error["message"]
    assert "101" in error["message"]


async def test_first_100_is_accepted(api: Served, hub: Lists) -> None:
    data = await api.data('{ user(userId: "hub") { fans(first: 100) { edges { cursor } } } }')
    assert len(data["user"]["fans"]["edges"]) == 45


@pytest.mark.parametrize(
    ("arguments", "name"), [("last: -1", "last"), ("first: -1", "first"), ("last: 101", "last")]
)
async def test_negative_or_oversized_page_size_is_bad_user_input(
    api: Served, hub: Lists, arguments: str, name: str
) -> None:
    error = await page_size_error(api, "following", arguments)

    assert error["extensions"]["argument"] == name
    assert f"`{name}`" in error["message"]


@pytest.mark.parametrize(
    "cursor",
    ["garbage", "", "!!!", "MTIzNDU2fDF8MTIzfHAwMA", "x" * 500],
)
@pytest.mark.parametrize("direction", ["first: 2, after: $c", "last: 2, before: $c"])
async def test_garbage_cursor_is_bad_user_input(api: Served, hub: Lists, cursor: str, direction: str) -> None:
    error = await list_error(api, "following", direction, {"c": cursor})

    assert error["extensions"]["argument"] == ("after" if "after" in direction else "before")
    assert "cursor" in error["message"].lower()


async def test_cursor_of_another_list_is_bad_user_input(api: Served, hub: Lists) -> None:
    fans = await fetch_page(api, "fans", first=3)
    fans_cursor = fans["pageInfo"]["endCursor"]
    other_user = (await api.data('{ user(userId: "p44") { following { pageInfo { endCursor } } } }'))["user"]

    on_following = await list_error(api, "following", "first: 3, after: $c", {"c": fans_cursor})
    on_mutuals = await list_error(api, "mutuals", "last: 3, before: $c", {"c": fans_cursor})
    on_common = await list_error(api, "commonFollowing", 'userId: "p10", after: $c', {"c": fans_cursor})
    on_fyf = await list_error(api, "fansYouFollow", "after: $c", {"c": fans_cursor})
    bad_other = await list_error(api, "commonFollowing", 'userId: "bad id"')
    someone_elses = await list_error(
        api, "following", "after: $c", {"c": other_user["following"]["pageInfo"]["endCursor"]}
    )

    for error in (on_following, on_mutuals, someone_elses):
        assert "not issued for this list" in error["message"]
    assert on_common["extensions"]["argument"] == "after"
    assert on_fyf["extensions"]["argument"] == "after"
    assert bad_other["extensions"]["argument"] == "userId"
    # The same cursor still works on the list it came from.
    assert rows(await fetch_page(api, "fans", first=2, after=fans_cursor)) == [
        (m, iso(w)) for m, w in hub["fans"][3:5]
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("first: 2, last: 2", "Pass either first or last, not both."),
        ("first: 2, before: $c", "`before` pages backward and goes with `last`, not `first`."),
        ("last: 2, after: $c", "`after` pages forward and goes with `first`, not `last`."),
        ("after: $c, before: $c", "Pass either after (with first) or before (with last), not both."),
    ],
)
async def test_mixing_forward_and_backward_arguments_is_bad_user_input(
    api: Served, hub: Lists, arguments: str, message: str
) -> None:
    cursor = (await fetch_page(api, "following", first=3))["pageInfo"]["endCursor"]

    error = await list_error(api, "following", arguments, {"c": cursor})

    assert error["message"] == message
