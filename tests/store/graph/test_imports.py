"""Batches of an import told what earlier ones learnt of their users (store/graph/imports.py
KnownUsers): believed only while nothing else was logged, and the graph the same as without."""

from __future__ import annotations

from typing import Any

import pytest

from followgraph.store import FollowStore
from followgraph.store.graph.imports import KnownUsers, import_batch
from followgraph.store.redis.lua import Client
from tests.store.snapshot import Snapshot, dump, graph_only

SINGLE = pytest.mark.parametrize("backend", ["redis", "fakeredis"], indirect=True)


def flat(*edges: tuple[str, str, str]) -> list[str]:
    return [value for edge in edges for value in edge]


FIRST = flat(("a", "b", "1000"), ("c", "a", "1001"), ("d", "c", "1002"))
SECOND = flat(("b", "a", "2000"), ("a", "c", "2001"), ("d", "a", "2002"))


@SINGLE
async def test_a_later_batch_learns_again_none_of_the_users_it_is_told_of(backend: Client) -> None:
    store, known = FollowStore(backend), KnownUsers()
    first = await import_batch(store, FIRST, known=known)
    assert (first.outcomes, first.registered) == ("111", 4)
    assert known.letters == dict.fromkeys("abcd", "0")
    learnt = known.learnt
    answers: list[str] = []

    def spy(before: str, after: str, users: str, letters: str) -> None:
        answers.append(users)
        learnt(before, after, users, letters)

    known.learnt = spy  # type: ignore[method-assign]
    second = await import_batch(store, SECOND, known=known)
    assert second.outcomes == "111"
    assert answers == [""]


NOW = 10**12  # a time past this one is the import's or the test's own "now"


def _timeless(value: tuple[str, Any]) -> tuple[str, Any]:
    kind, content = value
    if kind == "hash":
        return kind, sorted(content)
    if kind == "zset":
        return kind, [(member, "now" if score > NOW else score) for member, score in content]
    return value


async def graph(client: Client) -> Snapshot:
    """The graph, the times of now left out (hashes' values, sets' scores)."""
    return {key: _timeless(value) for key, value in graph_only(await dump(client)).items()}


async def test_told_or_not_the_graph_is_the_same(backend: Client) -> None:
    store = FollowStore(backend)
    known = KnownUsers()
    for batch in (FIRST, SECOND):
        await import_batch(store, batch, known=known)
    told = await graph(backend)
    await backend.flushall()
    for batch in (FIRST, SECOND):
        await import_batch(store, batch)
    assert await graph(backend) == told
    # b follows a back: mutual since the later of the two follows.
    assert await backend.zscore(store.keys.mutual("a"), "b") == 2000


async def test_a_block_between_two_batches_is_kept(backend: Client) -> None:
    store, known = FollowStore(backend), KnownUsers()
    await import_batch(store, FIRST, known=known)
    await store.block(blocker="c", blocked="a")
    second = await import_batch(store, SECOND, known=known)
    assert second.outcomes == "1b1"
    assert await backend.zscore(store.keys.following("a"), "c") is None


async def test_an_account_turned_off_between_two_batches_is_not_followed(backend: Client) -> None:
    store, known = FollowStore(backend), KnownUsers()
    await import_batch(store, FIRST, known=known)
    await store.deactivate("c")
    second = await import_batch(store, SECOND, known=known)
    assert second.outcomes == "1F1"
    assert known.letters.get("c") == (None if store.cluster else "u")


@SINGLE
async def test_a_follow_given_back_without_an_event_still_makes_a_mutual(backend: Client) -> None:
    """A reactivation gives follows back in steps that log nothing: a told user is checked for a
    follow back whatever the import saw of them."""
    store, known = FollowStore(backend), KnownUsers()
    await import_batch(store, flat(("x", "y", "1000"), ("z", "x", "1001")), known=known)
    k = store.keys
    # y followed nobody when learnt; now y -> z is there, with no event.
    await backend.zadd(k.following("y"), {"z": 1500})
    await backend.zadd(k.fans("z"), {"y": 1500})
    second = await import_batch(store, flat(("z", "y", "2000")), known=known)
    assert second.outcomes == "1"
    assert await backend.zscore(k.mutual("z"), "y") == 2000
    assert await backend.zscore(k.mutual("y"), "z") == 2000


def test_known_users_forget_the_first_learnt_beyond_their_limit() -> None:
    known = KnownUsers(limit=2)
    known.learnt("", "1-0", "a b", "00")
    known.learnt("1-0", "2-0", "c", "1")
    assert known.letters == {"b": "0", "c": "1"}
    assert known.told(["a", "b", "c"]) == ("b c", "01")
    # Another write came before the batch: everything known is forgotten, what it learnt kept.
    known.learnt("3-0", "4-0", "d", "u")
    assert (known.letters, known.at) == ({"d": "u"}, "4-0")


# Follows by one follower in a row go in a few commands (lua/import_follows.lua run): the codes and
# the graph are those of the same follows imported one a batch.
RUNS = flat(
    ("q", "a", "900"),
    # a's run: b, q (who follows a, this batch), e (who followed a before), x (a follows x already,
    # since 300), gone (off); it ends at b again.
    ("a", "b", "1000"),
    ("a", "q", "1001"),
    ("a", "e", "1002"),
    ("a", "x", "1003"),
    ("a", "gone", "1004"),
    ("a", "b", "1005"),
    ("c", "a", "1100"),  # c's run: a follows c from this batch's run
    ("c", "z", "1101"),
    ("d", "a", "1200"),
    ("d", "e", ""),  # no time: on its own
    ("k", "m", "1300"),  # k is blocked by m: k's follows one by one
    ("k", "n", "1301"),
    ("a", "c", "1400"),  # a's second run: c follows a, this batch
    ("a", "y", "1401"),
)


async def prepare(store: FollowStore) -> None:
    for user in ("a", "e", "x", "gone", "k", "m"):
        await store.upsert_user(user)
    await store.follow(follower="e", followee="a", at=500)
    await store.follow(follower="a", followee="x", at=300)
    await store.block(blocker="m", blocked="k")
    await store.deactivate("gone")


async def test_a_follower_s_follows_in_a_row_are_as_one_by_one(backend: Client) -> None:
    store = FollowStore(backend)
    await prepare(store)
    together = await import_batch(store, RUNS, known=KnownUsers())
    graph_together = await graph(backend)
    await backend.flushall()
    await prepare(store)
    one_by_one = ""
    for i in range(0, len(RUNS), 3):
        one_by_one += (await import_batch(store, RUNS[i : i + 3])).outcomes
    assert one_by_one == "1" + "1110F0" + "11" + "11" + "b1" + "11"
    assert together.outcomes == one_by_one
    assert await graph(backend) == graph_together
    mutual = await backend.zrange(store.keys.mutual("a"), 0, -1, withscores=True)
    assert mutual == [("q", 1001.0), ("e", 1002.0), ("c", 1400.0)]
