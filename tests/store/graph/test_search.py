"""searchUsers' store side: how names and queries are read, the index kept from the users, and
the ranking, on a real Redis, a cluster and fakeredis."""

from __future__ import annotations

from typing import Any

import pytest

from followgraph.store import FollowStore
from followgraph.store.graph.events import Event, EventKind
from followgraph.store.graph.search import (
    CANDIDATES,
    MAX_PREFIX,
    Query,
    fold,
    name_words,
    prefixes,
    query_words,
)
from followgraph.store.graph.search_index import rescored, touched
from followgraph.store.redis.lua import AnyPipeline, run_pipeline

PEOPLE = {
    "jing": "Jing Xu",
    "jose": "José Núñez",
    "xu": "徐静",
    "jingle": "Jingle Bells",
    "zoe": "Zoë O'Brien-Smith",
    "jing_xu": "Someone Else",
}


async def register(store: FollowStore, people: dict[str, str]) -> None:
    for user_id, name in people.items():
        await store.upsert_user(user_id, name=name)
    await store.index_users(list(people))


async def search(
    store: FollowStore, text: str, viewer: str | None = None, *, first: int = 50, offset: int = 0
) -> list[str]:
    return (await store.search_users(viewer, Query.of(text), first=first, offset=offset)).user_ids


# -- reading names and queries ----------------------------------------------------------------------


def test_names_are_folded_without_accents_or_case() -> None:
    assert fold("José NÚÑEZ") == "jose nunez"
    assert fold("Straße") == "strasse"
    assert name_words("Zoë O'Brien-Smith") == ["zoe", "o", "brien", "smith"]


def test_a_run_of_cjk_starts_a_word_at_every_character() -> None:
    assert name_words("徐静") == ["徐静", "静"]
    assert name_words("Li 小龙 Bruce") == ["li", "小龙", "龙", "bruce"]


def test_only_a_words_first_characters_count() -> None:
    long = "a" * (MAX_PREFIX + 5)
    assert name_words(long) == ["a" * MAX_PREFIX]
    assert query_words(long + " b") == ["a" * MAX_PREFIX, "b"]
    assert len(prefixes(name_words(long))) == MAX_PREFIX


def test_a_query_names_an_id_whole_only_when_it_could_be_one() -> None:
    assert Query.of(" Jing_Xu ") == Query(["jing", "xu"], "jing_xu")
    assert Query.of("jing xu").whole_id is None
    assert Query.of("徐").whole_id is None


def test_matching_is_by_word_starts_or_the_whole_id() -> None:
    assert Query.of("jo nu").matches("jose", "José Núñez")
    assert not Query.of("ose").matches("jose", "José Núñez")
    assert Query.of("JING_XU").matches("jing_xu", "Someone Else")
    assert not Query.of("jing_x").matches("jing_xu", "Someone Else")
    assert not Query.of("   ").matches("a", "")


def test_the_index_is_touched_by_profiles_and_fans_counts_only() -> None:
    def event(kind: EventKind, actor: str, target: str | None = None) -> Event:
        return Event("1-0", kind, actor, target, 0)

    events = [
        event(EventKind.FOLLOW, "a", "b"),
        event(EventKind.MUTE, "c", "d"),
        event(EventKind.USER, "e"),
        event(EventKind.REMOVE_FAN, "f", "g"),
        event(EventKind.BLOCK, "h", "i"),
        event(EventKind.SETTINGS, "j"),
    ]
    assert touched(events) == ["b", "e", "f", "h", "i"]


@pytest.mark.parametrize(
    ("indexed", "fans", "expected"),
    [(None, 0, True), (3, 3, False), (3, 4, True), (160, 170, False), (160, 171, True), (160, 149, True)],
)
def test_a_score_is_rewritten_when_the_count_moved_by_more_than_a_sixteenth(
    indexed: float | None, fans: int, expected: bool
) -> None:
    assert rescored(indexed, fans) is expected


# -- the index and the ranking ----------------------------------------------------------------------


async def test_words_match_word_starts_case_and_accents_aside(store: FollowStore) -> None:
    await register(store, PEOPLE)
    assert set(await search(store, "jing")) == {"jing", "jingle"}
    assert await search(store, "NUNEZ") == ["jose"]
    assert await search(store, "jo nú") == ["jose"]
    assert await search(store, "静") == ["xu"]
    assert await search(store, "smith zo") == ["zoe"]
    assert await search(store, "ing") == []
    assert await search(store, "jing bells") == ["jingle"]


async def test_a_whole_id_matches_but_not_its_start(store: FollowStore) -> None:
    await register(store, PEOPLE)
    # "Jing Xu" answers the words, jing_xu its id.
    assert set(await search(store, "JING_XU")) == {"jing", "jing_xu"}
    assert await search(store, "jing_x") == ["jing"]
    assert set(await search(store, "jingle")) == {"jingle"}


