"""The web front's serving (transport/web.py, transport/assets.py): the built pages and files, their
encodings and caching over real HTTP, the pages without a build, the demo token endpoint."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from followgraph.server.settings import ConfigError, Settings
from followgraph.store import FollowStore
from followgraph.transport.assets import accepted_encodings
from followgraph.transport.auth import Principal, authenticate
from followgraph.transport.web import WebBuild, build_notice
from tests.conftest import TEST_SECRET
from tests.live import serve_live
from tests.served import serve

HTML = {"accept": "text/html"}
APP_JS = b"console.log('the app');" * 100
# What the build writes beside a file (web/vite.config.ts). The server sends the files as they are,
# so any bytes do for brotli's here.
APP_JS_BR = b"brotli of the app"
INDEX = b"<!doctype html><title>the app</title>" + b"<p>" * 400
IMMUTABLE = "public, max-age=31536000, immutable"
# gzip's header holds the time it was written: one fixed copy, so the file and the expected bytes agree.
APP_JS_GZ = gzip.compress(APP_JS, mtime=0)


def fake_build(directory: Path) -> Path:
    (directory / "assets").mkdir(parents=True)
    (directory / "index.html").write_bytes(INDEX)
    (directory / "index.html.gz").write_bytes(gzip.compress(INDEX))
    (directory / "graphiql.html").write_text("<title>bundled graphiql</title>")
    (directory / "assets" / "app-1234.js").write_bytes(APP_JS)
    (directory / "assets" / "app-1234.js.br").write_bytes(APP_JS_BR)
    (directory / "assets" / "app-1234.js.gz").write_bytes(APP_JS_GZ)
    (directory / "assets" / "logo-5678.png").write_bytes(b"\x89PNG not compressed")
    return directory


async def client_for(settings: Settings, redis: aioredis.Redis) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(settings, redis, base_url="http://127.0.0.1") as served:
        yield served.client


def settings(tmp_path: Path, **changes: Any) -> Settings:
    return replace(Settings(data_dir=tmp_path, jwt_secret=TEST_SECRET), **changes)


async def get(
    client: httpx.AsyncClient, url: str, encodings: str | None, **headers: str
) -> tuple[httpx.Response, bytes]:
    """A GET sending `encodings` as Accept-Encoding (None: none), and the body as sent, undecoded."""
    sent = {"accept-encoding": encodings} if encodings is not None else {}
    request = client.build_request("GET", url, headers={**sent, **headers})
    if encodings is None:
        del request.headers["accept-encoding"]
    response = await client.send(request, stream=True)
    body = b"".join([chunk async for chunk in response.aiter_raw()])
    await response.aclose()
    return response, body


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        ("gzip, deflate, br, zstd", ["br", "gzip"]),
        ("gzip, deflate", ["gzip"]),
        ("x-gzip", ["gzip"]),
        ("gzip;q=1.0, br;q=0.5", ["gzip", "br"]),
        ("br;q=0, gzip", ["gzip"]),
        ("*", ["br", "gzip"]),
        ("*;q=0.5, gzip", ["gzip", "br"]),
        ("*, br;q=0", ["gzip"]),
        ("BR ; Q=0.8", ["br"]),
        ("br;q=nonsense, gzip", ["gzip"]),
        ("identity", []),
        ("", []),
    ],
)
def test_accepted_encodings(header: str, chosen: list[str]) -> None:
    assert accepted_encodings(header) == chosen


async def test_assets_in_the_best_accepted_encoding(tmp_path: Path, real_redis: aioredis.Redis) -> None:
    dist = fake_build(tmp_path / "dist")
    async with serve_live(settings(tmp_path, web_dist=dist), real_redis) as live:
        url = f"http://127.0.0.1:{live.port}/assets/app-1234.js"
        for encodings, encoding, body in [
            ("gzip, deflate, br, zstd", "br", APP_JS_BR),
            ("gzip;q=1.0, br;q=0.5", "gzip", APP_JS_GZ),
            ("br;q=0, gzip", "gzip", APP_JS_GZ),
            (None, None, APP_JS),
            ("identity", None, APP_JS),
        ]:
            response, sent = await get(live.http, url, encodings)
            assert response.status_code == 200, encodings
            assert sent == body, encodings
            assert response.headers.get("content-encoding") == encoding, encodings
            assert response.headers["content-length"] == str(len(body))
            assert response.headers["content-type"].split(";")[0] in {
                "text/javascript",
                "application/javascript",
            }
            assert response.headers["vary"] == "Accept-Encoding"
            assert response.headers["cache-control"] == IMMUTABLE

        # Revalidated (a reload that bypasses the year): a 304 for the variant's own ETag.
        response, _ = await get(live.http, url, "br")
        again, body = await get(live.http, url, "br", **{"if-none-match": response.headers["etag"]})
        assert (again.status_code, body) == (304, b"")
        assert again.headers["cache-control"] == IMMUTABLE
        assert again.headers["vary"] == "Accept-Encoding"
        stale, _ = await get(live.http, url, "gzip", **{"if-none-match": response.headers["etag"]})
        assert stale.status_code == 200 and stale.headers["content-encoding"] == "gzip"

        head = await live.http.head(url, headers={"accept-encoding": "br"})
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == str(len(APP_JS_BR))

        # A file the build did not compress: as it is, for a year, with nothing to vary on.
        response, sent = await get(
            live.http, f"http://127.0.0.1:{live.port}/assets/logo-5678.png", "br, gzip"
        )
        assert sent == b"\x89PNG not compressed"
        assert "content-encoding" not in response.headers and "vary" not in response.headers
        assert response.headers["cache-control"] == IMMUTABLE

        # Only the build's files, under their own names.
        for missing in (
            "missing.js",
            "app-1234.js.br",
            "app-1234.js.gz",
            "../index.html",
            "%2e%2e/index.html",
        ):
            response, _ = await get(live.http, f"http://127.0.0.1:{live.port}/assets/{missing}", "br")
            assert response.status_code == 404, missing
        post = await live.http.post(url)
        assert post.status_code == 405


async def test_the_pages_are_revalidated(tmp_path: Path, real_redis: aioredis.Redis) -> None:
    dist = fake_build(tmp_path / "dist")
    async with serve_live(settings(tmp_path, web_dist=dist), real_redis) as live:
        base = f"http://127.0.0.1:{live.port}"
        index, body = await get(live.http, f"{base}/", "gzip, deflate, br")
        assert index.status_code == 200
        # No brotli file beside index.html in this build: gzip's.
        assert index.headers["content-encoding"] == "gzip"
        assert gzip.decompress(body) == INDEX
        assert index.headers["content-type"] == "text/html; charset=utf-8"
        assert index.headers["cache-control"] == "no-cache"
        assert index.headers["vary"] == "Accept-Encoding"
        same, body = await get(live.http, f"{base}/", "gzip", **{"if-none-match": index.headers["etag"]})
        assert (same.status_code, body) == (304, b"")
        plain, body = await get(live.http, f"{base}/", None)
        assert body == INDEX and "content-encoding" not in plain.headers

        graphiql = await live.http.get(f"{base}/graphql", headers={**HTML, "accept-encoding": "br, gzip"})
        assert graphiql.text == "<title>bundled graphiql</title>"
        # Not a browser: the API as before, and its answers as /graphql writes them, never compressed.
        api, sent = await get(
            live.http, f"{base}/graphql?query=%7B%20viewer%20%7B%20userId%20%7D%20%7D", "br"
        )
        assert "content-encoding" not in api.headers and "vary" not in api.headers
        assert sent == b'{"data":{"viewer":null}}'
        posted = await live.http.post(
            f"{base}/graphql",
            json={"query": "{ viewer { userId } }"},
            headers={"accept-encoding": "br, gzip"},
        )
        assert "content-encoding" not in posted.headers
        assert posted.json() == {"data": {"viewer": None}}


async def test_without_a_build_the_pages_say_so(tmp_path: Path, real_redis: aioredis.Redis) -> None:
    async for client in client_for(settings(tmp_path, web_dist=tmp_path / "nothing"), real_redis):
        index = await client.get("/")
        assert index.status_code == 503
        assert "The web app is not built" in index.text
        assert "make web" in index.text
        graphiql = await client.get("/graphql", headers=HTML)
        assert graphiql.status_code == 200
        assert "GraphiQL is not built" in graphiql.text
        assert "make web" in graphiql.text
        # Nothing from another host: no GraphiQL from a CDN.
        for page in (index.text, graphiql.text):
            assert "<script" not in page and "<link" not in page
            assert "src=" not in page
        assert (await client.get("/assets/app.js")).status_code == 404


def test_the_build_notice_says_what_is_missing(tmp_path: Path) -> None:
    dist = fake_build(tmp_path / "dist")
    assert build_notice(dist, WebBuild.find(dist)) is None
    assert WebBuild.find(tmp_path) is None
    notice = build_notice(tmp_path, None)
    assert notice is not None
    assert "/ and /graphql say so" in notice
    assert f"`make web` builds them into {tmp_path}" in notice
    assert "cdn" not in notice.lower()


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
        # An account that is off signs in, to come back or leave.
        await store.deactivate("7")
        off = await client.get("/demo/token", params={"user": "7"})
        assert off.status_code == 200 and off.json()["userId"] == "7"


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
