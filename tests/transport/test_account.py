"""A user's own exports over HTTP: Mastodon's CSV formats, streamed page by page, the user's token
only."""

from __future__ import annotations

import asyncio
import csv
import io
import time
from typing import Any

import pytest

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
    assert "there are following, followers, blocks, mutes" in response.json()["error"]


async def imported(api: Served, path: str, text: str, user_id: str = "me") -> dict[str, Any]:
    """Start an import and wait for it to end; its final status."""
    started = await api.client.post(
        path, content=text.encode(), headers={**api.auth(user_id), "content-type": "text/csv"}
    )
    assert started.status_code == 202, started.text
    for _ in range(100):
        status: dict[str, Any] = (await api.client.get("/account/import", headers=api.auth(user_id))).json()
        if status["state"] != "running":
            return status
        await asyncio.sleep(0.05)
    raise AssertionError(f"the import did not end: {status}")


async def test_an_import_runs_in_the_background_and_reports_its_rows(api: Served) -> None:
    await api.register("me", "a", "b")
    status = await imported(
        api, "/account/import/following", "Account address\na,true\nnobody\nb@else.where\n"
    )
    assert status["state"] == "done"
    assert (status["list"], status["mode"], status["rows"], status["applied"], status["failed"]) == (
        "following",
        "merge",
        3,
        1,
        2,
    )
    assert [(p["line"], p["address"]) for p in status["problems"]] == [(4, "b@else.where"), (3, "nobody")]
    assert [row[0] for row in (await exported(api, "following"))[1:]] == ["a"]
    overwrite = await imported(api, "/account/import/following?mode=overwrite", "b\n")
    assert (overwrite["applied"], overwrite["removed"]) == (1, 1)
    assert [row[0] for row in (await exported(api, "following"))[1:]] == ["b"]


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/account/import/followers", b"a\n", 404, "following, blocks, mutes"),
        ("/account/import/following?mode=replace", b"a\n", 400, "mode is merge"),
        ("/account/import/following", b"\xff\xfe", 400, "not UTF-8"),
        ("/account/import/following", b"".join(b"u%d\n" % i for i in range(10_001)), 400, "at most 10,000"),
    ],
)
async def test_a_file_that_cannot_be_imported_is_refused_whole(
    api: Served, path: str, body: bytes, status: int, message: str
) -> None:
    response = await api.client.post(path, content=body, headers=api.auth("me"))
    assert response.status_code == status
    assert message in response.json()["error"]
    assert (await api.client.get("/account/import", headers=api.auth("me"))).status_code == 404


async def test_one_import_at_a_time(api: Served) -> None:
    await api.register("me")
    key = api.store.keys.import_job("me")
    await api.store.redis.hset(key, mapping={"state": "running", "beat": repr(time.time())})
    busy = await api.client.post("/account/import/blocks", content=b"a\n", headers=api.auth("me"))
    assert busy.status_code == 409
    await api.store.redis.hset(key, mapping={"beat": repr(time.time() - 60)})  # its server is gone
    assert (await api.client.get("/account/import", headers=api.auth("me"))).json()["state"] == "interrupted"
    assert (await imported(api, "/account/import/blocks", "nobody\n"))["state"] == "done"


async def test_an_account_that_is_off_exports_its_lists_but_imports_nothing(api: Served) -> None:
    await api.register("me", "a")
    await api.store.follow(follower="me", followee="a")
    await api.store.deactivate("me")
    assert await exported(api, "following") == [
        ["Account address", "Show boosts", "Notify on new posts", "Languages"],
        ["a", "true", "false", ""],
    ]
    refused = await api.client.post("/account/import/following", content=b"a\n", headers=api.auth("me"))
    assert refused.status_code == 403
    assert refused.json() == {"error": "The account is deactivated: it imports nothing until it is back on."}


async def test_a_deleted_accounts_token_exports_nothing(api: Served) -> None:
    await api.register("me")
    await api.store.delete_account("me")
    gone = await api.client.get("/account/export/following.csv", headers=api.auth("me"))
    assert gone.status_code == 404
    assert gone.json() == {"error": "No user 'me' is registered."}
