"""The follows of a SQL query, for `followgraph import --from-sql URL --query ...`: streamed from the
database with a server-side cursor (SQLAlchemy's stream_results with yield_per: a named cursor on
PostgreSQL, an unbuffered one on MySQL and MariaDB, SQLite's own stepping), so that a table of
billions of rows is read as it is written, a batch in memory at a time.

A result's first two columns are the follower and the followee (text, or whole numbers), the third,
if any, the follow's time: epoch milliseconds, a timestamp (one without a zone is UTC), an ISO-8601
string with a zone, or null for now. Its rows are numbered from 1; a checkpoint names how many were
read, with a CRC-32 of their values, so that a run that resumes skips them and checks that the
query gives the same rows first (which needs an ORDER BY).
"""

from __future__ import annotations

import datetime
import decimal
import re
import zlib
from collections.abc import AsyncIterator
from typing import Any

from followgraph.cli.edge_files import EdgeBatch, Mark
from followgraph.cli.transfer import RowError, parse_time
from followgraph.store.graph.model import MAX_TIME
from followgraph.store.sql.urls import database_url, hidden_url

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class SourceChangedError(Exception):
    """The query's first rows are no longer those a checkpoint counted."""


class SourceError(Exception):
    """The database could not be read; the message says why."""


def _user(value: Any, name: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text or a whole number, got {type(value).__name__}")
    if _ID.fullmatch(value) is None:
        raise ValueError(f"Invalid user id {value[:80]!r}: use 1 to 64 characters of A-Z, a-z, 0-9, _ and -.")
    return value


def _time(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
        ms = (moment - _EPOCH) // datetime.timedelta(milliseconds=1)
    elif isinstance(value, datetime.date):
        ms = (value - _EPOCH.date()).days * 86_400_000
    elif isinstance(value, decimal.Decimal | float) and value == int(value):
        ms = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value
    elif isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            parsed = parse_time(value)
            return "" if parsed is None else str(parsed)
        return _time(moment)  # SQLite keeps timestamps as text
    else:
        raise ValueError(f"bad time {str(value)[:40]!r}: use epoch milliseconds or a timestamp")
    if not 0 <= ms <= MAX_TIME:
        raise ValueError(f"bad time {str(value)[:40]!r}: from 1970 to 9999 only")
    return str(ms)


def _edge(row: Any) -> tuple[str, str, str]:
    follower = _user(row[0], "follower")
    followee = _user(row[1], "followee")
    if follower == followee:
        raise ValueError("a user cannot follow themselves")
    return follower, followee, _time(row[2]) if len(row) > 2 else ""


async def query_batches(url: str, query: str, *, size: int, start: Mark) -> AsyncIterator[EdgeBatch]:
    """The follows of the query's rows after the first `start.line` (which must give the CRC the
    mark kept: SourceChangedError otherwise), `size` a batch. SourceError when the database cannot
    be reached or refuses the query."""
    # SQLAlchemy loads with the first query read, not with the command line.
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.ext.asyncio import create_async_engine

    try:
        engine = create_async_engine(database_url(url))
    except (SQLAlchemyError, ValueError) as exc:
        raise SourceError(f"Cannot read {hidden_url(url)}: {exc}") from None
    try:
        async with engine.connect() as connection:
            result = await connection.stream(text(query).execution_options(yield_per=size))
            if len(result.keys()) < 2:
                raise SourceError(
                    "The query gives fewer than two columns: select the follower, the followee and "
                    "optionally the follow's time, in that order."
                )
            number, crc = 0, 0
            batch = EdgeBatch()
            async for rows in result.partitions(size):
                for row in rows:
                    number += 1
                    crc = zlib.crc32(repr(tuple(row)).encode(), crc)
                    if number <= start.line:
                        if number == start.line and crc != start.crc:
                            raise SourceChangedError
                        continue
                    batch.rows += 1
                    try:
                        batch.edges += _edge(row)
                    except ValueError as exc:
                        batch.errors.append(RowError(number, str(exc)))
                        continue
                    batch.lines.append(number)
                if number > start.line and batch.rows:
                    batch.mark = Mark(number, number, crc)
                    yield batch
                    batch = EdgeBatch()
            if number < start.line:
                raise SourceChangedError
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise SourceError(f"Cannot read {hidden_url(url)}: {reason}") from None
    finally:
        await engine.dispose()
