"""Two `followgraph serve` processes on one store, a single Redis or a Redis Cluster, are one service:
what one process writes the other reads at once, the follow rate limit is counted once for both,
and a change made through one reaches a subscriber on the other."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import redis

from followgraph.server.redis_client import connect, warm_up
from followgraph.server.redis_cluster import LocalCluster
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.log.stream import DISCOVERY_SECONDS, EventLog
from followgraph.transport.auth import mint_token
from tests.server.processes import clean_env, free_ports, interrupt, wait_ready
from tests.subscriber import listen

SECRET = "a-secret-that-every-server-process-shares!"
RATE = "3/minute"
FOLLOW = (
    "mutation($id: ID!) { follow(input: {userId: $id}) { changed relationship errors { code message } } }"
)
UNFOLLOW = "mutation($id: ID!) { unfollow(input: {userId: $id}) { changed relationship errors { code } } }"
LIST = "totalCount edges { relationship followedAt node { userId } }"
USER = (
    "query($id: ID!) { user(userId: $id) { followingCount fansCount mutualCount viewerIsFollowing "
    f"following(first: 20) {{ {LIST} }} fans(first: 20) {{ {LIST} }} }} }}"
)


def environment() -> dict[str, str]:
    """The test's environment without inherited FOLLOWGRAPH_* variables, with the shared settings."""
    return clean_env(FOLLOWGRAPH_JWT_SECRET=SECRET, FOLLOWGRAPH_FOLLOW_RATE_LIMIT=RATE)


class Process:
    """One `followgraph serve` on a given Redis URL; its output goes to a log file."""

    def __init__(self, redis_url: str, data_dir: Path, port: int) -> None:
        self.redis_url = redis_url
        self.data_dir = data_dir
        self.port = port
        self.log_path = data_dir.with_suffix(".log")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "followgraph.cli", "serve", "--port", str(self.port)]
        args += ["--data-dir", str(self.data_dir), "--redis-url", self.redis_url]
        with self.log_path.open("wb") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=environment())

    def wait_ready(self, deadline: float) -> None:
        assert self.process is not None
        wait_ready(self.process, self.url, self.log, timeout=max(0.0, deadline - time.monotonic()))

    def stop(self) -> int | None:
        """Stop the process with SIGINT (killing it if it hangs); its exit code, None if never started."""
        if self.process is None:
            return None
        interrupt(self.process, timeout=30)
        return self.process.returncode


@dataclass
class Service:
    """Two server processes in front of one store."""

    kind: str
    redis_url: str
    first: Process
    second: Process
    flush: Callable[[], None]

    def token(self, user_id: str) -> str:
        return mint_token(Settings(jwt_secret=SECRET, data_dir=self.first.data_dir).auth_config(), user_id)


def _flusher(request: pytest.FixtureRequest, kind: str) -> tuple[str, Callable[[], None]]:
    """The URL of the store of `kind` and a way to empty it."""
    if kind == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")

        def flush() -> None:
            client = redis.Redis(unix_socket_path=str(server.socket_path))
            try:
                client.flushall()
            finally:
                client.close()

        return server.url, flush
    cluster: LocalCluster = request.getfixturevalue("redis_cluster")
    return cluster.url, cluster.flushall


@pytest.fixture(scope="module", params=["redis", "cluster"])
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """Two processes on the real Redis server, then on the real cluster; both must exit cleanly."""
    url, flush = _flusher(request, request.param)
    flush()
    directory = tmp_path_factory.mktemp(f"serve-{request.param}")
    port_a, port_b = free_ports(2)
    first, second = Process(url, directory / "a", port_a), Process(url, directory / "b", port_b)
    try:
        first.start()
        second.start()
        deadline = time.monotonic() + 30
        first.wait_ready(deadline)
        second.wait_ready(deadline)
        yield Service(request.param, url, first, second, flush)
    finally:
        codes = [first.stop(), second.stop()]
    assert codes == [0, 0], f"{first.log()}\n{second.log()}"
    for process in (first, second):
        assert "Traceback" not in process.log(), process.log()


@pytest.fixture
async def store(service: Service) -> AsyncIterator[FollowStore]:
    """A client of the service's store, emptied first."""
    service.flush()
    client = connect(service.redis_url, timeout=10.0)
    await warm_up(client)
    try:
        yield FollowStore(client)
    finally:
        await client.aclose()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


async def post(
    http: httpx.AsyncClient, service: Service, process: Process, query: str, user: str, user_id: str
) -> dict[str, Any]:
    """The `data` of a request to `process` as `user`, which must succeed without GraphQL errors."""
    response = await http.post(
        f"{process.url}/graphql",
        json={"query": query, "variables": {"id": user_id}},
        headers={"authorization": f"Bearer {service.token(user)}"},
    )
    body = response.json()
    assert response.status_code == 200, body
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def register(store: FollowStore, *user_ids: str) -> None:
    for user_id in user_ids:
        await store.upsert_user(user_id, name=f"User {user_id}")


async def following(store: FollowStore, user_id: str) -> set[str]:
    return set(cast("list[str]", await store.redis.zrange(store.keys.following(user_id), 0, -1)))


def edges(connection: dict[str, Any]) -> list[tuple[str, str]]:
    return [(edge["node"]["userId"], edge["relationship"]) for edge in connection["edges"]]


