"""Logging: one JSON object per line, with the request id where there is one.

The access log (one line per HTTP request) is written by `AccessLog`: the same JSON object as any
other line, but built with orjson and written once per turn of the event loop for all the
requests of that turn, without a LogRecord, a formatter call and a flush per line. Through the
logging module a line cost some 10-18 µs, 3-4% of a page's CPU time (bench/benchmarks.md).
"""

from __future__ import annotations

import asyncio
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


class _Lines:
    """JSON lines for a handler's stream, written together at the end of the loop's turn."""

    def __init__(self, handler: logging.StreamHandler[Any]) -> None:
        self.handler = handler
        self.pending: list[bytes] = []
        self.second = -1
        self.stamp = ""

    def add(self, logger: str, message: str, request_id: str, operation: str) -> None:
        """An access line at INFO."""
        now = int(time.time())
        if now != self.second:
            self.second, self.stamp = now, time.strftime(DATE_FORMAT, time.localtime(now))
        line = {
            "time": self.stamp,
            "level": "INFO",
            "logger": logger,
            "message": message,
            "request_id": request_id,
            "operation": operation,
        }
        self.pending.append(orjson.dumps(line))
        if len(self.pending) == 1:
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no loop: at once
                self.flush()

    def flush(self) -> None:
        text = b"\n".join(self.pending).decode() + "\n"
        self.pending.clear()
        self.handler.acquire()
        try:
            self.handler.stream.write(text)
            self.handler.flush()
        finally:
            self.handler.release()


_lines: _Lines | None = None


class AccessLog:
    """Writes the access line of a request at INFO on `logger`: fast when configure_logging set up
    the output, through the logging module otherwise (an embedding application's own logging)."""

    def __init__(self, logger: str) -> None:
        self.logger = logging.getLogger(logger)
        self.name = self.logger.name

    def __call__(self, message: str, *, request_id: str, operation: str) -> None:
        if not self.logger.isEnabledFor(logging.INFO):
            return
        lines = _lines
        handlers = logging.root.handlers
        if lines is None or len(handlers) != 1 or handlers[0] is not lines.handler:
            self.logger.info(message, extra={"request_id": request_id, "operation": operation})
            return
        lines.add(self.name, message, request_id, operation)


def configure_logging(level: str = "info") -> None:
    global _lines
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(
        JsonFormatter(
            "{asctime}{levelname}{name}{message}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            datefmt=DATE_FORMAT,
            # uvicorn adds an ANSI-coloured copy of each message; JSON logs want the plain one only.
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    _lines = _Lines(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # The endpoint logs every request with its request id; uvicorn's access line would repeat it.
    logging.getLogger("uvicorn.access").disabled = True
