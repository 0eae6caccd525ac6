"""Trusted documents: a manifest of the clients' operations, in Apollo's format; `require` runs
only those (by hash or whole), `allow` runs them by hash beside anything else and so does `off`
(a client built with the manifest sends ids alone); with `allow` and `require` the manifest's
documents are compiled at start."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from followgraph.executor.plan import Plan
from followgraph.server.settings import ConfigError, Settings
from followgraph.store.redis.lua import Client
from followgraph.transport.web import WEB_MANIFEST
from tests.live import serve_live
from tests.served import Served, serve
from tests.subscriber import raw

USER = 'query User { user(userId: "a") { name } }'
COUNTS = 'query Counts { user(userId: "a") { fansCount followingCount } }'


def digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def manifest(path: Path, *bodies: str) -> Path:
    operations = [
        {"id": digest(body), "name": body.split()[1], "type": "query", "body": body} for body in bodies
    ]
    path.write_text(
        json.dumps({"format": "apollo-persisted-query-manifest", "version": 1, "operations": operations})
    )
    return path


def by_hash(body: str) -> dict[str, Any]:
    return {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": digest(body)}}}


async def answer(api: Served, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = await api.client.post("/graphql", json=body)
    result: dict[str, Any] = response.json()
    return response.status_code, result


async def test_require_runs_the_manifest_and_nothing_else(
    served_redis: Client, settings: Settings, tmp_path: Path
) -> None:
    trusted = replace(
        settings, trusted_documents="require", trusted_documents_file=manifest(tmp_path / "m.json", USER)
    )
    async with serve(trusted, served_redis) as api:
        await api.register("a")
        assert isinstance(api.app.state.endpoint.executor.plan(USER, "User"), Plan)  # compiled at start
        assert await answer(api, by_hash(USER)) == (200, {"data": {"user": {"name": "User a"}}})
        assert await answer(api, {"query": USER}) == (200, {"data": {"user": {"name": "User a"}}})
        for refused in ({"query": COUNTS}, by_hash(COUNTS), {"query": COUNTS, **by_hash(COUNTS)}):
            status, body = await answer(api, refused)
            assert status == 400
            assert body["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_IN_LIST"
        assert await api.store.redis.get(api.store.keys.persisted_query(digest(COUNTS))) is None


async def test_allow_runs_the_manifest_by_hash_and_anything_else(
    served_redis: Client, settings: Settings, tmp_path: Path
) -> None:
    trusted = replace(
        settings, trusted_documents="allow", trusted_documents_file=manifest(tmp_path / "m.json", USER)
    )
    async with serve(trusted, served_redis) as api:
        await api.register("a")
        assert await answer(api, by_hash(USER)) == (200, {"data": {"user": {"name": "User a"}}})
        assert await answer(api, {"query": COUNTS}) == (
            200,
            {"data": {"user": {"fansCount": 0, "followingCount": 0}}},
        )


def test_a_manifest_is_checked_at_start(tmp_path: Path) -> None:
    unbuilt = tmp_path / "dist"
    with pytest.raises(ConfigError, match="needs the manifest"):
        Settings(data_dir=tmp_path, trusted_documents="require", web_dist=unbuilt).validate()
    broken = tmp_path / "broken.json"
    broken.write_text(
        json.dumps(
            {"format": "apollo-persisted-query-manifest", "operations": [{"id": "0" * 64, "body": USER}]}
        )
    )
    settings = Settings(data_dir=tmp_path, trusted_documents="require", trusted_documents_file=broken)
    with pytest.raises(ConfigError, match="is not the SHA-256 of its body"):
        settings.persisted_queries()


def test_the_web_apps_manifest_is_the_default(tmp_path: Path) -> None:
    built = tmp_path / "dist"
    built.mkdir()
    manifest(built / WEB_MANIFEST, USER)
    settings = Settings(data_dir=tmp_path, trusted_documents="require", web_dist=built)
    settings.validate()
    assert settings.trusted_manifest == built / WEB_MANIFEST
    assert set(settings.persisted_queries().trusted) == {digest(USER)}
    named = manifest(tmp_path / "mine.json", COUNTS)
    assert replace(settings, trusted_documents_file=named).trusted_manifest == named


async def test_off_knows_the_manifests_ids_and_runs_anything(
    served_redis: Client, settings: Settings, tmp_path: Path
) -> None:
    # The web app sends its operations by id alone: with the mode off they run at the first request,
    # with no PersistedQueryNotFound for the app to answer with the document.
    known = replace(settings, trusted_documents_file=manifest(tmp_path / "m.json", USER))
    assert known.trusted_documents == "off"
    async with serve(known, served_redis) as api:
        await api.register("a")
        assert api.app.state.endpoint.executor.plan(USER, "User") is None  # learnt at its first run
        assert await answer(api, by_hash(USER)) == (200, {"data": {"user": {"name": "User a"}}})
        status, body = await answer(api, by_hash(COUNTS))
        assert (status, body["errors"][0]["extensions"]["code"]) == (200, "PERSISTED_QUERY_NOT_FOUND")
        assert await answer(api, {"query": COUNTS, **by_hash(COUNTS)}) == (
            200,
            {"data": {"user": {"fansCount": 0, "followingCount": 0}}},
        )


async def test_require_holds_over_websocket_too(
    served_redis: Client, settings: Settings, tmp_path: Path
) -> None:
    trusted = replace(
        settings, trusted_documents="require", trusted_documents_file=manifest(tmp_path / "m.json", USER)
    )
    async with serve_live(trusted, served_redis) as live:
        await live.register("a")
        async with raw(live.ws_url) as socket:
            await socket.init(live.token("a"))
            assert (await socket.receive())["type"] == "connection_ack"
            await socket.send({"id": "1", "type": "subscribe", "payload": {"query": COUNTS}})
            refused = await socket.receive()
            assert refused["type"] == "error"
            assert refused["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_IN_LIST"
            await socket.send({"id": "2", "type": "subscribe", "payload": {"query": USER}})
            assert await socket.receive() == {
                "id": "2",
                "type": "next",
                "payload": {"data": {"user": {"name": "User a"}}},
            }
