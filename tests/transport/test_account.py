"""A user's own exports over HTTP: Mastodon's CSV formats, streamed page by page, the user's token
only."""

from __future__ import annotations

import csv
import io

from tests.served import Served


async def exported(api: Served, name: str, user_id: str = "me") -> list[list[str]]:
    response = await api.client.get(f"/account/export/{name}.csv", headers=api.auth(user_id))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == f'attachment; filename="{name}.csv"'
    return list(csv.reader(io.StringIO(response.text)))


async def test_each_list_in_mastodons_format_newest_first(api: Served) -> None:
    await api.register("me", "a", "b", "c", "d")
    for other in ("a", "b"):
        await api.store.follow(follower="me", followee=other)
    await api.store.follow(follower="c", followee="me")
    await api.store.block(blocker="me", blocked="d")
    await api.store.mute(muter="me", muted="a", on=True)
    assert await exported(api, "following") == [
        ["Account address", "Show boosts", "Notify on new posts", "Languages"],
        ["b", "true", "false", ""],
        ["a", "true", "false", ""],
    ]
    assert await exported(api, "followers") == [["Account address"], ["c"]]
    assert await exported(api, "blocks") == [["d"]]
    assert await exported(api, "mutes") == [["Account address", "Hide notifications"], ["a", "true"]]


async def test_a_list_longer_than_a_page_comes_whole_and_once(api: Served) -> None:
    fans = [f"f{i}" for i in range(2_345)]
    await api.register("me")
    pipe = api.store.redis.pipeline(transaction=False)
    for at, fan in enumerate(fans, start=1):
        pipe.zadd(api.store.keys.fans("me"), {fan: at})
    await pipe.execute()
    rows = await exported(api, "followers")
    assert [row[0] for row in rows[1:]] == fans[::-1]


async def test_an_export_needs_the_users_token(api: Served) -> None:
    anonymous = await api.client.get("/account/export/following.csv")
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    forged = await api.client.get("/account/export/following.csv", headers={"authorization": "Bearer x.y.z"})
    assert forged.status_code == 401


async def test_an_unknown_export_is_404_naming_the_files(api: Served) -> None:
    response = await api.client.get("/account/export/lists.csv", headers=api.auth("me"))
    assert response.status_code == 404
    assert "following.csv, followers.csv, blocks.csv, mutes.csv" in response.json()["error"]
