"""viewerEvents over a real WebSocket when Redis is gone: the subscriber gets the error that an HTTP
client would (SERVICE_UNAVAILABLE, its fixed message and a request id that names the log line),
never the client library's message with the socket's path (#36)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from followgraph.schema.errors import UNAVAILABLE_MESSAGE
from tests.faults.conftest import StartRedis
from tests.faults.support import LEAKS, fault_settings
from tests.live import serve_live
from tests.subscriber import raw


async def test_a_subscription_while_redis_is_down_gets_service_unavailable_with_a_request_id(
    start_redis: StartRedis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = start_redis()
    async with serve_live(fault_settings(tmp_path, server.url, database_url="off")) as live:
        await live.register("alice")
        server.stop()
        async with raw(live.ws_url) as socket:
            await socket.init(live.token("alice"))
            assert (await socket.receive())["type"] == "connection_ack"
            await socket.subscribe("1")
            answer = await socket.receive(timeout=15)
            ended = await socket.receive()

    assert answer["id"] == "1" and answer["type"] in ("next", "error"), answer
    errors = answer["payload"] if answer["type"] == "error" else answer["payload"]["errors"]
    leaked = [leak for leak in LEAKS if leak in str(answer).lower()]
    assert not leaked, f"internal detail {leaked} in {answer}"
    [error] = errors
    assert error["message"] == UNAVAILABLE_MESSAGE
    assert error["extensions"]["code"] == "SERVICE_UNAVAILABLE"
    request_id = error["extensions"]["requestId"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id), request_id
    assert ended == {"id": "1", "type": "complete"}
    logged = [r for r in caplog.records if getattr(r, "request_id", None) == request_id]
    assert logged and logged[0].levelno == logging.WARNING
