"""An import's plain follows, whose users earlier batches learnt (store/graph/imports.py
KnownUsers): taken without their users' rules only while nothing else was logged, and the graph the
same as without."""

from __future__ import annotations

import random
from typing import Any

import pytest

from followgraph.server.redis_cluster import LocalCluster
from followgraph.store import FollowStore
from followgraph.store.graph import imports
from followgraph.store.graph.imports import import_batch
from followgraph.store.graph.known_users import Follows, KnownUsers
from followgraph.store.log.stream import EventLog
from followgraph.store.redis.lua import Client, LuaScript
from tests.conftest import Backend
from tests.store.snapshot import Snapshot, dump, graph_only

SINGLE = pytest.mark.parametrize("backend", ["redis", "fakeredis"], indirect=True)


def flat(*edges: tuple[str, str, str]) -> list[str]:
    return [value for edge in edges for value in edge]


FIRST = flat(("a", "b", "1000"), ("c", "a", "1001"), ("d", "c", "1002"))
SECOND = flat(("b", "a", "2000"), ("a", "c", "2001"), ("d", "a", "2002"))


@SINGLE
async def test_a_later_batch_learns_again_none_of_the_users_it_knows(backend: Client) -> None:
    store, known = FollowStore(backend), KnownUsers()
    first = await import_batch(store, FIRST, known=known)
    assert (first.outcomes, first.registered) == ("111", 4)
    assert known.letters == dict.fromkeys("abcd", "0")
    learnt = known.learnt
    answers: list[str] = []

    def spy(before: str, after: str, users: str, letters: str, *, found_empty: bool = False) -> None:
        answers.append(users)
        learnt(before, after, users, letters, found_empty=found_empty)

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
        # By member: two times of now may tie, or not.
        return kind, sorted((member, "now" if score > NOW else score) for member, score in content)
    return value


async def graph(client: Client) -> Snapshot:
    """The graph, the times of now left out (hashes' values, sets' scores)."""
    return {key: _timeless(value) for key, value in graph_only(await dump(client)).items()}


async def test_known_or_not_the_graph_is_the_same(backend: Client) -> None:
    store = FollowStore(backend)
    known = KnownUsers()
    for batch in (FIRST, SECOND):
        await import_batch(store, batch, known=known)
    known_graph = await graph(backend)
    await backend.flushall()
    for batch in (FIRST, SECOND):
        await import_batch(store, batch)
    assert await graph(backend) == known_graph
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
    """A reactivation gives follows back in steps that log nothing: a plain follow of a user
    registered before the import is checked for a follow back whatever the import saw of them."""
    store, known = FollowStore(backend), KnownUsers()
    for user in "xyz":
        await store.upsert_user(user)
    await import_batch(store, flat(("x", "y", "1000"), ("z", "x", "1001")), known=known)
    k = store.keys
    # y followed nobody when learnt; now y -> z is there, with no event.
    await backend.zadd(k.following("y"), {"z": 1500})
    await backend.zadd(k.fans("z"), {"y": 1500})
    second = await import_batch(store, flat(("z", "y", "2000")), known=known)
    assert second.outcomes == "1"
    assert await backend.zscore(k.mutual("z"), "y") == 2000
    assert await backend.zscore(k.mutual("y"), "z") == 2000


def test_a_user_the_import_registered_is_checked_only_for_follows_back_it_sent() -> None:
    known = KnownUsers()
    known.learnt("", "1-0", "a b c d e", "nnn0n")
    assert (known.letters, known.fresh) == (dict.fromkeys("abcde", "0"), set("abce"))
    # b and c were registered by the import, which sent no follow by them.
    assert known.no_back(Follows.of(flat(("a", "b", "1"), ("b", "c", "2"))), [True, True]) == "00"
    batch = flat(("b", "a", "3"), ("c", "a", "4"), ("c", "b", "5"), ("a", "d", "6"), ("d", "c", "7"))
    # a -> b and b -> c were sent; a -> d is not plain; d follows nobody the import sent, but c does.
    assert known.no_back(Follows.of(batch), [True, True, True, False, True]) == "1010"
    # a follows c (sent before); e -> b and b -> e, both in the batch, each is the other's back.
    batch = flat(("a", "c", "8"), ("x", "a", "9"), ("e", "b", "10"), ("b", "e", "11"))
    assert known.no_back(Follows.of(batch), [True] * 4) == "1011"
    # Learnt again without blocks or requests: still vouched for; with them (a request the import
    # made), or after another write: no longer.
    known.learnt("1-0", "2-0", "a b", "10")
    assert known.fresh == set("bce")
    known.learnt("9-0", "10-0", "f", "n")
    assert (known.fresh, known.letters) == ({"f"}, {"f": "0"})
    assert known.no_back(Follows.of(flat(("b", "f", "12"), ("f", "b", "13"))), [True, True]) == "11"


