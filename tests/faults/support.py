"""Helpers of the fault suite: the app over HTTP, response checks, a graph checker and TCP fault boxes."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from followgraph.schema.errors import MASKED_MESSAGE, UNAVAILABLE_MESSAGE
from followgraph.schema.scalars import serialize_datetime
from followgraph.server.settings import Settings
from followgraph.store import FollowStore, Keys
from followgraph.store.redis.lua import Client
from tests.conftest import TEST_SECRET

# Text that must never reach a client: exception names, socket paths, tracebacks, errno strings.
LEAKS = ("traceback", "redis", "errno", "error while", "error 1", "error 2", ".sock", 'file "', "exception")

KINDS = ("following", "fans", "mutual")


def fault_settings(tmp_path: Path, redis_url: str, **changes: Any) -> Settings:
    """The settings of the fault suite: short Redis timeout, bounded requests."""
    values: dict[str, Any] = {"redis_timeout": 0.3, "request_timeout": 5.0}
    values.update(changes)
    return Settings(data_dir=tmp_path / "data", jwt_secret=TEST_SECRET, redis_url=redis_url, **values)


def outcome(response: httpx.Response) -> str:
    """'ok' for a normal result, 'unavailable' when Redis was out of reach, 'masked' for a masked
    internal error; AssertionError otherwise.

    Either error is HTTP 200 with a JSON body whose every error is exactly its fixed message with its
    code (SERVICE_UNAVAILABLE or INTERNAL_SERVER_ERROR) and the request id of the response, and
    nothing of the cause.
    """
    text = response.text
    assert response.status_code == 200, f"HTTP {response.status_code}: {text[:500]!r}"
    assert response.headers.get("content-type", "").startswith("application/json"), response.headers
    lowered = text.lower()
    leaked = [leak for leak in LEAKS if leak in lowered]
    assert not leaked, f"internal detail {leaked} in a response: {text[:500]!r}"
    body = response.json()
    assert isinstance(body, dict) and set(body) <= {"data", "errors"}, text[:500]
    errors = body.get("errors")
    if not errors:
        assert body.get("data") is not None, text[:500]
        return "ok"
    request_id = response.headers["x-request-id"]
    kinds = set()
    for error in errors:
        assert set(error) <= {"message", "locations", "path", "extensions"}, error
        code = error["extensions"].get("code")
        assert code in _FIXED, error
        assert error["message"] == _FIXED[code][0], error
        assert error["extensions"] == {"code": code, "requestId": request_id}, error
        kinds.add(_FIXED[code][1])
    return "masked" if "masked" in kinds else "unavailable"


# The errors whose message is fixed, by code: the message, and what outcome() calls them.
_FIXED = {
    "SERVICE_UNAVAILABLE": (UNAVAILABLE_MESSAGE, "unavailable"),
    "INTERNAL_SERVER_ERROR": (MASKED_MESSAGE, "masked"),
}


def iso(epoch_ms: int) -> str:
    return serialize_datetime(epoch_ms)


# -- the whole graph, and its invariants ------------------------------------------------------------


@dataclass
class Graph:
    """Every list of every user: kind -> user -> member -> score (epoch ms)."""

    lists: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    profiles: set[str] = field(default_factory=set)
    other_keys: list[str] = field(default_factory=list)

    def following(self, user: str) -> dict[str, int]:
        return self.lists["following"][user]

    def fans(self, user: str) -> dict[str, int]:
        return self.lists["fans"][user]

    def mutual(self, user: str) -> dict[str, int]:
        return self.lists["mutual"][user]

    def edges(self) -> dict[tuple[str, str], int]:
        return {(a, b): at for a, out in self.lists["following"].items() for b, at in out.items()}


async def read_graph(
    client: Client, users: list[str], keys: Keys | None = None, *, off: Sequence[str] = ()
) -> Graph:
    """The lists and profiles of `users`, and any key that is none of theirs nor of the accounts
    that are `off` (their own keys, and the `kept_by` that names them: store/graph/lifecycle.py)."""
    k = keys or Keys()
    graph = Graph({kind: {} for kind in KINDS})
    known: set[str] = set()
    async with client.pipeline(transaction=False) as pipe:
        for user in users:
            for kind in KINDS:
                pipe.zrange(getattr(k, kind)(user), 0, -1, withscores=True)
            pipe.exists(k.profile(user))
            known.update({k.following(user), k.fans(user), k.mutual(user), k.profile(user)})
            known.add(k.search_doc(user))  # what the search index holds of the user
            if off:
                known.add(k.kept_by(user))
        replies: list[Any] = await pipe.execute()
    for i, user in enumerate(users):
        row = replies[i * 4 : i * 4 + 4]
        for kind, members in zip(KINDS, row[:3], strict=True):
            graph.lists[kind][user] = {member: int(score) for member, score in members}
        if row[3]:
            graph.profiles.add(user)
    if not k.sharded:
        known.update(k.logs())  # the change log
        known.add(k.replicated())  # what writes that wait for replicas set last
    # On a cluster, the change log's stream of each slot and what writes that wait for replicas set
    # last on each slot, under a hash tag of the slot's own (store/graph/keys.py, slot_tags).
    slotted = (f"{k.prefix}{{e",) if k.sharded else ()
    # The search index's mark, and the lease of the process building it (server/search.py), held
    # while a build runs.
    known.update({k.search_built(), k.search_lease()})
    # The follow rate limiter's own keys, and the search index's sets of name prefixes and of ids
    # (tests/store/graph/test_search.py checks what they hold).
    own = (
        k.rate_limit_prefix(),
        f"{k.prefix}{{s:",
        f"{k.prefix}{{i:",
        *(f"{k.prefix}{{u:{x}}}" for x in off),
        *slotted,
    )
    graph.other_keys = sorted(
        [key async for key in client.scan_iter(count=1000) if key not in known and not key.startswith(own)]
    )
    return graph


def violations(graph: Graph) -> list[str]:
    """Broken invariants: following/fans mirror each other with the same score; mutual is exactly the
    pairs that follow each other, scored with the later of the two follow times."""
    found: list[str] = []
    users = list(graph.lists["following"])
    for a in users:
        for b, at in graph.following(a).items():
            if b not in graph.lists["fans"]:
                found.append(f"{a} follows unknown user {b}")
            elif graph.fans(b).get(a) != at:
                found.append(f"{a}->{b} at {at} but fans:{b} has {a} at {graph.fans(b).get(a)}")
        for b, at in graph.fans(a).items():
            theirs = graph.lists["following"].get(b, {}).get(a)
            if theirs != at:
                found.append(f"fans:{a} has {b} at {at} but following:{b} has {a} at {theirs}")
        expected = {
            b: max(at, graph.following(b)[a])
            for b, at in graph.following(a).items()
            if a in graph.lists["following"].get(b, {})
        }
        if graph.mutual(a) != expected:
            found.append(f"mutual:{a} is {graph.mutual(a)}, expected {expected}")
    if graph.other_keys:
        found.append(f"unexpected keys: {graph.other_keys[:10]}")
    return found


async def check_graph(store: FollowStore, users: list[str], *, off: Sequence[str] = ()) -> Graph:
    """Read the graph of `users` (beside the accounts that are `off`), assert its invariants and
    that counts and page totals equal the list sizes."""
    graph = await read_graph(store.redis, users, store.keys, off=off)
    broken = violations(graph)
    assert not broken, "\n".join(broken[:20])
    counts = await store.counts(users)
    for user, count in zip(users, counts, strict=True):
        sizes = (len(graph.following(user)), len(graph.fans(user)), len(graph.mutual(user)))
        assert (count.following, count.fans, count.mutual) == sizes, (user, count, sizes)
    return graph


# -- TCP fault boxes ----------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of the call)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


class _TcpBox:
    """An asyncio TCP server on 127.0.0.1; close() closes every connection it holds and waits for
    their handlers."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await self.handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            await _close(writer)
            self._writers.discard(writer)
            self._tasks.discard(task)

    def track(self, writer: asyncio.StreamWriter) -> None:
        """Close `writer` (an outgoing connection of a handler) on close() too."""
        self._writers.add(writer)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for writer in list(self._writers):
            writer.close()  # the handler's reads see EOF and it returns
        tasks = list(self._tasks)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=5)
            assert not pending, f"{len(pending)} connection handlers did not finish"


