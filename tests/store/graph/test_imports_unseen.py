"""An import into a database that held nothing when it began registers the users it has not named
yet without looking them up (KnownUsers.empty, lua/import_follows.lua): only while nothing else
wrote and no user was forgotten, and never into a database that held anything."""

from __future__ import annotations

import pytest

from followgraph.store import FollowStore
from followgraph.store.graph.imports import import_batch
from followgraph.store.graph.known_users import KnownUsers
from followgraph.store.redis.lua import Client
from tests.store.graph.test_imports import SINGLE, flat


def test_the_first_answer_tells_whether_the_database_was_empty() -> None:
    known = KnownUsers()
    assert known.unseen == "?"
    known.learnt("", "1-0", "a b", "nn", found_empty=True)
    assert known.unseen == "1"
    known.learnt("1-0", "2-0", "c", "n", found_empty=False)  # a later answer tells nothing of it
    assert known.unseen == "1"
    # Another write came before a batch: a user the import has not named may be registered now.
    known.learnt("3-0", "4-0", "d", "n", found_empty=True)
    assert known.unseen == ""

    known = KnownUsers()
    known.learnt("", "1-0", "a", "0", found_empty=False)
    assert known.unseen == ""


def test_a_user_forgotten_ends_the_trust_in_an_empty_database() -> None:
    known = KnownUsers(limit=2)
    known.learnt("", "1-0", "a b", "nn", found_empty=True)
    assert known.unseen == "1"
    known.learnt("1-0", "2-0", "c", "n")  # a is forgotten: it would be taken for one never seen
    assert known.unseen == ""


@SINGLE
async def test_users_of_a_database_not_empty_are_looked_up(backend: Client) -> None:
    store, known = FollowStore(backend), KnownUsers()
    await store.upsert_user("x")
    await store.upsert_user("y")
    await store.block(blocker="x", blocked="y")
    created = await backend.hget(store.keys.profile("x"), "createdAt")
    result = await import_batch(store, flat(("y", "x", "100"), ("y", "n", "101")), known=known)
    assert (result.outcomes, result.registered) == ("b1", 1)
    assert known.unseen == ""
    assert await backend.hget(store.keys.profile("x"), "createdAt") == created
    assert await backend.zscore(store.keys.following("y"), "x") is None


@SINGLE
async def test_a_write_after_the_first_answer_ends_the_trust(backend: Client) -> None:
    store, known = FollowStore(backend), KnownUsers()
    first = await import_batch(store, flat(("a", "b", "100")), known=known)
    assert (first.outcomes, first.registered, known.unseen) == ("1", 2, "1")
    # Users the import has not named, registered elsewhere, with a block.
    await store.upsert_user("w")
    await store.upsert_user("z")
    await store.block(blocker="z", blocked="w")
    second = await import_batch(store, flat(("c", "d", "200")), known=known)
    assert (second.outcomes, second.registered, known.unseen) == ("1", 2, "")
    # What the import knows is believed again from here, but w and z are looked up.
    third = await import_batch(store, flat(("w", "z", "300"), ("e", "a", "301")), known=known)
    assert (third.outcomes, third.registered) == ("b1", 1)
    assert await backend.zscore(store.keys.following("w"), "z") is None


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_an_import_into_an_empty_database_looks_up_no_user(backend: Client) -> None:
    store, known = FollowStore(backend), KnownUsers()
    await backend.config_resetstat()
    batches = [
        flat(*((f"u{i}", f"u{i + 1}", str(1000 + i)) for i in range(start, start + 50))) for start in (0, 50)
    ]
    results = [await import_batch(store, batch, known=known) for batch in batches]
    assert [(r.outcomes, r.registered) for r in results] == [("1" * 50, 51), ("1" * 50, 50)]
    stats = await backend.info("commandstats")
    assert "cmdstat_exists" not in stats
    assert stats["cmdstat_hset"]["calls"] == 101
