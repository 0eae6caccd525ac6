from __future__ import annotations

import pytest

from followgraph.store import FollowStore, InvalidCursorError, InvalidPageError, ListKind, Page

FANS = [f"f{i:02d}" for i in range(12)]


@pytest.fixture
async def celebrity(store: FollowStore) -> FollowStore:
    """`star` with 12 fans; f00..f05 followed at the same millisecond, to exercise ties."""
    await store.upsert_user("star")
    for i, fan in enumerate(FANS):
        await store.upsert_user(fan)
        await store.follow(follower=fan, followee="star", at=500 if i < 6 else 500 + i)
    return store


EXPECTED = [f"f{i:02d}" for i in range(11, 5, -1)] + [f"f{i:02d}" for i in range(5, -1, -1)]


def ids(page: Page) -> list[str]:
    return [entry.user_id for entry in page.entries]


async def test_newest_first_with_ties_ordered_by_member(celebrity: FollowStore) -> None:
    page = await celebrity.page(ListKind.FANS, "star", first=100)
    assert ids(page) == EXPECTED
    assert page.total == 12
    assert (page.has_next, page.has_previous) == (False, False)


async def test_default_page_size_is_twenty(store: FollowStore) -> None:
    await store.upsert_user("star")
    for i in range(25):
        await store.upsert_user(f"u{i}")
        await store.follow(follower=f"u{i}", followee="star", at=i)
    page = await store.page(ListKind.FANS, "star")
    assert len(page.entries) == 20
    assert page.has_next


@pytest.mark.parametrize("size", [1, 4, 5, 12])
async def test_forward_walk_visits_every_entry_once(celebrity: FollowStore, size: int) -> None:
    seen: list[str] = []
    after: str | None = None
    while True:
        page = await celebrity.page(ListKind.FANS, "star", first=size, after=after)
        seen += ids(page)
        assert page.has_previous == (after is not None)
        if not page.has_next:
            break
        after = page.end_cursor
    assert seen == EXPECTED


@pytest.mark.parametrize("size", [1, 5, 12])
async def test_backward_walk_visits_every_entry_once(celebrity: FollowStore, size: int) -> None:
    seen: list[str] = []
    before: str | None = None
    while True:
        page = await celebrity.page(ListKind.FANS, "star", last=size, before=before)
        seen = ids(page) + seen
        assert page.has_next == (before is not None)
        if not page.has_previous:
            break
        before = page.start_cursor
    assert seen == EXPECTED


async def test_a_cursor_survives_its_entry_leaving_the_list(celebrity: FollowStore) -> None:
    first = await celebrity.page(ListKind.FANS, "star", first=8)
    assert ids(first)[-1] == "f04"  # a tie member
    await celebrity.unfollow(follower="f04", followee="star")
    await celebrity.unfollow(follower="f10", followee="star")
    rest = await celebrity.page(ListKind.FANS, "star", first=8, after=first.end_cursor)
    assert ids(rest) == ["f03", "f02", "f01", "f00"]
    back = await celebrity.page(ListKind.FANS, "star", last=3, before=first.end_cursor)
    assert ids(back) == ["f07", "f06", "f05"]


async def test_first_zero_gives_only_the_total(celebrity: FollowStore) -> None:
    page = await celebrity.page(ListKind.FANS, "star", first=0)
    assert (page.entries, page.total, page.has_next) == ([], 12, True)


async def test_an_empty_list(store: FollowStore) -> None:
    page = await store.page(ListKind.FOLLOWING, "nobody", first=5)
    assert (page.entries, page.total, page.has_next, page.has_previous) == ([], 0, False, False)
    assert page.start_cursor is None and page.end_cursor is None


async def test_pages_are_batched_in_one_call(celebrity: FollowStore) -> None:
    queries = [
        celebrity.list_query(ListKind.FANS, "star", first=2),
        celebrity.list_query(ListKind.FOLLOWING, "f00", first=2),
        celebrity.list_query(ListKind.MUTUAL, "star", first=2),
    ]
    fans, following, mutual = await celebrity.pages(queries)
    assert ids(fans) == ["f11", "f10"]
    assert ids(following) == ["star"]
    assert mutual.total == 0


@pytest.mark.parametrize(
    "arguments",
    [
        {"first": 1, "last": 1},
        {"first": -1},
        {"last": 1001},
        {"first": 2, "before": "x"},
        {"last": 2, "after": "x"},
    ],
)
async def test_inconsistent_page_arguments(celebrity: FollowStore, arguments: dict[str, object]) -> None:
    with pytest.raises(InvalidPageError):
        await celebrity.page(ListKind.FANS, "star", **arguments)


async def test_foreign_and_tampered_cursors_are_refused(celebrity: FollowStore) -> None:
    page = await celebrity.page(ListKind.FANS, "star", first=2)
    cursor = page.end_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursorError, match="not issued for this list"):
        await celebrity.page(ListKind.FOLLOWING, "star", after=cursor)
    with pytest.raises(InvalidCursorError, match="not issued for this list"):
        await celebrity.page(ListKind.FANS, "f00", after=cursor)
    tampered = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    with pytest.raises(InvalidCursorError):
        await celebrity.page(ListKind.FANS, "star", after=tampered)
    for garbage in ["", "!!!", "x" * 500, "YWJj"]:
        with pytest.raises(InvalidCursorError, match="Malformed cursor"):
            await celebrity.page(ListKind.FANS, "star", after=garbage)
