"""Imports of one user's lists from Mastodon's CSV files: merged or overwriting, each row that
cannot be applied reported with its line, and an export imported into a fresh store reproducing
the lists."""

from __future__ import annotations

import pytest

from followgraph.store import FollowStore
from followgraph.store.graph.account_import import MAX_ROWS, ImportFileError, Mode, addresses, import_list
from followgraph.store.graph.portability import ExportedList, exported_csv, members

MASTODON_FOLLOWING = """Account address,Show boosts,Notify on new posts,Languages
a,true,false,
b,true,false,en
someone@mastodon.social,true,false,
"""


async def register(store: FollowStore, *user_ids: str) -> None:
    for user_id in user_ids:
        await store.upsert_user(user_id, name=f"User {user_id}")


async def listed(store: FollowStore, user_id: str, which: ExportedList) -> list[str]:
    return [account async for accounts in members(store, user_id, which) for account in accounts]


def test_addresses_skip_the_header_and_report_what_names_no_user_here() -> None:
    found, problems = addresses(MASTODON_FOLLOWING + "not an id!\n\n@c\n")
    assert found == [(2, "a"), (3, "b"), (7, "c")]
    assert [(p.line, p.reason) for p in problems] == [
        (4, "an account of another service"),
        (5, "not a user id"),
    ]


def test_a_file_naming_too_many_accounts_is_refused_whole() -> None:
    with pytest.raises(ImportFileError, match="at most 10,000"):
        addresses("".join(f"u{i}\n" for i in range(MAX_ROWS + 1)))


async def test_a_mastodon_following_file_is_merged(store: FollowStore) -> None:
    await register(store, "me", "a", "b", "old", "locked")
    await store.update_settings("locked", locked=True)
    await store.follow(follower="me", followee="old")
    report = await import_list(
        store, "me", ExportedList.FOLLOWING, MASTODON_FOLLOWING + "locked\nnobody\nme\n", Mode.MERGE
    )
    assert set(await listed(store, "me", ExportedList.FOLLOWING)) == {"a", "b", "old"}
    assert await store.redis.zscore(store.keys.requests_out("me"), "locked") is not None
    assert (report.rows, report.applied, report.failed) == (6, 3, 3)
    assert [(p.line, p.address, p.reason) for p in report.problems] == [
        (4, "someone@mastodon.social", "an account of another service"),
        (6, "nobody", "no such user"),
        (7, "me", "the user themself"),
    ]


async def test_overwrite_makes_the_file_the_list(store: FollowStore) -> None:
    await register(store, "me", "a", "b", "c")
    for other in ("a", "b"):
        await store.block(blocker="me", blocked=other)
        await store.mute(muter="me", muted=other)
    blocks = await import_list(store, "me", ExportedList.BLOCKS, "b\nc\n", Mode.OVERWRITE)
    mutes = await import_list(
        store, "me", ExportedList.MUTES, "Account address,Hide notifications\nc,true\n", Mode.OVERWRITE
    )
    assert sorted(await listed(store, "me", ExportedList.BLOCKS)) == ["b", "c"]
    assert await listed(store, "me", ExportedList.MUTES) == ["c"]
    assert (blocks.applied, blocks.removed, mutes.applied, mutes.removed) == (2, 1, 1, 2)


async def test_followers_cannot_be_imported(store: FollowStore) -> None:
    with pytest.raises(ImportFileError, match="followers cannot be imported"):
        await import_list(store, "me", ExportedList.FOLLOWERS, "a\n", Mode.MERGE)


async def test_an_export_imported_into_a_fresh_store_reproduces_the_lists(store: FollowStore) -> None:
    others = [f"u{i}" for i in range(30)]
    await register(store, "me", *others)
    for i, other in enumerate(others):
        if i % 2:
            await store.follow(follower="me", followee=other)
        if i % 5 == 0:
            await store.block(blocker="me", blocked=other)
        if i % 7 == 0:
            await store.mute(muter="me", muted=other)
    files = {
        which: "".join([chunk async for chunk in exported_csv(store, "me", which, batch=4)])
        for which in (ExportedList.FOLLOWING, ExportedList.BLOCKS, ExportedList.MUTES)
    }
    before = {which: set(await listed(store, "me", which)) for which in files}
    await store.redis.flushall()
    await register(store, "me", *others)
    for which, text in files.items():
        report = await import_list(store, "me", which, text, Mode.MERGE)
        assert report.failed == 0
    assert {which: set(await listed(store, "me", which)) for which in files} == before