async def test_follows_come_first_then_the_most_followed(store: FollowStore) -> None:
    names = {f"ann{i}": f"Ann {i}" for i in range(4)}
    await register(store, {**names, "v": "Viewer", "f1": "F", "f2": "F", "f3": "F"})
    for fan, ann in [("f1", "ann2"), ("f2", "ann2"), ("f3", "ann2"), ("f1", "ann1"), ("f2", "ann1")]:
        await store.follow(follower=fan, followee=ann)
    await store.follow(follower="v", followee="ann3")
    await store.index_users(list(names))
    assert await search(store, "ann", "v") == ["ann3", "ann2", "ann1", "ann0"]
    assert await search(store, "ann") == ["ann2", "ann1", "ann3", "ann0"]  # ann3 has v


async def test_blocks_either_way_are_left_out(store: FollowStore) -> None:
    await register(store, {"v": "Viewer", "a": "Amy A", "b": "Amy B", "c": "Amy C"})
    await store.block(blocker="v", blocked="a")
    await store.block(blocker="b", blocked="v")
    assert await search(store, "amy", "v") == ["c"]
    assert set(await search(store, "amy", "a")) == {"a", "b", "c"}  # a blocks nobody; a is self


async def test_pages_follow_one_another_without_repeats(store: FollowStore) -> None:
    people = {f"p{i:02}": f"Pat {i}" for i in range(25)}
    await register(store, people)
    seen: list[str] = []
    found = await store.search_users(None, Query.of("pat"), first=10, offset=0)
    while True:
        seen += found.user_ids
        if not found.has_next:
            break
        found = await store.search_users(None, Query.of("pat"), first=10, offset=len(seen))
    assert sorted(seen) == sorted(people)


async def test_a_rename_leaves_the_old_name_behind(store: FollowStore) -> None:
    await register(store, {"r": "Old Name"})
    await store.upsert_user("r", name="New Person")
    assert await store.index_users(["r"]) == 1
    assert await search(store, "old") == []
    assert await search(store, "new per") == ["r"]
    assert await store.index_users(["r"]) == 0  # nothing left to do


async def test_a_user_no_longer_registered_leaves_the_index(store: FollowStore) -> None:
    await register(store, {"g": "Gone Soon"})
    await store.redis.delete(store.keys.profile("g"))
    await store.index_users(["g"])
    assert await search(store, "gone") == []
    assert await search(store, "g") == []
    assert not await store.redis.exists(store.keys.search_doc("g"), store.keys.search_prefix("gone"))


async def test_a_follow_rescores_only_past_a_sixteenth(store: FollowStore) -> None:
    await register(store, {"star": "Star", **{f"fan{i}": "Fan" for i in range(20)}})
    for i in range(16):
        await store.follow(follower=f"fan{i}", followee="star")
    await store.index_users(["star"])
    key = store.keys.search_prefix("st")
    assert await store.redis.zscore(key, "star") == 16
    await store.follow(follower="fan16", followee="star")
    assert await store.index_users(["star"]) == 0  # 17 is within a sixteenth of 16
    for i in range(17, 20):
        await store.follow(follower=f"fan{i}", followee="star")
    assert await store.index_users(["star"]) == 1
    assert await store.redis.zscore(key, "star") == 20


async def test_only_the_best_scored_candidates_of_the_longest_word_are_ranked(store: FollowStore) -> None:
    # CANDIDATES users match "common"; one more that the viewer follows has the fewest fans.
    k = store.keys

    def fill(pipe: AnyPipeline) -> None:
        pipe.zadd(k.search_prefix("common"), {f"c{i}": 10 + i for i in range(CANDIDATES)})
        pipe.zadd(k.search_prefix("common"), {"low": 1})
        pipe.zadd(k.following("v"), {"low": 1})

    await run_pipeline(store.redis, fill)
    found = await store.search_users("v", Query.of("common"), first=50, offset=CANDIDATES - 50)
    assert found.user_ids[-1] == "c0" and not found.has_next


async def test_a_search_costs_two_round_trips_whatever_the_page(store: FollowStore, monkeypatch: Any) -> None:
    people = {f"q{i:02}": f"Quinn {i}" for i in range(60)}
    await register(store, {**people, "v": "Viewer"})
    calls: list[int] = []
    original = run_pipeline

    async def counted(redis: Any, fill: Any, scripts: Any = ()) -> Any:
        calls.append(1)
        return await original(redis, fill, scripts)

    monkeypatch.setattr("followgraph.store.graph.search.run_pipeline", counted)
    for first in (1, 50):
        calls.clear()
        await store.search_users("v", Query.of("quinn 1"), first=first, offset=0)
        assert len(calls) == 2