async def test_a_write_through_one_process_is_read_at_once_through_the_other(
    service: Service, store: FollowStore, http: httpx.AsyncClient
) -> None:
    await register(store, "alice", "bob")
    one, two = service.first, service.second

    followed = await post(http, service, one, FOLLOW, "alice", "bob")
    alice = (await post(http, service, two, USER, "alice", "alice"))["user"]
    bob = (await post(http, service, two, USER, "bob", "bob"))["user"]
    seen_by_alice = (await post(http, service, two, USER, "alice", "bob"))["user"]

    assert followed["follow"] == {"changed": True, "relationship": "FOLLOWING", "errors": []}
    assert (alice["followingCount"], alice["fansCount"], alice["following"]["totalCount"]) == (1, 0, 1)
    assert edges(alice["following"]) == [("bob", "FOLLOWING")]
    assert (bob["followingCount"], bob["fansCount"], bob["fans"]["totalCount"]) == (0, 1, 1)
    assert edges(bob["fans"]) == [("alice", "FOLLOWED_BY")]
    assert alice["following"]["edges"][0]["followedAt"] == bob["fans"]["edges"][0]["followedAt"]
    assert seen_by_alice["viewerIsFollowing"] is True

    unfollowed = await post(http, service, two, UNFOLLOW, "alice", "bob")
    alice = (await post(http, service, one, USER, "alice", "alice"))["user"]
    bob = (await post(http, service, one, USER, "bob", "bob"))["user"]
    seen_by_alice = (await post(http, service, one, USER, "alice", "bob"))["user"]

    assert unfollowed["unfollow"] == {"changed": True, "relationship": "NONE", "errors": []}
    assert (alice["followingCount"], alice["following"]["totalCount"], alice["following"]["edges"]) == (
        0,
        0,
        [],
    )
    assert (bob["fansCount"], bob["fans"]["totalCount"], bob["fans"]["edges"]) == (0, 0, [])
    assert seen_by_alice["viewerIsFollowing"] is False
    assert await following(store, "alice") == set()


def codes(payload: dict[str, Any]) -> list[str]:
    return [error["code"] for error in payload["errors"]]


async def assert_exactly_three_follows(
    service: Service, store: FollowStore, http: httpx.AsyncClient, viewer: str, allowed: set[str]
) -> None:
    """The store holds exactly the `allowed` follows of `viewer`, and both processes say so."""
    assert len(allowed) == 3
    assert await following(store, viewer) == allowed
    [counts] = await store.counts([viewer])
    assert counts.following == 3
    for process in (service.first, service.second):
        user = (await post(http, service, process, USER, viewer, viewer))["user"]
        assert user["followingCount"] == 3
        assert {node for node, _ in edges(user["following"])} == allowed


async def test_follows_alternating_between_the_processes_share_one_rate_limit(
    service: Service, store: FollowStore, http: httpx.AsyncClient
) -> None:
    targets = [f"t{i}" for i in range(6)]
    await register(store, "carol", *targets)
    processes = [service.first, service.second]

    results = [
        (await post(http, service, processes[i % 2], FOLLOW, "carol", target))["follow"]
        for i, target in enumerate(targets)
    ]

    assert [r["changed"] for r in results] == [True, True, True, False, False, False]
    assert [codes(r) for r in results] == [[], [], [], ["RATE_LIMITED"], ["RATE_LIMITED"], ["RATE_LIMITED"]]
    assert all("3 per 1 minute" in r["errors"][0]["message"] for r in results[3:])
    await assert_exactly_three_follows(service, store, http, "carol", set(targets[:3]))


async def test_a_concurrent_burst_through_both_processes_gets_only_what_is_left_of_the_limit(
    service: Service, store: FollowStore, http: httpx.AsyncClient
) -> None:
    targets = [f"t{i}" for i in range(13)]
    await register(store, "dave", *targets)
    processes = [service.first, service.second]

    first = (await post(http, service, service.second, FOLLOW, "dave", targets[0]))["follow"]
    burst = await asyncio.gather(
        *(post(http, service, processes[i % 2], FOLLOW, "dave", t) for i, t in enumerate(targets[1:]))
    )
    results = [first, *(data["follow"] for data in burst)]

    allowed = [t for t, r in zip(targets, results, strict=True) if r["changed"]]
    limited = [t for t, r in zip(targets, results, strict=True) if codes(r) == ["RATE_LIMITED"]]
    assert first == {"changed": True, "relationship": "FOLLOWING", "errors": []}
    assert len(allowed) == 3 and len(limited) == 10, results
    assert sorted(allowed + limited) == sorted(targets)
    assert all(r["errors"] == [] for r in results if r["changed"])
    await assert_exactly_three_follows(service, store, http, "dave", set(allowed))


async def test_a_follow_through_one_process_reaches_a_subscriber_on_the_other(
    service: Service, store: FollowStore, http: httpx.AsyncClient
) -> None:
    await register(store, "erin", "frank")
    # Subscribing after the newest event makes the test independent of when process two has
    # registered the subscriber: anything after it is replayed or pushed, once.
    newest = await EventLog(store).last_id()
    ws_url = service.second.url.replace("http://", "ws://") + "/graphql"

    async with listen(ws_url, service.token("frank"), after=newest) as frank:
        started = time.monotonic()
        await post(http, service, service.first, FOLLOW, "erin", "frank")
        event = await frank.next(timeout=10)
        first_seconds = time.monotonic() - started
        started = time.monotonic()
        await post(http, service, service.first, UNFOLLOW, "erin", "frank")
        second = await frank.next(timeout=10)
        second_seconds = time.monotonic() - started
        await frank.quiet(0.3)

    assert (event["kind"], event["actor"]["userId"], event["target"]["userId"]) == ("FOLLOW", "erin", "frank")
    assert (second["kind"], second["actor"]["userId"]) == ("UNFOLLOW", "erin")
    # On a cluster a slot's stream that appeared since the reader last looked (store.log's
    # DISCOVERY_SECONDS) is found late, once; after that the reader polls it every 50 ms.
    assert first_seconds < (1.0 if service.kind == "redis" else DISCOVERY_SECONDS + 2)
    assert second_seconds < 1.0
