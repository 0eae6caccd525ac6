from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from followgraph.server.logs import configure_logging, request_id


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