class BlackHole(_TcpBox):
    """Accepts connections and reads them, but never answers: a Redis that hangs."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass


class ReplyDropper(_TcpBox):
    """A proxy to a Redis TCP port that forwards every byte, except once: the reply to the first
    request containing `trigger` is swallowed and that client's connection is closed instead, so the
    command has run in Redis but the client never hears about it."""

    def __init__(self, upstream_port: int, trigger: bytes) -> None:
        super().__init__()
        self.upstream_port = upstream_port
        self.trigger = trigger
        self.requests = 0  # requests carrying the trigger that went through
        self.dropped: list[bytes] = []  # replies swallowed
        self._armed = False

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self.track(up_writer)
        drop_here = asyncio.Event()

        async def requests() -> None:
            while data := await reader.read(65536):
                if self.trigger in data:
                    self.requests += 1
                    if not self._armed:
                        self._armed = True
                        drop_here.set()  # before forwarding: the reply cannot overtake it
                up_writer.write(data)
                await up_writer.drain()

        async def replies() -> None:
            while data := await up_reader.read(65536):
                if drop_here.is_set():
                    self.dropped.append(data)
                    return  # closes the client's connection without the reply
                writer.write(data)
                await writer.drain()

        pumps = [asyncio.create_task(requests()), asyncio.create_task(replies())]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            await _close(up_writer)
            self._writers.discard(up_writer)
