from __future__ import annotations

import pytest

from followgraph.store import FollowStore, InvalidInputError


async def test_upsert_registers_then_updates_only_given_fields(store: FollowStore) -> None:
    profile, created = await store.upsert_user("u1", name="  Alice ", avatar_url="https://img.example/a.png")
    assert created is True
    assert (profile.name, profile.avatar_url) == ("Alice", "https://img.example/a.png")
    assert profile.created_at > 1_600_000_000_000

    again, created_again = await store.upsert_user("u1", name="Alicia")
    assert created_again is False
    assert (again.name, again.avatar_url, again.created_at) == (
        "Alicia",
        "https://img.example/a.png",
        profile.created_at,
    )


async def test_upsert_keeps_an_imported_creation_time(store: FollowStore) -> None:
    profile, _ = await store.upsert_user("u1", created_at=1234)
    assert profile.created_at == 1234
    assert profile.name is None


async def test_profiles_and_registered_are_batched_and_ordered(store: FollowStore) -> None:
    await store.upsert_user("a", name="A")
    await store.upsert_user("c", name="C")
    profiles = await store.profiles(["c", "b", "a"])
    assert [p.name if p else None for p in profiles] == ["C", None, "A"]
    assert await store.registered(["a", "b", "c"]) == [True, False, True]
    assert await store.profiles([]) == []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"name": "   "}, "name"),
        ({"name": "x" * 65}, "name"),
        ({"name": "bad\u0000name"}, "name"),
        ({"avatar_url": "ftp://example.com/a.png"}, "avatarUrl"),
        ({"avatar_url": "/relative.png"}, "avatarUrl"),
        ({"avatar_url": "https://"}, "avatarUrl"),
        ({"avatar_url": "https://example.com/" + "a" * 2048}, "avatarUrl"),
        ({"created_at": -1}, "createdAt"),
    ],
)
async def test_invalid_profile_fields_are_refused_and_write_nothing(
    store: FollowStore, kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await store.upsert_user("u1", **kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert await store.registered(["u1"]) == [False]


@pytest.mark.parametrize("bad", ["", "a b", "x" * 65, "é", "a:b", "{u:1}", "a\n"])
async def test_malformed_user_ids_are_refused(store: FollowStore, bad: str) -> None:
    with pytest.raises(InvalidInputError, match="Invalid user id"):
        await store.upsert_user(bad)
    with pytest.raises(InvalidInputError):
        await store.profiles(["ok", bad])
