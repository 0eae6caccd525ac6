"""`python -m bench.federation`: FollowGraph behind a real @apollo/gateway, beside a posts subgraph
(the Node.js project of tests/interop/federation/), on a Redis of its own holding the demo graph.

Two parts. Round trips, counted in process (FollowGraph served in this process on a counting
connection pool): the gateway's entity fetch for 1, 10 and 100 posts' authors, each with a page of
fans, against `users(userIds:)` for the same authors. Latency, with FollowGraph as a `followgraph
serve` process of its own: a fans page asked of FollowGraph directly and through the gateway, and
posts with their authors' pages (two subgraph fetches), in interleaved rounds of sequential
requests; median and p90. Prints a Markdown table; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as aioredis
from redis.asyncio.connection import UnixDomainSocketConnection
from rich.console import Console

from followgraph.cli.demo import DemoSpec, load_demo
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.transport.auth import mint_token
from tests import gateway
from tests.live import serve_live
from tests.roundtrips import RoundTripCounter
from tests.server.processes import free_ports, serve

SECRET = "bench-secret-that-is-long-enough-for-hs256!"
VIEWER = "42"
AUTHOR_PAGE = "fansCount fans(first: 3) { edges { relationship node { userId name } } }"
POSTS = f"query Posts($first: Int) {{ posts(first: $first) {{ id author {{ userId {AUTHOR_PAGE} }} }} }}"
USERS = f"query Authors($ids: [ID!]!) {{ users(userIds: $ids) {{ userId {AUTHOR_PAGE} }} }}"
PAGE = """query Page { user(userId: "1") { name fansCount fans(first: 20) {
  edges { followedAt relationship node { userId name } } pageInfo { hasNextPage endCursor } } } }"""


class CountingConnection(RoundTripCounter, UnixDomainSocketConnection):
    """A counting unix-socket connection."""


def _posts(directory: Path) -> Path:
    """100 posts, each by another of the demo's users 1 to 100."""
    path = directory / "posts.json"
    path.write_text(
        json.dumps([{"id": f"p{i}", "title": f"Post {i}", "authorId": str(i)} for i in range(1, 101)])
    )
    return path


async def _ask(http: httpx.AsyncClient, url: str, query: str, variables: dict[str, Any]) -> Any:
    response = await http.post(
        url,
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {_token()}"},
    )
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]


def _token() -> str:
    return mint_token(Settings(jwt_secret=SECRET).auth_config(), VIEWER)


async def round_trips(node: str, redis: RedisServer, directory: Path) -> list[tuple[int, int, int]]:
    """(authors, round trips through the gateway, round trips of users(userIds:)) for 1, 10, 100."""
    pool = aioredis.ConnectionPool(
        connection_class=CountingConnection, path=str(redis.socket_path), decode_responses=True
    )
    client = aioredis.Redis(connection_pool=pool)
    settings = Settings(
        data_dir=directory / "data",
        jwt_secret=SECRET,
        database_url="off",
        sync=False,
        search_index=False,
        federation=True,
    )
    posts_port, gateway_port = free_ports(2)
    rows = []
    try:
        async with (
            serve_live(settings, client) as live,
            gateway.started(
                node, directory / "posts.log", "posts.mjs", str(posts_port), str(_posts(directory))
            ) as posts,
            gateway.started(
                node,
                directory / "gateway.log",
                "gateway.mjs",
                str(gateway_port),
                f"followgraph={live.url}",
                f"posts={posts}",
            ) as url,
        ):
            for first in (1, 10, 100):
                ids = [str(i) for i in range(1, first + 1)]
                await _ask(live.http, url, POSTS, {"first": first})  # the scripts' first use
                CountingConnection.sent = 0
                await _ask(live.http, url, POSTS, {"first": first})
                through = CountingConnection.sent
                CountingConnection.sent = 0
                await _ask(live.http, live.url, USERS, {"ids": ids})
                rows.append((first, through, CountingConnection.sent))
    finally:
        await client.aclose()
        await pool.disconnect()
    return rows


async def latencies(node: str, redis: RedisServer, directory: Path, rounds: int) -> dict[str, list[float]]:
    """Milliseconds of each request, by what was asked and where."""
    env = {
        "FOLLOWGRAPH_REDIS_URL": redis.url,
        "FOLLOWGRAPH_JWT_SECRET": SECRET,
        "FOLLOWGRAPH_DATABASE_URL": "off",
        "FOLLOWGRAPH_SEARCH_INDEX": "0",
        "FOLLOWGRAPH_FEDERATION": "1",
        "FOLLOWGRAPH_LOG_LEVEL": "warning",
    }
    posts_port, gateway_port = free_ports(2)
    with serve(directory, env=env) as followgraph:
        direct = f"{followgraph.url}/graphql"
        async with (
            gateway.started(
                node, directory / "posts.log", "posts.mjs", str(posts_port), str(_posts(directory))
            ) as posts,
            gateway.started(
                node,
                directory / "gateway.log",
                "gateway.mjs",
                str(gateway_port),
                f"followgraph={direct}",
                f"posts={posts}",
            ) as through,
            httpx.AsyncClient(timeout=30) as http,
        ):
            asked = {
                "fans page, direct": (direct, PAGE, {}),
                "fans page, through the gateway": (through, PAGE, {}),
                "10 posts with their authors' pages, through the gateway": (through, POSTS, {"first": 10}),
            }
            times: dict[str, list[float]] = {name: [] for name in asked}
            for _ in range(20):  # warm-up: plans compiled, connections open
                for url, query, variables in asked.values():
                    await _ask(http, url, query, variables)
            for _ in range(rounds):
                for name, (url, query, variables) in asked.items():
                    started = time.perf_counter()
                    await _ask(http, url, query, variables)
                    times[name].append((time.perf_counter() - started) * 1000)
    return times


async def main(rounds: int) -> None:
    console = Console()
    node = gateway.node()
    if node is None:
        raise SystemExit(
            "Node.js and npm are needed: the gateway and the posts subgraph are Node.js programs."
        )
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        with RedisServer(directory=directory / "redis") as redis:
            client = aioredis.Redis(unix_socket_path=str(redis.socket_path), decode_responses=True)
            await load_demo(FollowStore(client), DemoSpec(), now_ms=int(time.time() * 1000))
            await client.aclose()
            trips = await round_trips(node, redis, directory)
            times = await latencies(node, redis, directory, rounds)
    console.print("| authors | round trips, through the gateway | round trips, users(userIds:) |")
    console.print("| --- | --- | --- |")
    for first, through, users in trips:
        console.print(f"| {first} | {through} | {users} |")
    console.print()
    console.print(f"| request ({rounds} each, interleaved) | median ms | p90 ms |")
    console.print("| --- | --- | --- |")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        console.print(f"| {name} | {statistics.median(values):.2f} | {p90:.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.federation", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300, help="requests of each kind (default 300)")
    asyncio.run(main(parser.parse_args().rounds))
