"""The web front's serving (transport/web.py): the built pages, the fallbacks, the demo token endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from followgraph.server.settings import ConfigError, Settings
from followgraph.store import FollowStore
from followgraph.transport.auth import Principal, authenticate
from followgraph.transport.web import WebBuild, build_notice
from tests.conftest import TEST_SECRET
from tests.served import serve

HTML = {"accept": "text/html"}


def fake_build(directory: Path) -> Path:
    (directory / "assets").mkdir(parents=True)
    (directory / "index.html").write_text("<title>the app</title>")
    (directory / "graphiql.html").write_text("<title>bundled graphiql</title>")
    (directory / "assets" / "app-1234.js").write_text("console.log(1)")
    return directory


async def client_for(settings: Settings, redis: aioredis.Redis) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(settings, redis, base_url="http://127.0.0.1") as served:
        yield served.client


def settings(tmp_path: Path, **changes: Any) -> Settings:
    return replace(Settings(data_dir=tmp_path, jwt_secret=TEST_SECRET), **changes)


async def test_the_built_pages_are_served(tmp_path: Path, real_redis: aioredis.Redis) -> None:
    dist = fake_build(tmp_path / "dist")
    async for client in client_for(settings(tmp_path, web_dist=dist), real_redis):
        index = await client.get("/")
        assert index.status_code == 200
        assert index.text == "<title>the app</title>"
        assert (await client.get("/assets/app-1234.js")).text == "console.log(1)"
        assert (await client.get("/assets/missing.js")).status_code == 404
        graphiql = await client.get("/graphql", headers=HTML)
        assert graphiql.text == "<title>bundled graphiql</title>"
        # Not a browser: the API as before.
        api = await client.get("/graphql", params={"query": "{ viewer { userId } }"})
        assert api.json() == {"data": {"viewer": None}}


async def test_without_a_build_the_pages_fall_back(tmp_path: Path, real_redis: aioredis.Redis) -> None:
    async for client in client_for(settings(tmp_path, web_dist=tmp_path / "nothing"), real_redis):
        index = await client.get("/")
        assert index.status_code == 503
        assert "The web app is not built" in index.text
        assert "make web" in index.text
        graphiql = await client.get("/graphql", headers=HTML)
        assert graphiql.status_code == 200
        assert "graphiql" in graphiql.text.lower()
        assert "<title>bundled graphiql</title>" not in graphiql.text


def test_the_build_notice_says_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = fake_build(tmp_path / "dist")
    assert build_notice(dist, WebBuild.find(dist)) is None
    assert WebBuild.find(tmp_path) is None
    monkeypatch.setattr("shutil.which", lambda name: None)
    notice = build_notice(tmp_path, None)
    assert notice is not None
    assert "No Node.js was found" in notice
    assert "GraphiQL from a CDN" in notice
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/node")
    assert "`make web` builds them" in (build_notice(tmp_path, None) or "")


async def test_demo_tokens_only_in_demo_mode(tmp_path: Path, real_redis: aioredis.Redis) -> None:
    async for client in client_for(settings(tmp_path), real_redis):
        assert (await client.get("/demo/token", params={"user": "42"})).status_code == 404


async def test_demo_tokens(tmp_path: Path, real_redis: aioredis.Redis) -> None:
    config = settings(tmp_path, demo=True)
    store = FollowStore(real_redis)
    await store.upsert_user("42", name="Wang Fang")
    await store.upsert_user("7", name="Chen Hao")
    async for client in client_for(config, real_redis):
        default = await client.get("/demo/token")
        assert default.status_code == 200
        assert default.headers["cache-control"] == "no-store"
        body = default.json()
        assert body["userId"] == "42"
        # A plain user's token: no admin scope, and the server accepts it.
        assert authenticate("Bearer " + body["token"], config.auth_config()) == Principal("42", frozenset())
        viewer = await client.post(
            "/graphql",
            json={"query": "{ viewer { userId } }"},
            headers={"authorization": f"Bearer {(await client.get('/demo/token?user=7')).json()['token']}"},
        )
        assert viewer.json() == {"data": {"viewer": {"userId": "7"}}}
        unknown = await client.get("/demo/token", params={"user": "99999999"})
        assert unknown.status_code == 422
        assert unknown.json() == {"error": "There is no user 99999999 in the demo graph."}
        assert (await client.get("/demo/token", params={"user": "not valid!"})).status_code == 400
        assert (await client.post("/demo/token")).status_code == 405


async def test_the_default_demo_user_is_registered(tmp_path: Path, real_redis: aioredis.Redis) -> None:
    config = settings(tmp_path, demo=True)
    async for client in client_for(config, real_redis):
        empty = await client.get("/demo/token")
        assert empty.status_code == 503
        assert empty.json() == {"error": "The demo graph is not loaded: `followgraph demo` loads it."}
        # A demo graph of fewer users than the default viewer's id: its first user.
        await FollowStore(real_redis).upsert_user("1", name="Li Wei")
        small = await client.get("/demo/token")
        assert (small.status_code, small.json()["userId"]) == (200, "1")


def test_demo_mode_is_refused_in_production() -> None:
    with pytest.raises(ConfigError, match=r"FOLLOWGRAPH_DEMO=1\) hands out tokens"):
        Settings.from_env({"FOLLOWGRAPH_DEMO": "1", "FOLLOWGRAPH_PRODUCTION": "1"})
    assert Settings.from_env({"FOLLOWGRAPH_DEMO": "1"}).demo
