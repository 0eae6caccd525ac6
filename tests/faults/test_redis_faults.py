"""The API against a Redis that restarts, stalls, loses a reply or is not there at all.

Every test starts its own Redis (tests/faults/conftest.py) and an app that connects to it through
settings.redis_url with redis_timeout=0.3 and request_timeout=5. What a client may see is a normal
result or the error that says Redis is out of reach (HTTP 200, SERVICE_UNAVAILABLE, a fixed message
asking to send it again, a request id); never a masked internal error; nothing may hang, and the
app must recover without a restart.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError

from followgraph.server.redis_server import RedisServer
from followgraph.store import FollowStore
from followgraph.store.graph import scripts
from tests.faults.conftest import StartRedis
from tests.faults.support import (
    BlackHole,
    ReplyDropper,
    check_graph,
    fault_settings,
    free_port,
    iso,
    outcome,
)
from tests.served import Served, serve

log = logging.getLogger(__name__)

USERS = [f"u{i}" for i in range(12)]

LISTS = """
query Lists($id: ID!) {
  user(userId: $id) {
    userId name followingCount fansCount mutualCount relationship
    following(first: 5) { totalCount edges { followedAt relationship node { userId name } } }
    fans(first: 5) { totalCount nodes { userId relationship viewerIsFollowing } }
  }
}
"""
FOLLOW = """
mutation Follow($id: ID!) {
  follow(input: {userId: $id}) {
    changed relationship errors { code message }
    user { userId fansCount mutualCount viewerFollowedAt isFollowingViewer }
    viewer { userId followingCount fansCount mutualCount }
  }
}
"""


def direct_client(server: RedisServer) -> aioredis.Redis:
    """A plain client on the server's socket (no retries): the test's own view of Redis."""
    return aioredis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)


async def register(server: RedisServer, users: list[str]) -> None:
    client = direct_client(server)
    try:
        store = FollowStore(client)
        for user in users:
            await store.upsert_user(user, name=f"User {user}")
    finally:
        await client.aclose()


# -- Redis restarted while requests are in flight -----------------------------------------------------


@dataclass
class Call:
    phase: str  # before | down | after: the state of Redis when the request started
    kind: str  # query | follow
    viewer: str
    other: str
    seconds: float
    outcome: str
    body: dict[str, Any]


@dataclass
class Traffic:
    phase: str = "before"
    calls: list[Call] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


async def client_loop(http: Served, traffic: Traffic, done: asyncio.Event, rng: random.Random) -> None:
    """Queries and follows, one after the other, until `done`; every response is classified."""
    while not done.is_set():
        viewer, other = rng.sample(USERS, 2)
        kind = rng.choice(["query", "follow"])
        phase = traffic.phase
        started = time.monotonic()
        try:
            if kind == "query":
                response = await http.post(LISTS, {"id": other}, as_user=viewer)
            else:
                response = await http.post(FOLLOW, {"id": other}, as_user=viewer)
            result = outcome(response)
        except Exception as exc:  # an unmasked app exception, a leak, a 5xx: all failures
            traffic.failures.append(f"{phase} {kind} {viewer}->{other}: {exc!r}")
            return
        seconds = time.monotonic() - started
        if phase == "before" and traffic.phase != "before":
            phase = "down"  # it was still in flight when Redis went away: it may fail like those
        traffic.calls.append(Call(phase, kind, viewer, other, seconds, result, response.json()))
        await asyncio.sleep(0.02)


async def test_restart_while_requests_are_in_flight(start_redis: StartRedis, tmp_path: Path) -> None:
    server = start_redis(appendonly=True)
    await register(server, USERS)
    settings = fault_settings(tmp_path, server.url)
    traffic = Traffic()
    rng = random.Random(7)
    async with serve(settings) as http:
        async with asyncio.timeout(45):
            done = asyncio.Event()
            loops = [asyncio.create_task(client_loop(http, traffic, done, rng)) for _ in range(8)]
            try:
                await asyncio.sleep(0.4)
                traffic.phase = "down"
                await asyncio.to_thread(server.stop)
                await asyncio.sleep(1.0)  # longer than the client's retries: some requests must fail
                await asyncio.to_thread(server.start)
                traffic.phase = "after"
                await asyncio.sleep(0.6)
            finally:
                done.set()
                await asyncio.gather(*loops)

            assert not traffic.failures, "\n".join(traffic.failures[:10])
            by_phase: dict[tuple[str, str], int] = {}
            for call in traffic.calls:
                by_phase[call.phase, call.outcome] = by_phase.get((call.phase, call.outcome), 0) + 1
            slowest = max(call.seconds for call in traffic.calls)
            log.info("restart under load: %s; slowest response %.2f s", sorted(by_phase.items()), slowest)
            assert by_phase.get(("before", "ok"), 0) > 0, by_phase
            assert not {outcome for _, outcome in by_phase} - {"ok", "unavailable"}, by_phase
            assert ("before", "unavailable") not in by_phase, by_phase
            assert by_phase.get(("down", "unavailable"), 0) > 0, by_phase  # the fault was seen
            assert by_phase.get(("after", "ok"), 0) > 0, by_phase
            assert ("after", "unavailable") not in by_phase, by_phase  # recovered without an app restart
            assert slowest < settings.request_timeout

            # Afterwards, one by one: reads, writes and readiness work on the same app.
            assert (await http.client.get("/readyz")).status_code == 200
            assert outcome(await http.post(LISTS, {"id": "u1"}, as_user="u0")) == "ok"
            assert outcome(await http.post(FOLLOW, {"id": "u11"}, as_user="u10")) == "ok"

            # Every follow the API acknowledged survived the (clean) restart; the graph is consistent.
            graph = await check_graph(http.store, USERS)
            acknowledged = [
                (c.viewer, c.other)
                for c in traffic.calls
                if c.kind == "follow" and c.outcome == "ok" and not c.body["data"]["follow"]["errors"]
            ]
            assert acknowledged
            missing = [edge for edge in acknowledged if edge not in graph.edges()]
            assert not missing, missing


# -- CLIENT PAUSE: a Redis that accepts commands but does not answer for a while ------------------------


async def pause_redis(server: RedisServer, milliseconds: int) -> None:
    admin = direct_client(server)
    try:
        assert await admin.client_pause(milliseconds, all=True)  # CLIENT PAUSE <ms> ALL
    finally:
        await admin.aclose()


async def timed(make: Any) -> tuple[float, Any]:
    started = time.monotonic()
    result = await make
    return time.monotonic() - started, result


async def test_short_client_pause_is_bridged_by_retries(start_redis: StartRedis, tmp_path: Path) -> None:
    """A 0.2 s stall is shorter than redis_timeout (0.3 s): requests wait it out and succeed;
    none fails, none takes much longer than the stall."""
    server = start_redis()
    await register(server, USERS[:2])
    async with serve(fault_settings(tmp_path, server.url)) as http:
        assert outcome(await http.post(LISTS, {"id": "u1"}, as_user="u0")) == "ok"  # warm: scripts, pool
        async with asyncio.timeout(20):
            await pause_redis(server, 200)
            (q_s, query), (r_s, ready), (f_s, follow) = await asyncio.gather(
                timed(http.post(LISTS, {"id": "u1"}, as_user="u0")),
                timed(http.client.get("/readyz")),
                timed(http.post(FOLLOW, {"id": "u1"}, as_user="u0")),
            )
        assert outcome(query) == "ok"
        assert outcome(follow) == "ok"
        assert follow.json()["data"]["follow"]["changed"] is True
        assert ready.status_code == 200
        for seconds in (q_s, r_s, f_s):
            assert 0.15 < seconds < 1.5  # it did wait for the stall, and not much longer
        graph = await check_graph(http.store, USERS[:2])
        assert list(graph.edges()) == [("u0", "u1")]


async def test_client_pause_longer_than_the_retries(start_redis: StartRedis, tmp_path: Path) -> None:
    """A 3 s stall outlasts the client's retry budget (redis_timeout 0.3 s, one retry, each
    attempt possibly reconnecting: about 4 x 0.3 s at most), so requests give SERVICE_UNAVAILABLE
    well within 3 s and
    /readyz answers 503; after the stall everything works and nothing was applied twice."""
    server = start_redis()
    await register(server, USERS[:3])
    async with serve(fault_settings(tmp_path, server.url)) as http:
        assert outcome(await http.post(LISTS, {"id": "u1"}, as_user="u0")) == "ok"
        pause_ends = time.monotonic() + 3.0
        async with asyncio.timeout(20):
            await pause_redis(server, 3000)
            (q_s, query), (r_s, ready), (f_s, follow) = await asyncio.gather(
                timed(http.post(LISTS, {"id": "u1"}, as_user="u0")),
                timed(http.client.get("/readyz")),
                timed(http.post(FOLLOW, {"id": "u1"}, as_user="u0")),
            )
            query_outcome, follow_outcome = outcome(query), outcome(follow)  # never a leak or a 5xx
            await asyncio.sleep(max(0.0, pause_ends - time.monotonic()) + 0.2)

            # After the stall: everything works on the same app, and the follow sent during the stall
            # is there at most once (its retries may have reached Redis after the stall).
            assert (await http.client.get("/readyz")).status_code == 200
            assert outcome(await http.post(LISTS, {"id": "u1"}, as_user="u0")) == "ok"
            after = await http.post(FOLLOW, {"id": "u2"}, as_user="u0")
            assert outcome(after) == "ok"
            assert after.json()["data"]["follow"]["changed"] is True
            graph = await check_graph(http.store, USERS[:3])
            assert set(graph.edges()) - {("u0", "u1")} == {("u0", "u2")}

        assert ready.status_code == 503, (r_s, ready.text)
        assert r_s < 3.0
        observed = (
            f"during a 3 s CLIENT PAUSE: query {query_outcome} after {q_s:.2f} s, "
            f"follow {follow_outcome} after {f_s:.2f} s, /readyz {ready.status_code} after {r_s:.2f} s"
        )
        assert q_s < 3.0 and f_s < 3.0, observed
        assert query_outcome == follow_outcome == "unavailable", observed


# -- a follow whose reply is lost -------------------------------------------------------------------


class LoseFirstReply:
    """Patches redis-py's connection so that the first reply to EVALSHA `sha` (sent alone, or first in
    a pipeline, as a write with the reads after it is) is read off the socket (so the script did
    run) and then thrown away with a ConnectionError, as a dropped connection would."""

    def __init__(self, sha: str) -> None:
        self.sha = sha
        self.sent = 0
        self.lost: list[Any] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        send_packed = AbstractConnection.send_packed_command
        read_response = AbstractConnection.read_response
        armed: set[int] = set()
        evalsha = b"EVALSHA\r\n$40\r\n" + self.sha.encode()

        async def patched_send(conn: AbstractConnection, command: Any, *args: Any, **kwargs: Any) -> None:
            packed = command if isinstance(command, bytes | str) else b"".join(command)
            if evalsha in (packed.encode() if isinstance(packed, str) else packed):
                self.sent += 1
                if not self.lost:
                    armed.add(id(conn))
            await send_packed(conn, command, *args, **kwargs)

        async def patched_read(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            try:
                reply = await read_response(conn, *args, **kwargs)
            except BaseException:
                armed.discard(id(conn))
                raise
            if id(conn) in armed:
                armed.discard(id(conn))
                self.lost.append(reply)
                raise ConnectionError("injected: the connection dropped before the reply arrived")
            return reply

        monkeypatch.setattr(AbstractConnection, "send_packed_command", patched_send)
        monkeypatch.setattr(AbstractConnection, "read_response", patched_read)


FOLLOW_REPLY = re.compile(rb"^\*5\r\n:0\r\n:1\r\n\$\d+\r\n(\d+)\r\n")


@pytest.mark.parametrize("fault", ["lost-read", "tcp-proxy"])
async def test_follow_whose_reply_is_lost_is_applied_once(
    fault: str, start_redis: StartRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redis-py re-sends the FOLLOW script after the lost reply; the script is idempotent, so the
    edge is made once, with the time of the first run. The API answers success with changed=false:
    the retry found the edge the lost attempt had made."""
    server = start_redis(port=free_port() if fault == "tcp-proxy" else 0)
    admin = direct_client(server)
    proxy: ReplyDropper | None = None
    try:
        store = FollowStore(admin)
        for user in ("alice", "bob"):
            await store.upsert_user(user, name=user.title())
        await scripts.FOLLOW_SCRIPT.load(admin)  # no NOSCRIPT round: the first EVALSHA runs the script
        await store.follow(follower="bob", followee="alice")
        bob_followed = int(await admin.zscore(store.keys.following("bob"), "alice") or 0)
        await asyncio.sleep(0.005)  # so a second run of the script would get a different time

        url = server.url
        patch = LoseFirstReply(scripts.FOLLOW_SCRIPT.sha)
        if fault == "tcp-proxy":
            proxy = ReplyDropper(server.port, scripts.FOLLOW_SCRIPT.sha.encode())
            await proxy.start()
            url = f"redis://127.0.0.1:{proxy.port}"
        else:
            patch.install(monkeypatch)

        async with serve(fault_settings(tmp_path, url)) as http, asyncio.timeout(20):
            response = await http.post(FOLLOW, {"id": "bob"}, as_user="alice")
            monkeypatch.undo()
            assert outcome(response) == "ok", response.text
            payload = response.json()["data"]["follow"]

        # The fault happened once, after the script had run, and the script was sent again.
        if proxy is not None:
            assert proxy.requests == 2 and len(proxy.dropped) == 1, (proxy.requests, proxy.dropped)
            match = FOLLOW_REPLY.match(proxy.dropped[0])
            assert match, proxy.dropped[0]
            first_run = int(match[1])
        else:
            assert patch.sent == 2 and len(patch.lost) == 1, (patch.sent, patch.lost)
            status, changed, at, back, pending = patch.lost[0]
            assert (status, changed, int(back), pending) == (0, 1, bob_followed, 0)
            first_run = int(at)

        assert payload == {
            "changed": False,  # the retry's answer: the lost first run had made the edge
            "relationship": "MUTUAL",
            "errors": [],
            "user": {
                "userId": "bob",
                "fansCount": 1,
                "mutualCount": 1,
                "viewerFollowedAt": iso(first_run),
                "isFollowingViewer": True,
            },
            "viewer": {"userId": "alice", "followingCount": 1, "fansCount": 1, "mutualCount": 1},
        }
        graph = await check_graph(store, ["alice", "bob"])
        assert graph.following("alice") == {"bob": first_run}  # one edge, the first run's time
        assert graph.fans("bob") == {"alice": first_run}
        assert graph.following("bob") == {"alice": bob_followed}
        assert graph.fans("alice") == {"bob": bob_followed}
        assert graph.mutual("alice") == {"bob": first_run}  # mutual since the later follow
        assert graph.mutual("bob") == {"alice": first_run}
    finally:
        if proxy is not None:
            await proxy.close()
        await admin.aclose()


