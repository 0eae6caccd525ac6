"""Batches of an import told what earlier ones learnt of their users (store/graph/imports.py
KnownUsers): believed only while nothing else was logged, and the graph the same as without."""

from __future__ import annotations

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


async def graph(client: Client) -> Snapshot:
    """The graph, with each profile's registration time left out."""
    snapshot = graph_only(await dump(client))
    return {key: ("hash", {}) if key.endswith(":profile") else value for key, value in snapshot.items()}


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
    assert known.told(["a", "b", "c"]) == ["b", "0", "c", "1"]
    # Another write came before the batch: everything known is forgotten, what it learnt kept.
    known.learnt("3-0", "4-0", "d", "u")
    assert (known.letters, known.at) == ({"d": "u"}, "4-0")
