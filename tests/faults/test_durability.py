"""Acknowledged writes survive a crash: SIGKILL the embedded Redis (AOF, appendfsync=always) while
clients are writing, restart it on the same directory, and compare with what was acknowledged.

Each directed edge A->B is owned by one writer task, so the operations on an edge are sequential
and "the last acknowledged operation on the edge" is well defined; the tasks still race on the same
users' keys (fans, mutual), and A->B and B->A are often written by different tasks at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError, TimeoutError

from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer
from followgraph.store import FollowResult, FollowStore
from followgraph.store.log.stream import EventLog
from tests.faults.conftest import StartRedis
from tests.faults.support import Graph, check_graph, fault_settings, outcome
from tests.served import Served, serve
from tests.store.projection import project

log = logging.getLogger(__name__)

USERS = [f"d{i:02}" for i in range(30)]
STORE_WRITERS = 6
API_WRITERS = 2
CYCLES = 3
Edge = tuple[str, str]  # (follower, followee)

FIELDS = {"follow": "follow", "unfollow": "unfollow", "remove_fan": "removeFan"}
MUTATIONS = {
    kind: f"mutation($id: ID!) {{ {name}(input: {{userId: $id}}) {{ changed errors {{ code }} }} }}"
    for kind, name in FIELDS.items()
}

USER_LISTS = """
query Lists($id: ID!) {
  user(userId: $id) {
    followingCount fansCount mutualCount
    following(first: 100) { totalCount edges { followedAt node { userId } } }
    fans(first: 100) { totalCount }
    mutuals(first: 100) { totalCount }
  }
}
"""


@dataclass
class EdgeState:
    """What the acknowledged operations say about one edge: present or not, and the range its
    follow time must lie in (exact after a check, [start, ack] after an acknowledged new follow)."""

    present: bool = False
    low: float = 0.0
    high: float = math.inf
    in_flight: bool = False  # an operation on it was unanswered at the kill: either state is allowed


@dataclass
class Cycle:
    edges: dict[Edge, EdgeState]
    killed_at: float = math.inf  # monotonic
    acknowledged: int = 0
    in_flight: int = 0
    after_kill: int = 0
    mismatches: list[str] = field(default_factory=list)


Act = Callable[[str, Edge], Awaitable[bool | None]]  # changed, or None when the outcome is unknown


def store_act(store: FollowStore) -> Act:
    async def act(kind: str, edge: Edge) -> bool | None:
        follower, followee = edge
        result: FollowResult
        try:
            if kind == "follow":
                result = await store.follow(follower=follower, followee=followee)
            elif kind == "unfollow":
                result = await store.unfollow(follower=follower, followee=followee)
            else:
                result = await store.remove_fan(user=followee, fan=follower)
        except (ConnectionError, TimeoutError):
            return None
        return result.changed

    return act


def api_act(http: Served) -> Act:
    async def act(kind: str, edge: Edge) -> bool | None:
        follower, followee = edge
        # removeFan is done by the followee: "make this fan stop following me".
        viewer, other = (followee, follower) if kind == "remove_fan" else edge
        response = await http.post(MUTATIONS[kind], {"id": other}, as_user=viewer)
        if outcome(response) != "ok":
            return None
        payload = response.json()["data"][FIELDS[kind]]
        assert payload["errors"] == [], payload
        return bool(payload["changed"])

    return act


async def writer(act: Act, edges: list[Edge], cycle: Cycle, rng: random.Random) -> None:
    """Random operations on its own edges until one gets no answer (Redis was killed)."""
    while True:
        edge = rng.choice(edges)
        kind = rng.choices(["follow", "unfollow", "remove_fan"], [2, 1, 1])[0]
        state = cycle.edges[edge]
        started_mono, started = time.monotonic(), time.time() * 1000
        changed = await act(kind, edge)
        if changed is None:
            if started_mono > cycle.killed_at:
                cycle.after_kill += 1  # sent to a dead server: must not have been applied
            else:
                cycle.in_flight += 1
                state.in_flight = True
            return
        acked = time.time() * 1000
        cycle.acknowledged += 1
        expected = not state.present if kind == "follow" else state.present
        if changed != expected:
            cycle.mismatches.append(f"{kind} {edge}: changed={changed}, state was present={state.present}")
        if kind == "follow":
            if changed or not state.present:
                state.low, state.high = math.floor(started), acked
            state.present = True
        else:
            state.present = False
        await asyncio.sleep(0)


def compare(graph: Graph, cycle: Cycle) -> list[str]:
    """Edges whose state after the restart is not what the acknowledged operations say."""
    actual = graph.edges()
    wrong = []
    for edge, state in cycle.edges.items():
        if state.in_flight:
            continue
        at = actual.get(edge)
        if not state.present and at is not None:
            wrong.append(f"{edge}: present at {at}, but the last acknowledged operation removed it")
        elif state.present and at is None:
            wrong.append(f"{edge}: lost (acknowledged follow, time in [{state.low}, {state.high}])")
        elif state.present and at is not None and not state.low <= at <= state.high:
            wrong.append(f"{edge}: follow time {at} outside [{state.low}, {state.high}]")
    return wrong


async def check_through_api(http: Served, graph: Graph, users: list[str]) -> None:
    """The app (same process, same client, across the crash) serves the recovered graph."""
    for user in users:
        response = await http.post(USER_LISTS, {"id": user})
        assert outcome(response) == "ok", response.text
        data = response.json()["data"]["user"]
        sizes = [len(graph.following(user)), len(graph.fans(user)), len(graph.mutual(user))]
        assert [data["followingCount"], data["fansCount"], data["mutualCount"]] == sizes
        totals = [data["following"]["totalCount"], data["fans"]["totalCount"], data["mutuals"]["totalCount"]]
        assert totals == sizes
        listed = {edge["node"]["userId"] for edge in data["following"]["edges"]}
        assert listed == set(graph.following(user))


async def read_checked(server: RedisServer) -> Graph:
    client = aioredis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
    try:
        graph = await check_graph(FollowStore(client), USERS)
    finally:
        await client.aclose()
    assert graph.profiles == set(USERS), "registered users were lost"
    return graph


@pytest.mark.slow
async def test_acknowledged_writes_survive_sigkill(start_redis: StartRedis, tmp_path: Path) -> None:
    server = start_redis(appendonly=True, appendfsync="always")
    rng = random.Random(20240611)
    store_client = connect(server.url, timeout=1.0)
    try:
        store = FollowStore(store_client)
        for user in USERS:
            await store.upsert_user(user, name=f"User {user}")
        all_edges = [(a, b) for a in USERS for b in USERS if a != b]
        rng.shuffle(all_edges)
        writers = STORE_WRITERS + API_WRITERS
        owned = [all_edges[i::writers] for i in range(writers)]
        states = {edge: EdgeState() for edge in all_edges}
        settings = fault_settings(tmp_path, server.url, redis_timeout=1.0, follow_rate_limit="off")
        async with serve(settings) as http:
            acts = [store_act(store)] * STORE_WRITERS + [api_act(http)] * API_WRITERS
            for number in range(1, CYCLES + 1):
                cycle = Cycle(states)
                async with asyncio.timeout(30):
                    async with asyncio.TaskGroup() as group:
                        for act, edges in zip(acts, owned, strict=True):
                            group.create_task(writer(act, edges, cycle, random.Random(rng.random())))
                        await asyncio.sleep(rng.uniform(0.5, 0.9))
                        # Enough acknowledged writes to be worth checking, however slow the disk's
                        # fsync is just now (appendfsync always): on a busy machine 0.5 s gave 52.
                        while cycle.acknowledged <= 100:
                            await asyncio.sleep(0.01)
                        # SIGKILL from a thread, so the writers keep sending while Redis dies.
                        await asyncio.to_thread(server.kill)
                        cycle.killed_at = time.monotonic()
                server.start()
                graph = await read_checked(server)
                log.info(
                    "cycle %d: %d acknowledged, %d in flight at the kill, %d refused after it, %d edges",
                    number,
                    cycle.acknowledged,
                    cycle.in_flight,
                    cycle.after_kill,
                    len(graph.edges()),
                )
                # Every writer was still writing at the kill: each stopped on an unanswered operation.
                assert cycle.in_flight + cycle.after_kill == len(acts), (cycle.in_flight, cycle.after_kill)
                assert cycle.acknowledged > 100, cycle.acknowledged
                assert not cycle.mismatches, "\n".join(cycle.mismatches[:20])
                wrong = compare(graph, cycle)
                assert not wrong, f"cycle {number}:\n" + "\n".join(wrong[:20])
                # Every change that reached the AOF reached it with its event: the log folds into
                # the recovered graph exactly, times included.
                told = project(await EventLog(store).read(count=1_000_000))
                assert told.follows == graph.edges(), f"cycle {number}: the log and the graph differ"
                await check_through_api(http, graph, rng.sample(USERS, 3))
                # The next cycle starts from the recovered state, exactly.
                recovered = graph.edges()
                for edge, state in states.items():
                    at = recovered.get(edge)
                    state.present, state.in_flight = at is not None, False
                    state.low = state.high = math.inf if at is None else at
    finally:
        await store_client.aclose()
