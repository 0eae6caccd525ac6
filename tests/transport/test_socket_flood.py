"""WebSocket floods against `followgraph serve` with a connection cap of 20 (#36).

Before, every upgrade was accepted whatever the cap (900 of 900 acknowledged with the cap at 300),
a socket that sent an empty connection_init stayed open for ever, and meanwhile /healthz answered
503 to everyone, so that a liveness probe restarted the process. Now an upgrade beyond the cap is
answered 503, /healthz and /readyz answer in the slots kept for them, and a socket without a token
is closed with 4401 after FOLLOWGRAPH_WS_ANONYMOUS_SECONDS, which frees its slot.

Every connection is a real socket on 127.0.0.1; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Subprotocol

from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.transport.auth import mint_token
from tests.conftest import TEST_SECRET
from tests.server.processes import ServeProcess, serve

CAP = 20
GRAPHQL_TRANSPORT_WS = Subprotocol("graphql-transport-ws")
# How much longer than a deadline a test waits for the server to act on it.
SLACK = 5.0


@contextmanager
def capped(redis_server: RedisServer, tmp_path: Path, *, grace: float) -> Iterator[ServeProcess]:
    """`followgraph serve` with at most CAP connections, sockets without a token kept `grace` s."""
    env = {
        "FOLLOWGRAPH_REDIS_URL": redis_server.url,
        "FOLLOWGRAPH_JWT_SECRET": TEST_SECRET,
        "FOLLOWGRAPH_LOG_LEVEL": "error",
        "FOLLOWGRAPH_DATABASE_URL": "off",
        "FOLLOWGRAPH_MAX_CONNECTIONS": str(CAP),
        "FOLLOWGRAPH_WS_ANONYMOUS_SECONDS": str(grace),
    }
    with serve(tmp_path, "--production", env=env) as server:
        yield server


async def open_socket(server: ServeProcess, token: str | None = None) -> ClientConnection | int:
    """A socket acknowledged after its connection_init (with `token`, or an empty payload as in
    the flood), or the HTTP status its upgrade was refused with."""
    try:
        socket = await connect(
            f"ws://127.0.0.1:{server.port}/graphql", subprotocols=[GRAPHQL_TRANSPORT_WS], open_timeout=SLACK
        )
    except InvalidStatus as exc:
        return exc.response.status_code
    payload = {} if token is None else {"Authorization": f"Bearer {token}"}
    await socket.send(orjson.dumps({"type": "connection_init", "payload": payload}).decode())
    async with asyncio.timeout(SLACK):
        acked = orjson.loads(await socket.recv())
    assert acked == {"type": "connection_ack"}, acked
    return socket


async def fill(server: ServeProcess, attempts: int) -> tuple[list[ClientConnection], list[int]]:
    """`attempts` sockets without a token opened one after another: those held and the refusals."""
    held: list[ClientConnection] = []
    refused: list[int] = []
    for _ in range(attempts):
        got = await open_socket(server)
        if isinstance(got, int):
            refused.append(got)
        else:
            held.append(got)
    return held, refused


async def status(server: ServeProcess, path: str) -> int:
    """The status of `GET path` on a connection of its own (0 when none came)."""
    try:
        async with asyncio.timeout(SLACK):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET %s HTTP/1.1\r\nhost: t\r\n\r\n" % path.encode())
            line = await reader.readline()
            writer.close()
    except (OSError, TimeoutError):
        return 0
    return int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0


async def closed(socket: ClientConnection, within: float) -> tuple[int | None, str | None]:
    """The code and reason the server closes `socket` with (TimeoutError if it does not)."""
    async with asyncio.timeout(within):
        try:
            while True:
                await socket.recv()
        except ConnectionClosed as exc:
            return (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd is not None else (None, None)


async def close_all(sockets: list[ClientConnection]) -> None:
    with contextlib.suppress(Exception):
        async with asyncio.timeout(SLACK):
            await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)


async def test_upgrades_beyond_the_cap_are_503_while_healthz_and_readyz_still_answer(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    flooded: list[ClientConnection | int] = []
    with capped(redis_server, tmp_path, grace=60) as server:
        held, refused = await fill(server, CAP + 5)
        try:
            # The flood goes on, all at once, with the probes and an API request in its midst.
            flood = asyncio.gather(*(open_socket(server) for _ in range(60)))
            healthz, readyz = await asyncio.gather(status(server, "/healthz"), status(server, "/readyz"))
            api = await status(server, "/graphql")
            flooded = await flood
        finally:
            await close_all(held + [s for s in flooded if not isinstance(s, int)])

    # uvicorn's count (the cap's own connection included) lets in one socket fewer than the cap.
    assert CAP - 1 <= len(held) <= CAP, f"{len(held)} sockets held with the cap at {CAP}"
    assert refused == [503] * (CAP + 5 - len(held))
    assert flooded == [503] * 60
    assert (healthz, readyz) == (200, 200)
    assert api == 503  # the cap holds for the API


async def test_sockets_without_a_token_are_closed_after_the_grace_and_free_their_slots(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    grace = 1.0
    token = mint_token(Settings(jwt_secret=TEST_SECRET).auth_config(), "alice")
    with capped(redis_server, tmp_path, grace=grace) as server:
        authenticated = await open_socket(server, token)
        assert not isinstance(authenticated, int), authenticated
        held, refused = await fill(server, CAP)
        started = time.monotonic()
        try:
            ended = await asyncio.gather(*(closed(s, grace + SLACK) for s in held))
            waited = time.monotonic() - started
            # The authenticated socket outlived the grace and still answers.
            await authenticated.send('{"type": "ping"}')
            async with asyncio.timeout(SLACK):
                pong = orjson.loads(await authenticated.recv())
            # The slots the closed sockets held take new connections.
            again = await open_socket(server)
            assert not isinstance(again, int), again
            await close_all([again])
        finally:
            await close_all([authenticated, *held])

    assert len(held) >= CAP - 2 and refused, (len(held), refused)
    codes = {code for code, _ in ended}
    reasons = {reason for _, reason in ended}
    assert codes == {4401}
    assert reasons == {
        "A token is needed to stay connected past 1 s: send Authorization in connection_init's payload."
    }
    assert waited < grace + 4, waited  # the grace, not the 10 s connection_init timeout
    assert pong == {"type": "pong"}
