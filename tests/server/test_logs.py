from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from followgraph.server.logs import AccessLog, configure_logging, request_id


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    stream = io.StringIO()
    configure_logging("info")
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    yield stream
    root.handlers[:] = saved_handlers
    root.setLevel(saved_level)
    logging.getLogger("uvicorn.access").disabled = False


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_log_lines_are_json_with_the_current_request_id(captured: io.StringIO) -> None:
    logging.getLogger("followgraph.test").info("outside")
    token = request_id.set("req-1")
    try:
        logging.getLogger("followgraph.test").warning("inside %d", 7)
    finally:
        request_id.reset(token)
    outside, inside = lines(captured)
    assert outside["message"] == "outside" and "request_id" not in outside
    assert inside["message"] == "inside 7"
    assert inside["request_id"] == "req-1"
    assert inside["level"] == "WARNING" and inside["logger"] == "followgraph.test"


def test_uvicorn_colour_copies_are_dropped(captured: io.StringIO) -> None:
    logging.getLogger("uvicorn.error").info("Started", extra={"color_message": "\x1b[36mStarted\x1b[0m"})
    (line,) = lines(captured)
    assert line["message"] == "Started" and "color_message" not in line


async def test_access_lines_carry_the_fields_of_every_line_and_come_out_in_order(
    captured: io.StringIO,
) -> None:
    root = logging.getLogger()
    root.handlers[:] = root.handlers[:1]  # as in `serve`: ours alone (pytest adds its own)
    access = AccessLog("followgraph.http")
    for n in range(3):
        access(f"POST /graphql 200 ok {n}.0ms", request_id=f"req-{n}", operation="Fans")
    assert captured.getvalue() == ""  # written at the end of the loop's turn
    await asyncio.sleep(0)
    written = lines(captured)
    assert [line["message"] for line in written] == [f"POST /graphql 200 ok {n}.0ms" for n in range(3)]
    first = written[0]
    assert first.keys() == {"time", "level", "logger", "message", "request_id", "operation"}
    assert (first["level"], first["logger"], first["request_id"], first["operation"]) == (
        "INFO",
        "followgraph.http",
        "req-0",
        "Fans",
    )
    logging.getLogger("followgraph.test").info("plain")
    (plain,) = lines(captured)[3:]
    assert str(plain["time"])[:13] == str(first["time"])[:13]  # the same clock and format


def test_access_lines_follow_the_level_and_an_application_s_own_logging(
    captured: io.StringIO, caplog: pytest.LogCaptureFixture
) -> None:
    access = AccessLog("followgraph.http")
    logging.getLogger().setLevel("WARNING")
    access("GET /graphql 200 ok 1.0ms", request_id="r", operation="anonymous")
    assert captured.getvalue() == ""
    logging.getLogger().setLevel("INFO")
    with caplog.at_level(logging.INFO):  # pytest's handler beside ours: through the logging module
        access("GET /graphql 200 ok 2.0ms", request_id="r2", operation="anonymous")
    [record] = [r for r in caplog.records if r.name == "followgraph.http"]
    assert record.getMessage() == "GET /graphql 200 ok 2.0ms"
    assert record.__dict__["request_id"] == "r2"
