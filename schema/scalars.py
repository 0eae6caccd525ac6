"""Custom scalars. Times travel inside the server as epoch milliseconds (Redis TIME)."""

import time
from datetime import datetime
from functools import lru_cache
from typing import NewType

import strawberry
from strawberry.types.scalar import ScalarDefinition

EpochMillis = NewType("EpochMillis", int)


# A page of 20 entries formats 20 times; the entries of hot pages are formatted again on every
# read of them, so their strings are kept (about 1.5 MB when full).
DATETIME_CACHE_SIZE = 16_384


@lru_cache(maxsize=DATETIME_CACHE_SIZE)
def serialize_datetime(value: int) -> str:
    """Epoch ms as ISO-8601 UTC with millisecond precision, e.g. 2026-11-30T04:51:09.123Z."""
    seconds, millis = divmod(int(value), 1000)
    t = time.gmtime(seconds)
    date = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
    return f"{date}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{millis:03d}Z"


def parse_datetime(value: object) -> int:
    if not isinstance(value, str):
        raise ValueError("DateTime must be an ISO-8601 string such as 2026-11-30T04:51:09.123Z.")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"Invalid DateTime {value[:40]!r}: use ISO-8601, e.g. 2026-11-30T04:51:09.123Z."
        ) from None
    if moment.tzinfo is None:
        raise ValueError("DateTime needs a time zone, e.g. a trailing Z for UTC.")
    return round(moment.timestamp() * 1000)


DATETIME: ScalarDefinition = strawberry.scalar(
    name="DateTime",
    description="An ISO-8601 UTC timestamp with millisecond precision, e.g. 2026-11-30T04:51:09.123Z.",
    serialize=serialize_datetime,
    parse_value=parse_datetime,
)

SCALAR_MAP: dict[object, ScalarDefinition] = {EpochMillis: DATETIME}