def test_follows_sent_past_their_limit_start_again() -> None:
    known = KnownUsers(sent_limit=3)
    known.learnt("", "1-0", "a b c", "nnn")
    assert known.no_back(Follows.of(flat(("a", "b", "1"), ("b", "c", "2"))), [True, True]) == "00"
    assert known.no_back(Follows.of(flat(("c", "a", "3"), ("c", "b", "4"))), [True, True]) == "01"
    # Past the limit: a, b, c are no longer vouched for; the batch's follows are the first sent.
    assert (known.fresh, known.sent) == (set(), {hash(("c", "a")), hash(("c", "b"))})
    known.learnt("1-0", "2-0", "d", "n")
    assert known.no_back(Follows.of(flat(("a", "b", "5"), ("c", "d", "6"))), [True, True]) == "10"
    # ... under a new name: no batch learns from an event of before the users it registered.
    run = known.run
    known.no_back(Follows.of(flat(("d", "a", "7"), ("d", "b", "8"))), [True, True])
    assert known.run != run


def test_a_followee_the_import_does_not_know_is_told_apart() -> None:
    known = KnownUsers()
    known.learnt("", "1-0", "a b", "n0")
    # x, y and z are not known: '2' unless the follow back was sent (in this batch: x -> y, y -> x).
    batch = flat(("a", "x", "1"), ("x", "y", "2"), ("y", "x", "3"), ("x", "b", "4"), ("b", "z", "5"))
    assert known.no_back(Follows.of([*batch, "z", "a", "6"]), [True] * 6) == "211120"


def test_known_users_forget_the_first_learnt_beyond_their_limit() -> None:
    known = KnownUsers(limit=2)
    known.learnt("", "1-0", "a b", "00")
    known.learnt("1-0", "2-0", "c", "1")
    assert known.letters == {"b": "0", "c": "1"}
    # Another write came before the batch: everything known is forgotten, what it learnt kept.
    known.learnt("3-0", "4-0", "d", "u")
    assert (known.letters, known.at) == ({"d": "u"}, "4-0")


def test_a_plain_follow_has_a_time_and_users_without_controls_named_by_no_timeless_follow() -> None:
    known = KnownUsers()
    known.learnt("", "1-0", "a b c d e g h i j k l", "00000100u00")
    edges = flat(
        ("a", "b", "1"),  # plain
        ("c", "d", ""),  # no time: c and d go with every rule
        ("e", "c", "2"),  # c is named by a follow without a time
        ("f", "j", "3"),  # j is unknown
        ("g", "h", "4"),  # g has blocks or requests
        ("i", "j", "5"),  # j is unknown
        ("k", "l", "6"),  # plain
        ("f", "m", "7"),  # plain: m not known yet, learnt by the batch first
    )
    assert known.plain(Follows.of(edges)) == (
        [True, False, False, False, False, False, True, True],
        ["f", "m"],
    )
    # Users not known yet: learnt by the batch, first.
    assert KnownUsers().plain(Follows.of(flat(("a", "b", "1"), ("b", "c", "")))) == ([False, False], [])
    assert KnownUsers().plain(Follows.of(flat(("a", "b", "1"), ("c", "b", "2")))) == (
        [True, True],
        ["a", "b", "c"],
    )


def test_a_user_learnt_again_or_forgotten_is_told_plain_by_their_last_letter() -> None:
    known = KnownUsers(limit=2)
    known.learnt("", "1-0", "a b", "10")
    assert known.plain(Follows.of(flat(("a", "b", "1")))) == ([False], [])
    # Learnt again without blocks or requests: plain again.
    known.learnt("1-0", "2-0", "a", "0")
    assert known.plain(Follows.of(flat(("a", "b", "1")))) == ([True], [])
    known.learnt("2-0", "3-0", "c", "u")
    known.learnt("3-0", "4-0", "d", "0")
    known.learnt("4-0", "5-0", "e", "0")
    # c is forgotten past the limit: not known, so learnt by the batch again.
    assert known.plain(Follows.of(flat(("c", "d", "1")))) == ([True], ["c"])


