"""Logging: one compact JSON object per line (no space after `,` or `:`, as orjson writes them),
with the request id where there is one, and on an access line the trace and span ids of the request
when tracing is on (transport/tracing.py).

The access log (one line per HTTP request) is written by `AccessLog`: the same JSON object as any
other line, but built with orjson, without a LogRecord and a formatter call, and buffered: the
lines go out together FLUSH_SECONDS after the first of them, or as soon as they fill
FLUSH_BYTES, as nginx's `access_log ... buffer= flush=` does. Any other line, and the logging
module's flush at exit, writes the lines held first, so the log keeps its order. Through the
logging module a line cost some 10-18 µs, 3-4% of a page's CPU time; written once per turn of the
event loop, a write system call for every turn or two under load (bench/benchmarks.md). A process
killed outright loses the lines of its last FLUSH_SECONDS at most.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
import time
from contextvars import ContextVar
from typing import Any

import orjson
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

# The id of the request being served, for every log line written while serving it.
request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        current = request_id.get()
        if current is not None and not hasattr(record, "request_id"):
            record.request_id = current
        return True


DATE_FORMAT = "%Y-%m-%dT%H:%M:%S%z"


# How long an access line may wait for the ones after it, and how many bytes of them may wait.
FLUSH_SECONDS = 0.1
FLUSH_BYTES = 64 * 1024
# An access line's bytes beside its path, about (the fields, their names, the request id).
_LINE_BYTES = 180
_NO_IDS: dict[str, str] = {}


# An access line's fields: the logger, then the request's method, path, status, outcome, seconds,
# request id, GraphQL operation name (None when the document names none), and trace and span ids
# (None when tracing is off).
_Entry = tuple[str, str, str, int, str, float, str, str | None, tuple[str, str] | None]


class _Lines:
    """Access lines for a handler's stream, held and written together (see the module's docstring).
    A request only adds its fields: the lines are made when they are written, all in one loop,
    which costs less than making each as its request ends, apart from the others."""

    def __init__(self, handler: logging.StreamHandler[Any]) -> None:
        self.handler = handler
        # Each line's time (DATE_FORMAT) and fields.
        self.pending: list[tuple[str, _Entry]] = []
        self.size = 0
        self.second = -1
        self.stamp = ""
        # The loop of the last timer set for the lines held.
        self.timed: asyncio.AbstractEventLoop | None = None

    def add(self, entry: _Entry) -> None:
        """An access line at INFO."""
        now = int(time.time())
        if now != self.second:
            self.second, self.stamp = now, time.strftime(DATE_FORMAT, time.localtime(now))
        pending = self.pending
        pending.append((self.stamp, entry))
        self.size += len(entry[2]) + _LINE_BYTES
        if self.size >= FLUSH_BYTES:
            self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: at once
            self.flush()
            return
        # The first line held gets a timer; so does one held after a loop whose timer can no
        # longer fire (its loop closed: tests run one after another).
        if len(pending) == 1 or self.timed is not loop:
            loop.call_later(FLUSH_SECONDS, self.flush)
            self.timed = loop

    def flush(self) -> None:
        """Write the lines held, if any (a timer that finds them written already does nothing)."""
        if not self.pending:
            return
        dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        text = b"".join(
            [
                dumps(
                    {
                        "time": stamp,
                        "level": "INFO",
                        "logger": logger,
                        "message": f"{method} {path} {status} {outcome} {seconds * 1000:.1f}ms",
                        "request_id": rid,
                        "operation_name": name,
                        **(_NO_IDS if ids is None else {"trace_id": ids[0], "span_id": ids[1]}),
                    },
                    option=newline,
                )
                for stamp, (logger, method, path, status, outcome, seconds, rid, name, ids) in self.pending
            ]
        ).decode()
        self.pending.clear()
        self.size = 0
        self.handler.acquire()
        try:
            self.handler.stream.write(text)
        finally:
            self.handler.release()
        self.handler.flush()


class _JsonLinesHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler of configure_logging: writes the access lines held before any other line and
    when flushed, so that the log keeps its order and loses nothing at exit."""

    lines: _Lines | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.lines is not None:
            self.lines.flush()
        super().emit(record)

    def flush(self) -> None:
        if self.lines is not None:
            self.lines.flush()  # nothing held: nothing written (the lines' own flush comes here)
        super().flush()


_lines: _Lines | None = None


class AccessLog:
    """Writes the access line of a request at INFO on `logger`, "METHOD PATH STATUS OUTCOME 12.3ms"
    with the request id, the GraphQL operation's name (null when the document names none) and,
    given them, the trace and span ids: held and written with others when configure_logging set up
    the output, through the logging module otherwise (an embedding application's own logging)."""

    def __init__(self, logger: str) -> None:
        self.logger = logging.getLogger(logger)
        self.name = self.logger.name

    def __call__(
        self,
        method: str,
        path: str,
        status: int,
        outcome: str,
        seconds: float,
        *,
        request_id: str,
        operation_name: str | None,
        trace: tuple[str, str] | None = None,
    ) -> None:
        if not self.logger.isEnabledFor(logging.INFO):
            return
        lines = _lines
        handlers = logging.root.handlers
        if lines is None or len(handlers) != 1 or handlers[0] is not lines.handler:
            extra: dict[str, object] = {"request_id": request_id, "operation_name": operation_name}
            if trace is not None:
                extra["trace_id"], extra["span_id"] = trace
            self.logger.info("%s %s %d %s %.1fms", method, path, status, outcome, seconds * 1000, extra=extra)
            return
        lines.add((self.name, method, path, status, outcome, seconds, request_id, operation_name, trace))


# The separators orjson writes the access lines with, so that every line reads the same.
_compact = functools.partial(json.dumps, separators=(",", ":"))


def configure_logging(level: str = "info") -> None:
    global _lines
    handler = _JsonLinesHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(
        JsonFormatter(
            "{asctime}{levelname}{name}{message}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            datefmt=DATE_FORMAT,
            json_serializer=_compact,
            # uvicorn adds an ANSI-coloured copy of each message; JSON logs want the plain one only.
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    if _lines is not None:
        _lines.flush()  # the lines of the handler this replaces
    _lines = handler.lines = _Lines(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # The endpoint logs every request with its request id; uvicorn's access line would repeat it.
    logging.getLogger("uvicorn.access").disabled = True
