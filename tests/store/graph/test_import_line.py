"""An import's batches in a line (store/graph/import_line.py): the next one sent before the answer
to the one before is read, believed by the script only when nothing but that batch came between,
and sent again after a lost connection; the graph is the one of batches sent one at a time."""

from __future__ import annotations

import random

import pytest

from followgraph.store import FollowStore
from followgraph.store.graph.import_line import ImportLine
from followgraph.store.graph.imports import import_batch
from followgraph.store.graph.known_users import KnownUsers
from followgraph.store.redis.lua import Client
from tests.store.graph.test_imports import _random_batches, flat, graph

SINGLE = pytest.mark.parametrize("backend", ["redis", "fakeredis"], indirect=True)

FIRST = flat(("a", "b", "1000"), ("c", "a", "1001"), ("d", "c", "1002"))
SECOND = flat(("b", "a", "2000"), ("a", "c", "2001"), ("e", "f", "2002"))
THIRD = flat(("c", "d", "3000"), ("f", "e", "3001"), ("a", "d", "3002"))
# An import's first batch: the batch after it waits for its answer, which says whether the database
# was empty.
ZERO = flat(("x", "y", "500"))


async def answer(line: ImportLine[str]) -> tuple[str, str]:
    """The next answer: the tag its batch was sent with, and its letters."""
    tag, result = await line.result()
    return tag, result.outcomes


def _spied(line: ImportLine[str]) -> list[str]:
    """The users each answer says its batch learnt, in order."""
    answers: list[str] = []
    learnt = line.known.learnt

    def spy(before: str, after: str, users: str, letters: str, *, found_empty: bool = False) -> None:
        answers.append(users)
        learnt(before, after, users, letters, found_empty=found_empty)

    line.known.learnt = spy  # type: ignore[method-assign]
    return answers


@SINGLE
async def test_a_batch_sent_ahead_believes_the_one_before_it(backend: Client) -> None:
    store = FollowStore(backend)
    line: ImportLine[str] = ImportLine(store, register=True, stop=False)
    assert line.ahead
    answers = _spied(line)
    try:
        await line.send(ZERO, "zero")
        assert not line.room()
        assert await answer(line) == ("zero", "1")
        assert line.known.empty
        await line.send(FIRST, "first")
        assert line.room()
        await line.send(SECOND, "second")  # built before FIRST's answer: a, b, c learnt from its event
        assert not line.room()
        assert await answer(line) == ("first", "111")
        # THIRD is built from FIRST's answer while SECOND is not read: SECOND's event is last when
        # THIRD runs, and came right after the event FIRST's answer named.
        await line.send(THIRD, "third")
        assert await answer(line) == ("second", "111")
        assert await answer(line) == ("third", "111")
        assert not line.waiting
    finally:
        await line.aclose()
    assert answers[1].split() == ["a", "b", "c", "d"]
    # The users FIRST registered, from its event; those SECOND brought, likewise for THIRD.
    assert set(answers[2].split()) == {"e", "f"}
    assert answers[3] == ""
    lined = await graph(backend)
    await backend.flushall()
    for batch in (ZERO, FIRST, SECOND, THIRD):
        await import_batch(store, batch)
    assert await graph(backend) == lined
    assert await backend.zscore(store.keys.mutual("a"), "b") == 2000
    assert await backend.zscore(store.keys.mutual("e"), "f") == 3001


@SINGLE
async def test_a_write_between_two_batches_in_the_line_is_not_missed(backend: Client) -> None:
    store = FollowStore(backend)
    line: ImportLine[str] = ImportLine(store, register=True, stop=False)
    answers = _spied(line)
    try:
        await line.send(FIRST, "first")
        await line.send(SECOND, "second")
        await line.result()
        await store.block(blocker="d", blocked="a")  # before THIRD is sent, SECOND's place unknown
        await line.send(THIRD, "third")
        await line.result()
        third = await answer(line)
    finally:
        await line.aclose()
    assert third == ("third", "11b")
    assert set(answers[2].split()) == {"c", "d", "f", "e", "a"}  # believed nothing: learnt again
    assert await backend.zscore(store.keys.following("a"), "d") is None