# A batch whose users an earlier one learnt, most of its follows plain (lua/import_follows.lua): the
# codes and the graph are those of the same follows imported one a batch, each learning its users.
MIXED = flat(
    ("q", "a", "900"),
    ("a", "b", "1000"),
    ("a", "q", "1001"),  # q follows a, this batch
    ("a", "e", "1002"),  # e followed a before
    ("a", "x", "1003"),  # a follows x already, since 300
    ("a", "b", "1005"),  # again
    ("c", "a", "1100"),
    ("c", "z", "1101"),
    ("a", "c", "1400"),  # c follows a, this batch
    ("d", "w", ""),  # no time: with every rule
    ("k", "m", "1300"),  # k is blocked by m
    ("k", "n", "1301"),  # k learnt by this batch: with every rule
    ("f", "gone", "1302"),  # gone is off, learnt by this batch
    ("y", "z", "1500"),
    ("z", "y", "1501"),  # y follows z, this batch
)
USERS = ("a", "b", "c", "d", "e", "f", "k", "m", "n", "q", "w", "x", "y", "z", "gone")
# Learnt by an earlier batch of the import: all but k (blocked), f and gone (off).
LEARNT = tuple(user for user in USERS if user not in ("k", "f", "gone"))


async def prepare(store: FollowStore) -> None:
    for user in USERS:
        await store.upsert_user(user)
    await store.follow(follower="e", followee="a", at=500)
    await store.follow(follower="a", followee="x", at=300)
    await store.block(blocker="m", blocked="k")
    await store.deactivate("gone")


@SINGLE
async def test_a_batch_of_plain_follows_is_as_one_by_one(backend: Client) -> None:
    store = FollowStore(backend)
    await prepare(store)
    known = KnownUsers()
    # An earlier batch of the import learns most users; nothing is logged between the two.
    await import_batch(store, flat(*((user, "hub", "1") for user in LEARNT)), known=known)
    assert known.letters["a"] == "0" and known.letters["m"] == "1"
    plain = [True] * 9 + [False, False, True, True] + [True] * 2
    assert known.plain(Follows.of(MIXED)) == (plain, ["k", "f", "gone"])
    together = await import_batch(store, MIXED, known=known)
    graph_together = await graph(backend)
    await backend.flushall()
    await prepare(store)
    await import_batch(store, flat(*((user, "hub", "1") for user in LEARNT)))
    one_by_one = ""
    for i in range(0, len(MIXED), 3):
        one_by_one += (await import_batch(store, MIXED[i : i + 3])).outcomes
    assert one_by_one == "111100111" + "1b1F" + "11"
    assert together.outcomes == one_by_one
    assert await graph(backend) == graph_together
    mutual = await backend.zrange(store.keys.mutual("a"), 0, -1, withscores=True)
    assert mutual == [("q", 1001.0), ("e", 1002.0), ("c", 1400.0)]
    assert await backend.zscore(store.keys.mutual("z"), "y") == 1501


@SINGLE
async def test_a_plain_batch_logs_the_follows_it_added_as_they_came(backend: Client) -> None:
    store = FollowStore(backend)
    known = KnownUsers()
    await import_batch(store, flat(("a", "b", "1"), ("c", "d", "2"), ("e", "f", "3")), known=known)
    batch = flat(("a", "c", "10"), ("a", "b", "11"), ("b", "a", "12"), ("c", "d", "13"), ("e", "a", "14"))
    assert known.plain(Follows.of(batch)) == ([True] * 5, [])
    assert (await import_batch(store, batch, known=known)).outcomes == "10101"
    events = await EventLog(store).read(count=100)
    assert events[-1].imported_follows() == [("a", "c", 10), ("b", "a", 12), ("e", "a", 14)]


# Random batches, the same follows imported by an import that knows its users (most follows plain)
# and by batches that learn them each time (every follow with every rule): the same letters, the
# same graph.
POOL = (*"abcdefghij", "new1", "new2", "gone", "lock", "mb", "kb")


async def _random_setup(store: FollowStore) -> None:
    for user in (*POOL[:10], "gone", "lock", "mb", "kb"):
        await store.upsert_user(user)
    await store.follow(follower="a", followee="b", at=50)
    await store.follow(follower="c", followee="a", at=60)
    await store.block(blocker="mb", blocked="kb")
    await store.update_settings("lock", locked=True)
    await store.deactivate("gone")