# -- no Redis at all when the app starts -----------------------------------------------------------------


@pytest.mark.parametrize("nothing", ["missing-unix-socket", "refused-tcp-port", "accepts-never-answers"])
async def test_no_redis_at_start(nothing: str, start_redis: StartRedis, tmp_path: Path) -> None:
    """The app starts without Redis, answers SERVICE_UNAVAILABLE and 503 readiness, and works as soon as a
    Redis appears at its URL, without a restart."""
    hole: BlackHole | None = None
    port = 0
    if nothing == "missing-unix-socket":
        directory = tmp_path / "later"
        url = RedisServer(directory).url  # the socket the server started below will open
    else:
        port = free_port()
        url = f"redis://127.0.0.1:{port}"
        if nothing == "accepts-never-answers":
            hole = BlackHole()
            await hole.start(port)
    try:
        async with serve(fault_settings(tmp_path, url)) as http, asyncio.timeout(30):
            assert (await http.client.get("/healthz")).status_code == 200
            for _ in range(2):
                (q_s, query), (f_s, follow), (r_s, ready) = await asyncio.gather(
                    timed(http.post(LISTS, {"id": "u1"}, as_user="u0")),
                    timed(http.post(FOLLOW, {"id": "u1"}, as_user="u0")),
                    timed(http.client.get("/readyz")),
                )
                assert outcome(query) == "unavailable", query.text
                assert outcome(follow) == "unavailable", follow.text
                assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
                assert max(q_s, f_s, r_s) < 3.0, (q_s, f_s, r_s)

            if hole is not None:
                await hole.close()
                hole = None
            server = start_redis("later", port=port)
            await register(server, ["u0", "u1"])
            assert (await http.client.get("/readyz")).status_code == 200
            assert outcome(await http.post(FOLLOW, {"id": "u1"}, as_user="u0")) == "ok"
            query = await http.post(LISTS, {"id": "u1"}, as_user="u0")
            assert outcome(query) == "ok"
            assert query.json()["data"]["user"]["relationship"] == "FOLLOWING"
    finally:
        if hole is not None:
            await hole.close()
