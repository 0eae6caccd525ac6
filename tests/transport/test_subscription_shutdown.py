"""SIGTERM to a real `followgraph serve` closes its open WebSockets with 1001 (going away)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.transport.auth import mint_token
from tests.server.processes import serve
from tests.subscriber import raw

SECRET = "a-secret-for-the-shutdown-test-long-enough!"


async def test_sigterm_closes_sockets_with_1001_and_the_process_exits_without_error(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    token = mint_token(Settings(jwt_secret=SECRET).auth_config(), "alice")
    env = {"FOLLOWGRAPH_JWT_SECRET": SECRET, "FOLLOWGRAPH_DATABASE_URL": "off"}
    with serve(tmp_path, "--redis-url", redis_server.url, env=env) as served:
        async with raw(served.url.replace("http://", "ws://") + "/graphql") as socket:
            await socket.init(token)
            assert (await socket.receive())["type"] == "connection_ack"
            await socket.subscribe("1")
            await asyncio.sleep(0.2)
            served.process.send_signal(signal.SIGTERM)
            code, reason = await socket.closed(timeout=10)
        returncode = await asyncio.to_thread(served.process.wait, 20)

    assert (code, reason) == (1001, "The server is shutting down.")
    assert returncode == 128 + signal.SIGTERM, served.log()  # the CLI exits as the signal says
    assert "Traceback" not in served.log()