def _random_batches(
    seed: int,
    pool: tuple[str, ...] = POOL,
    count: int = 3,
    sizes: range = range(5, 30),
    timeless: float = 0.1,
    back: float = 0.0,
) -> list[list[str]]:
    """`count` batches of follows among `pool`, with odds `timeless` without a time; each followed by
    its follow back in the same batch with odds `back`."""
    rng = random.Random(seed)
    batches = []
    for _ in range(count):
        edges: list[str] = []
        for _ in range(rng.choice(sizes)):
            a, b = rng.sample(pool, 2)
            at = "" if rng.random() < timeless else str(rng.randrange(100, 200))
            edges += (a, b, at)
            if rng.random() < back:
                edges += (b, a, str(rng.randrange(100, 200)))
        batches.append(edges)
    return batches


@SINGLE
@pytest.mark.parametrize("seed", range(12))
async def test_random_batches_are_the_same_known_or_not(backend: Client, seed: int) -> None:
    store = FollowStore(backend)
    learn = flat(*((user, "j", "1") for user in POOL[:9]))
    results, plain = [], 0
    for known in (KnownUsers(), None):
        await backend.flushall()
        await _random_setup(store)
        codes = [(await import_batch(store, learn, known=known)).outcomes]
        for batch in _random_batches(seed):
            plain += sum(known.plain(Follows.of(batch))[0]) if known else 0
            codes.append((await import_batch(store, batch, known=known)).outcomes)
        results.append((codes, await graph(backend)))
    assert plain > 0
    assert results[0] == results[1]


@pytest.mark.parametrize(("blocker", "blocked"), [("a", "b"), ("b", "a")])
async def test_on_a_cluster_a_block_between_the_steps_of_a_batch_undoes_the_follow(
    redis_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch, blocker: str, blocked: str
) -> None:
    """A block that comes after the followers' step wrote a -> b and before the followees' step: the
    followees' step refuses it, and a -> b is undone; the batch's other follows are written."""
    client = await Backend("cluster", redis_cluster.url).clean_client()
    store = FollowStore(client)
    assert store.cluster
    on_masters = imports._on_masters

    async def block_first(store_: FollowStore, script: LuaScript, calls: Any) -> dict[str, Any]:
        if script is imports.IMPORT_IN_SCRIPT:
            await store.block(blocker=blocker, blocked=blocked)
        return await on_masters(store_, script, calls)

    monkeypatch.setattr(imports, "_on_masters", block_first)
    result = await import_batch(store, flat(("a", "b", "1000"), ("c", "b", "1001"), ("a", "c", "1002")))
    assert result.outcomes == "b11"
    k = store.keys
    assert await client.zrange(k.following("a"), 0, -1) == ["c"]
    assert await client.zrange(k.fans("b"), 0, -1, withscores=True) == [("c", 1001.0)]
    await client.aclose()


# An import into an empty graph registers its users: their follows back are checked only where the
# import sent them (KnownUsers.no_back), and the graph is the one of batches that check every one;
# with another write between two batches now and then (a follow by a user the import registered).
NEW_POOL = tuple("abcdefghijkl")


@SINGLE
@pytest.mark.parametrize("seed", range(12))
async def test_an_import_of_new_users_makes_every_mutual(backend: Client, seed: int) -> None:
    store = FollowStore(backend)
    results, letters = [], []
    known = KnownUsers()
    no_back = known.no_back

    def spy(follows: Follows, plain: list[bool]) -> str:
        letters.append(no_back(follows, plain))
        return letters[-1]

    known.no_back = spy  # type: ignore[method-assign]
    for known_or_not in (known, None):
        await backend.flushall()
        rng = random.Random(seed)
        codes = []
        for batch in _random_batches(seed, NEW_POOL, 4, range(10, 40), 0.03, back=0.3):
            codes.append((await import_batch(store, batch, known=known_or_not)).outcomes)
            if rng.random() < 0.4:
                a, b = rng.sample(NEW_POOL, 2)
                if await store.registered([a, b]) == [True, True]:
                    await store.follow(follower=a, followee=b, at=150)
        results.append((codes, await graph(backend)))
    assert "0" in "".join(letters)
    assert results[0] == results[1]


@SINGLE
async def test_a_follow_by_a_user_the_import_registered_made_elsewhere_is_checked(backend: Client) -> None:
    store, known = FollowStore(backend), KnownUsers()
    await import_batch(store, flat(("a", "c", "1000"), ("b", "c", "1001")), known=known)
    assert known.fresh == set("abc")
    await store.follow(follower="a", followee="b", at=1500)  # logged: the next batch believes nothing
    await import_batch(store, flat(("c", "d", "2000")), known=known)
    assert known.fresh == {"d"}
    assert (await import_batch(store, flat(("b", "a", "3000")), known=known)).outcomes == "1"
    assert await backend.zscore(store.keys.mutual("a"), "b") == 3000
