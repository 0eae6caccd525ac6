"""`followgraph plan` and its capacity model (cli/capacity.py): the model's memory against two
graphs loaded into a real Redis (within 25%), and the command's answers."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from typer.testing import CliRunner

from followgraph.cli.capacity import Costs, Machines, Workload, memory, plan
from followgraph.cli.demo import DemoSpec, load_demo
from followgraph.cli.main import app
from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer
from followgraph.server.search import build_index
from followgraph.store import FollowStore
from followgraph.store.redis.lua import Client

BIG = 128  # Redis's zset-max-listpack-entries: a sorted set past it is a skip list


@pytest.fixture
async def fresh(tmp_path: Path) -> AsyncIterator[FollowStore]:
    server = RedisServer(tmp_path / "redis")
    server.start()
    client = connect(server.url)
    try:
        yield FollowStore(client)
    finally:
        await client.aclose()
        server.stop()


async def _used(client: Client) -> int:
    assert isinstance(client, aioredis.Redis)
    return int((await client.info("memory"))["used_memory"])


async def _measured_workload(store: FollowStore, users: int, follows: int) -> Workload:
    """The model's inputs as the loaded graph has them: its counts and the shares of its sets."""
    redis, k = store.redis, store.keys
    members = {"following": [0, 0], "fans": [0, 0], "mutual": [0, 0]}  # [all, in big sets]
    for user in range(1, users + 1):
        for kind, (total, big) in list(members.items()):
            size = int(await redis.zcard(getattr(k, kind)(str(user))))
            members[kind] = [total + size, big + (size if size > BIG else 0)]
    events = sum([int(await redis.xlen(key)) async for key in redis.scan_iter(match=k.log("") + "*")])
    return Workload(
        users=users,
        follows=follows,
        mutual_share=members["mutual"][0] / follows,
        big_following_share=members["following"][1] / follows,
        big_fans_share=members["fans"][1] / follows,
        log_events=events,
    )


@pytest.mark.parametrize(
    "spec",
    [DemoSpec(users=3000), DemoSpec(users=8000, mean_following=30, zipf=1.3, reciprocity=0.1)],
    ids=["demo", "skewed"],
)
async def test_the_model_predicts_the_memory_of_a_loaded_graph_within_a_quarter(
    fresh: FollowStore, spec: DemoSpec
) -> None:
    redis = fresh.redis
    before = await _used(redis)
    users, follows = await load_demo(fresh, spec, now_ms=int(time.time() * 1000))
    await build_index(fresh)
    measured = await _used(redis) - before
    workload = await _measured_workload(fresh, users, follows)
    predicted = sum(memory(workload))
    assert abs(predicted - measured) <= 0.25 * measured, (predicted, measured, workload)


def test_the_plan_grows_with_its_workload() -> None:
    small = plan(Workload(users=10_000_000, follows=1_000_000_000, pages_per_second=10_000))
    big = plan(Workload(users=100_000_000, follows=10_000_000_000, pages_per_second=100_000))
    assert big.graph_gb == pytest.approx(10 * small.graph_gb)
    assert 8 * small.masters <= big.masters <= 10 * small.masters  # each rounded up
    assert big.api_processes > small.api_processes
    # Memory decides at this size: a master holds half its 32 GB of data.
    assert big.masters_for_memory * 16 >= big.graph_gb + big.users_gb
    # A master per planned half core of Redis CPU, when CPU decides.
    busy = plan(Workload(users=1000, follows=10_000, pages_per_second=200_000))
    assert busy.masters == busy.masters_for_cpu == 14  # 200k x 35 us = 7 cores, at half a core each


def test_a_celebrity_is_one_slot_and_its_reads_spread_over_replicas() -> None:
    costs = Costs()
    hot = plan(
        Workload(users=1000, follows=10_000, celebrity_fans=50_000_000, celebrity_pages_per_second=50_000)
    )
    assert hot.celebrity_gb == pytest.approx(50_000_000 * costs.big_member / 1e9)
    assert hot.celebrity_redis_cores == pytest.approx(1.75)
    assert hot.celebrity_readers == 4
    assert plan(Workload(users=1, follows=1), Machines(replicas_per_master=2)).replicas == 2


def test_the_command_reads_counts_as_people_write_them() -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["plan", "--users", "100M", "--follows", "10B", "--pages", "100k"])
    assert shown.exit_code == 0, shown.output
    assert "100,000,000 users, 10,000,000,000 follows, 100,000 pages/s" in shown.output
    assert "Redis masters" in shown.output and "API processes" in shown.output
    as_json = runner.invoke(app, ["plan", "--users", "2.5k", "--follows", "50,000", "--json"])
    planned = json.loads(as_json.output)
    assert planned["workload"]["users"] == 2500 and planned["workload"]["follows"] == 50_000
    assert planned["plan"]["masters"] == 1
    on_redis = runner.invoke(
        app, ["plan", "--users", "1M", "--follows", "100M", "--server", "redis", "--json"]
    )
    on_valkey = runner.invoke(app, ["plan", "--users", "1M", "--follows", "100M", "--json"])
    assert json.loads(on_redis.output)["plan"]["graph_gb"] > json.loads(on_valkey.output)["plan"]["graph_gb"]
    refused = runner.invoke(app, ["plan", "--users", "lots", "--follows", "1M"])
    assert refused.exit_code == 2
    assert "'lots' is not a count such as 5000, 2.5k, 100M or 10B." in refused.output
