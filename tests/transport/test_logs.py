from __future__ import annotations

import asyncio
import io
import json
import logging
import math
import re
from collections.abc import Iterator

import pytest

from followgraph.transport.logs import (
    _LINE_BYTES,
    FLUSH_BYTES,
    FLUSH_SECONDS,
    AccessLog,
    configure_logging,
    request_id,
)
from tests.served import Served


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


def compact(line: str) -> str:
    return json.dumps(json.loads(line), separators=(",", ":"))


async def test_every_line_is_written_with_the_same_separators(captured: io.StringIO) -> None:
    root = logging.getLogger()
    root.handlers[:] = root.handlers[:1]
    logging.getLogger("followgraph.test").info("before", extra={"lag": [1, 2]})
    AccessLog("followgraph.http")("GET", "/graphql", 200, "ok", 0.001, request_id="r", operation_name="A")
    root.handlers[0].flush()
    token = request_id.set("req-1")
    try:
        logging.getLogger("followgraph.test").warning("inside")
    finally:
        request_id.reset(token)
    written = captured.getvalue().splitlines()
    assert [json.loads(line)["message"] for line in written] == [
        "before",
        "GET /graphql 200 ok 1.0ms",
        "inside",
    ]
    assert written == [compact(line) for line in written]


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
        access("POST", "/graphql", 200, "ok", n / 1000, request_id=f"req-{n}", operation_name="Fans")
    await asyncio.sleep(0)
    assert captured.getvalue() == ""  # held for the lines that follow
    await asyncio.sleep(FLUSH_SECONDS * 2)
    written = lines(captured)
    assert [line["message"] for line in written] == [f"POST /graphql 200 ok {n}.0ms" for n in range(3)]
    first = written[0]
    assert first.keys() == {"time", "level", "logger", "message", "request_id", "operation_name"}
    assert (first["level"], first["logger"], first["request_id"], first["operation_name"]) == (
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
    access("GET", "/graphql", 200, "ok", 0.001, request_id="r", operation_name=None)
    assert captured.getvalue() == ""
    logging.getLogger().setLevel("INFO")
    with caplog.at_level(logging.INFO):  # pytest's handler beside ours: through the logging module
        access("GET", "/graphql", 200, "ok", 0.002, request_id="r2", operation_name=None)
    [record] = [r for r in caplog.records if r.name == "followgraph.http"]
    assert record.getMessage() == "GET /graphql 200 ok 2.0ms"
    assert record.__dict__["request_id"] == "r2"


async def test_held_access_lines_go_out_before_any_other_line_and_at_exit(captured: io.StringIO) -> None:
    root = logging.getLogger()
    root.handlers[:] = root.handlers[:1]
    access = AccessLog("followgraph.http")
    access("POST", "/graphql", 200, "ok", 0.001, request_id="a", operation_name=None)
    logging.getLogger("followgraph.test").warning("after the request")
    assert [line["message"] for line in lines(captured)] == [
        "POST /graphql 200 ok 1.0ms",
        "after the request",
    ]
    access("POST", "/graphql", 200, "ok", 0.002, request_id="b", operation_name=None)
    assert len(lines(captured)) == 2
    root.handlers[0].flush()  # as logging.shutdown() does at exit
    assert lines(captured)[-1]["request_id"] == "b"
    await asyncio.sleep(FLUSH_SECONDS * 2)  # the timer finds nothing left to write
    assert len(lines(captured)) == 3


async def test_access_lines_go_out_at_once_when_they_fill_the_buffer(captured: io.StringIO) -> None:
    root = logging.getLogger()
    root.handlers[:] = root.handlers[:1]
    access = AccessLog("followgraph.http")
    path = "/graphql?" + "q" * 1000
    count = 0
    while not captured.getvalue():
        access("GET", path, 200, "ok", 0.001, request_id=f"r{count}", operation_name=None)
        count += 1
    # Written by the line that filled it: each counts as its path and _LINE_BYTES.
    assert count == math.ceil(FLUSH_BYTES / (len(path) + _LINE_BYTES))
    assert [line["request_id"] for line in lines(captured)] == [f"r{n}" for n in range(count)]


async def test_every_request_gets_its_access_line_with_its_request_id(
    captured: io.StringIO, api: Served
) -> None:
    root = logging.getLogger()
    root.handlers[:] = root.handlers[:1]
    await api.store.upsert_user("alice", name="Alice")
    answers = await asyncio.gather(
        *(api.post("query Viewer { viewer { userId } }", as_user="alice") for _ in range(5)),
        api.post("{ nope }"),
    )
    root.handlers[0].flush()
    written = [line for line in lines(captured) if line["logger"] == "followgraph.http"]
    by_id = {str(line["request_id"]): line for line in written}
    assert sorted(by_id) == sorted(answer.headers["x-request-id"] for answer in answers)
    for answer in answers[:5]:
        line = by_id[answer.headers["x-request-id"]]
        assert re.fullmatch(r"POST /graphql 200 ok \d+\.\dms", str(line["message"]))
        assert line["operation_name"] == "Viewer" and line["level"] == "INFO"
    unnamed = by_id[answers[5].headers["x-request-id"]]
    assert re.fullmatch(r"POST /graphql 200 rejected \d+\.\dms", str(unnamed["message"]))
    # The document names no operation: that is all this says (not who sent it).
    assert unnamed["operation_name"] is None


async def test_lines_held_when_a_loop_closed_go_out_with_the_next_loop_s(captured: io.StringIO) -> None:
    root = logging.getLogger()
    root.handlers[:] = root.handlers[:1]
    access = AccessLog("followgraph.http")

    async def one() -> None:
        access("GET", "/graphql", 200, "ok", 0.001, request_id="earlier", operation_name=None)

    # A loop that closes before its timer fires, as a test's loop does.
    await asyncio.to_thread(asyncio.run, one())
    assert captured.getvalue() == ""
    access("GET", "/graphql", 200, "ok", 0.001, request_id="later", operation_name=None)
    await asyncio.sleep(FLUSH_SECONDS * 2)
    assert [line["request_id"] for line in lines(captured)] == ["earlier", "later"]
