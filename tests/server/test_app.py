"""The application's operational endpoints against a Redis that goes away and comes back."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from followgraph.schema.errors import UNAVAILABLE_MESSAGE
from followgraph.server.app import create_app
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store.redis.channel import ReadChannel
from followgraph.store.redis.lua import Client
from tests.conftest import TEST_SECRET
from tests.served import Served, serve


@pytest.fixture
async def own_redis(tmp_path: Path) -> AsyncIterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


async def test_readyz_follows_redis_without_a_restart(own_redis: RedisServer, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, jwt_secret=TEST_SECRET, redis_url=own_redis.url)
    async with serve(settings) as served:
        client = served.client
        ready = (await client.get("/readyz")).json()
        # The SQL copy (SQLite in the data directory by default) is reported beside Redis.
        assert (ready["status"], ready["redis"], ready["sync"]["status"]) in {
            ("ok", "ok", "starting"), ("ok", "ok", "ok")
        }  # fmt: skip
        assert (await client.get("/healthz")).status_code == 200

        own_redis.stop()
        down = await client.get("/readyz")
        assert down.status_code == 503
        assert down.json()["status"] == "unavailable"
        assert (await client.get("/healthz")).status_code == 200
        query = await client.post("/graphql", json={"query": '{ user(userId: "a") { name } }'})
        body = query.json()
        assert body["errors"][0]["message"] == UNAVAILABLE_MESSAGE
        assert body["errors"][0]["extensions"]["code"] == "SERVICE_UNAVAILABLE"

        own_redis.start()
        assert (await client.get("/readyz")).status_code == 200
        again = await client.post("/graphql", json={"query": '{ user(userId: "a") { name } }'})
        assert again.json() == {"data": {"user": None}}


async def test_metrics_count_requests_outcomes_and_batches(api: Served) -> None:
    await api.register("alice", "bob")
    await api.data('mutation Follow { follow(input: {userId: "bob"}) { changed } }', as_user="alice")
    await api.data('query Fans { user(userId: "bob") { fans { nodes { name relationship } } } }')
    await api.post("query Broken { nope }")
    await api.client.post("/graphql", json={"query": "{ viewer { userId } }"}, headers={"authorization": "x"})
    text = (await api.client.get("/metrics")).text
    assert 'followgraph_requests_total{operation="Follow",outcome="ok"} 1.0' in text
    assert 'followgraph_requests_total{operation="Fans",outcome="ok"} 1.0' in text
    assert 'followgraph_requests_total{operation="Broken",outcome="rejected"} 1.0' in text
    assert 'followgraph_requests_total{operation="unnamed",outcome="unauthenticated"} 1.0' in text
    assert 'followgraph_request_duration_seconds_count{operation="Fans"} 1.0' in text
    assert 'followgraph_dataloader_batch_size_count{loader="page"}' in text
    # The Fans query: the user's registration, then its fans' names and relationships.
    assert 'followgraph_dataloader_batch_size_count{loader="facts"} 2.0' in text


def _sample(text: str, name: str, label: str) -> float:
    """The value of metric `name`{event=`label`} in a /metrics text; 0 when it has none."""
    found = re.search(rf'^{name}{{event="{label}"}} ([0-9.e+]+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def test_metrics_count_the_profiles_kept(api: Served) -> None:
    await api.register("alice", "bob", "carol")
    for fan in ("alice", "carol"):
        await api.data('mutation { follow(input: {userId: "bob"}) { changed } }', as_user=fan)
    for _ in range(3):
        data = await api.data('{ user(userId: "bob") { fans { nodes { name } } } }')
        assert {node["name"] for node in data["user"]["fans"]["nodes"]} == {"User alice", "User carol"}
    text = (await api.client.get("/metrics")).text
    counted = {event: _sample(text, "followgraph_profile_cache_total", event) for event in ("kept", "read")}
    # The fans' profiles: read from Redis the first time, kept for the next two pages (one Redis
    # and a cluster alike).
    assert counted["kept"] >= 4
    assert counted["read"] >= 2


async def test_metrics_count_no_profiles_kept_when_the_cache_is_off(
    served_redis: Client, settings: Settings
) -> None:
    async with serve(replace(settings, profile_cache=0), served_redis) as api:
        await api.register("alice", "bob")
        await api.data('mutation { follow(input: {userId: "bob"}) { changed } }', as_user="alice")
        for _ in range(2):
            data = await api.data('{ user(userId: "bob") { fans { nodes { name } } } }')
            assert data["user"]["fans"]["nodes"] == [{"name": "User alice"}]
        text = (await api.client.get("/metrics")).text
    counted = {event: _sample(text, "followgraph_profile_cache_total", event) for event in ("kept", "read")}
    assert counted == {"kept": 0.0, "read": 0.0}


async def test_graphql_with_a_trailing_slash_is_redirected_to_the_endpoint(api: Served) -> None:
    # /graphql itself is answered ahead of the router; the router's route is what redirects.
    answer = await api.client.post("/graphql/", json={"query": "{ __typename }"})

    assert answer.status_code == 307
    assert answer.headers["location"].endswith("/graphql")


def test_create_app_needs_a_redis(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="FOLLOWGRAPH_REDIS_URL"):
        create_app(Settings(data_dir=tmp_path, jwt_secret=TEST_SECRET))


async def test_reads_go_through_the_read_channel_unless_turned_off(
    real_redis: aioredis.Redis, settings: Settings
) -> None:
    for enabled in (True, False):
        async with serve(replace(settings, read_channel=enabled, redis_timeout=0.5), real_redis) as served:
            reads = served.store.reads
            assert (reads is not None) is enabled
            if reads is not None:
                assert isinstance(reads, ReadChannel) and reads.timeout == 0.5
            await served.store.upsert_user("ann", name="Ann")
            data = await served.data('{ user(userId: "ann") { name fans { totalCount } } }')
            assert data == {"user": {"name": "Ann", "fans": {"totalCount": 0}}}
