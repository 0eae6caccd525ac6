"""Logging: one JSON object per line, with the request id where there is one."""

from __future__ import annotations

import logging
import sys
from contextvars import ContextVar

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


def configure_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(
        JsonFormatter(
            "{asctime}{levelname}{name}{message}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            datefmt="%Y-%m-%dT%H:%M:%S%z",
            # uvicorn adds an ANSI-coloured copy of each message; JSON logs want the plain one only.
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # The endpoint logs every request with its request id; uvicorn's access line would repeat it.
    logging.getLogger("uvicorn.access").disabled = True