@SINGLE
async def test_a_batch_after_one_without_a_time_waits_for_its_answer(backend: Client) -> None:
    store = FollowStore(backend)
    await store.upsert_user("lock")
    await store.update_settings("lock", locked=True)
    line: ImportLine[str] = ImportLine(store, register=True, stop=False)
    try:
        await line.send(flat(("a", "lock", ""), ("a", "b", "10")), "request")
        assert not line.room()  # the follow without a time made a request: a's letter changes
        # Sent all the same, the next batch does not learn a from that batch's event (the request's
        # event came between its start and its own), but looks a up: the request is ended.
        await line.send(flat(("a", "lock", "20")), "follow")
        assert [await answer(line) for _ in range(2)] == [("request", "r1"), ("follow", "1")]
        assert line.room()
        assert line.known.letters["a"] == "1"
    finally:
        await line.aclose()
    k = store.keys
    assert await backend.zscore(k.following("a"), "lock") == 20
    assert await backend.zcard(k.requests_out("a")) == 0
    assert await backend.zcard(k.requests_in("lock")) == 0


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_batches_whose_connection_is_lost_go_again(backend: Client) -> None:
    store = FollowStore(backend)
    line: ImportLine[str] = ImportLine(store, register=True, stop=False)
    try:
        await line.send(FIRST, "first")
        await line.send(SECOND, "second")
        # Every other connection is closed: the line's, with one answer or both still to come.
        await backend.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        first, second = await answer(line), await answer(line)
        await line.send(THIRD, "third")
        third = await answer(line)
    finally:
        await line.aclose()
    # FIRST may have run before the connection went, and SECOND with it: run again, they find
    # their follows there.
    assert first in (("first", "111"), ("first", "000"))
    assert second in (("second", "111"), ("second", "000"))
    assert third == ("third", "111")
    lined = await graph(backend)
    await backend.flushall()
    for batch in (FIRST, SECOND, THIRD):
        await import_batch(store, batch)
    assert await graph(backend) == lined


@pytest.mark.parametrize("backend", ["cluster"], indirect=True)
async def test_on_a_cluster_each_batch_runs_whole_before_the_next(backend: Client) -> None:
    store = FollowStore(backend)
    line: ImportLine[str] = ImportLine(store, register=True, stop=False)
    assert not line.ahead
    try:
        await line.send(FIRST, "first")
        assert not line.room()
        assert await answer(line) == ("first", "111")
        await line.send(SECOND, "second")
        assert await answer(line) == ("second", "111")
    finally:
        await line.aclose()
    assert await backend.zscore(store.keys.mutual("a"), "b") == 2000


@SINGLE
async def test_stop_sends_one_batch_at_a_time(backend: Client) -> None:
    line: ImportLine[str] = ImportLine(FollowStore(backend), register=False, stop=True)
    assert not line.ahead
    try:
        await line.send(FIRST, "first")
        assert not line.room()
        assert await answer(line) == ("first", "f")
    finally:
        await line.aclose()


def test_what_an_import_knows_starts_empty() -> None:
    assert KnownUsers().run != KnownUsers().run


# New users in random batches with follows back within and across them, two batches in the line at a
# time (a batch ahead learns the users the one before registered from its event), now and then a
# follow made elsewhere between two of them: the graph is the one of batches sent one at a time
# that check every follow back.
@SINGLE
@pytest.mark.parametrize("seed", range(8))
async def test_batches_in_the_line_make_every_mutual(backend: Client, seed: int) -> None:
    store = FollowStore(backend)
    batches = _random_batches(seed, tuple("abcdefghijklmnop"), 8, range(5, 30), 0.02, back=0.3)
    rng = random.Random(seed)
    writes = [rng.random() < 0.3 for _ in batches]
    pairs = [tuple(rng.sample("abcdefghijklmnop", 2)) for _ in batches]

    async def elsewhere(i: int) -> None:
        a, b = pairs[i]
        if writes[i] and await store.registered([a, b]) == [True, True]:
            await store.follow(follower=a, followee=b, at=150)

    line: ImportLine[str] = ImportLine(store, register=True, stop=False)
    lined: list[tuple[str, str]] = []
    try:
        for i, batch in enumerate(batches):
            while not line.room():
                lined.append(await answer(line))
            await line.send(batch, str(i))
            if writes[i]:
                while line.waiting:
                    lined.append(await answer(line))
                await elsewhere(i)
        while line.waiting:
            lined.append(await answer(line))
    finally:
        await line.aclose()
    got = await graph(backend)
    await backend.flushall()
    one_at_a_time = []
    for i, batch in enumerate(batches):
        one_at_a_time.append((str(i), (await import_batch(store, batch)).outcomes))
        if writes[i]:
            await elsewhere(i)
    assert (lined, got) == (one_at_a_time, await graph(backend))
