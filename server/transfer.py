"""Import and export of follows and users as CSV or JSON Lines, streaming and pipelined.

Edges: `follower,followee,followed_at` (followed_at in epoch ms or ISO-8601; empty means now).
Users: `userId,name,avatarUrl[,createdAt]`. JSON Lines use the same names as object keys.
"""

from __future__ import annotations

import csv
import enum
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, TypeVar

from followgraph.store import FollowStore, InvalidInputError, validate_user_id
from followgraph.store.bulk import Edge, EdgeStatus, UserRow, follow_many, scan_edges, scan_users, upsert_many
from followgraph.store.model import MAX_TIME, Profile
from followgraph.store.profiles import validate_avatar_url, validate_name

BATCH = 2000
EDGE_FIELDS = ("follower", "followee", "followed_at")
USER_FIELDS = ("userId", "name", "avatarUrl", "createdAt")
MAX_REPORTED_ERRORS = 20
T = TypeVar("T")


class Format(enum.Enum):
    CSV = "csv"
    JSONL = "jsonl"

    @classmethod
    def of(cls, path: str, explicit: str | None = None) -> Format:
        """The format named, or the one the file name ends with (.csv, .jsonl, .ndjson)."""
        if explicit:
            return cls(explicit.lower())
        lowered = path.lower()
        if lowered.endswith(".csv"):
            return cls.CSV
        if lowered.endswith((".jsonl", ".ndjson", ".json")):
            return cls.JSONL
        raise ValueError(f"Cannot tell the format of {path!r}: name it *.csv or *.jsonl, or pass --format.")


class OnError(enum.Enum):
    SKIP = "skip"
    STOP = "stop"


@dataclass(frozen=True, slots=True)
class RowError:
    line: int
    message: str


@dataclass
class Summary:
    rows: int = 0
    written: int = 0
    unchanged: int = 0
    rejected: int = 0
    errors: list[RowError] = field(default_factory=list)
    stopped_at: int | None = None
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0

    def reject(self, error: RowError) -> None:
        self.rejected += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(error)

    def finish(self) -> Summary:
        self.seconds = time.perf_counter() - self.started
        return self

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def parse_time(raw: Any) -> int | None:
    """Epoch ms from an integer (or its digits) or an ISO-8601 string with a zone; None when empty."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw <= MAX_TIME:
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        if text.isascii() and text.isdigit() and int(text) <= MAX_TIME:
            return int(text)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            if moment.tzinfo is not None and 0 <= moment.timestamp() * 1000 <= MAX_TIME:
                return round(moment.timestamp() * 1000)
    raise ValueError(
        f"bad time {str(raw)[:40]!r}: use epoch milliseconds or ISO-8601 with a zone, from 1970 on"
    )


def _records(
    lines: Iterable[str], fmt: Format, fields: tuple[str, ...]
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, record or a parse error message) for every data line."""
    if fmt is Format.JSONL:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, f"not JSON: {exc.msg}"
                continue
            yield number, record if isinstance(record, dict) else "not a JSON object"
        return
    reader = csv.reader(lines)
    for row in reader:
        number = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if number == 1 and row[0].strip() == fields[0]:
            continue  # the header
        yield number, dict(zip(fields, row, strict=False))


def _text(record: dict[str, Any], name: str) -> str:
    """A text field of a record: strings, and whole numbers as their digits (JSON ids are often
    numbers); missing or null is empty; anything else (true, 1.5, objects) is an error."""
    value = record.get(name, "")
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InvalidInputError(f"must be a string, got {json.dumps(value)[:40]}", field=name)
    return value


def _row_error(number: int, exc: Exception) -> RowError:
    return RowError(number, str(exc))


def edge_rows(lines: Iterable[str], fmt: Format) -> Iterator[tuple[int, Edge | RowError]]:
    for number, record in _records(lines, fmt, EDGE_FIELDS):
        if isinstance(record, str):
            yield number, RowError(number, record)
            continue
        try:
            follower = validate_user_id(_text(record, "follower"), field="follower")
            followee = validate_user_id(_text(record, "followee"), field="followee")
            if follower == followee:
                raise ValueError("a user cannot follow themselves")
            yield number, Edge(follower, followee, parse_time(record.get("followed_at")))
        except (InvalidInputError, ValueError) as exc:
            yield number, _row_error(number, exc)


def user_rows(lines: Iterable[str], fmt: Format) -> Iterator[tuple[int, UserRow | RowError]]:
    for number, record in _records(lines, fmt, USER_FIELDS):
        if isinstance(record, str):
            yield number, RowError(number, record)
            continue
        try:
            user_id = validate_user_id(_text(record, "userId"))
            name = _text(record, "name") or None
            avatar = _text(record, "avatarUrl") or None
            yield (
                number,
                UserRow(
                    user_id,
                    name=None if name is None else validate_name(name),
                    avatar_url=None if avatar is None else validate_avatar_url(avatar),
                    created_at=parse_time(record.get("createdAt")),
                ),
            )
        except (InvalidInputError, ValueError) as exc:
            yield number, _row_error(number, exc)


Progress = Callable[[int], None]


async def _batched(
    rows: Iterable[tuple[int, T | RowError]],
    summary: Summary,
    on_error: OnError,
    flush: Callable[[list[tuple[int, T]]], Awaitable[bool]],
    progress: Progress | None,
) -> Summary:
    """Feed valid rows to `flush` a batch at a time (it returns False to stop); count the rest."""
    batch: list[tuple[int, T]] = []
    stopped = False
    for number, row in rows:
        summary.rows += 1
        if isinstance(row, RowError):
            summary.reject(row)
            if on_error is OnError.STOP:
                summary.stopped_at = number
                break
            continue
        batch.append((number, row))
        if len(batch) >= BATCH:
            stopped = not await flush(batch)
            batch = []
            if progress:
                progress(summary.rows)
            if stopped:
                break
    if batch and not stopped:
        await flush(batch)
    if progress:
        progress(summary.rows)
    return summary.finish()


async def import_edges(
    store: FollowStore,
    rows: Iterable[tuple[int, Edge | RowError]],
    *,
    on_error: OnError = OnError.SKIP,
    register_missing: bool = True,
    progress: Progress | None = None,
) -> Summary:
    """Apply every valid edge; each is one atomic, idempotent script, so a re-run is safe."""
    summary = Summary()
    known: set[str] = set()

    async def flush(batch: list[tuple[int, Edge]]) -> bool:
        new = {user for _, edge in batch for user in (edge.follower, edge.followee)} - known
        if register_missing:
            await upsert_many(store, [UserRow(user_id) for user_id in sorted(new)])
            known.update(new)
        else:
            ids = sorted(new)
            known.update(
                user for user, present in zip(ids, await store.registered(ids), strict=True) if present
            )
        ready: list[tuple[int, Edge]] = []
        for number, edge in batch:
            missing = next((user for user in (edge.follower, edge.followee) if user not in known), None)
            if missing is None:
                ready.append((number, edge))
                continue
            summary.reject(RowError(number, f"user {missing!r} is not registered"))
            if on_error is OnError.STOP:
                summary.stopped_at = number
                break
        for (number, edge), status in zip(
            ready, await follow_many(store, [e for _, e in ready]), strict=True
        ):
            if status is EdgeStatus.ADDED:
                summary.written += 1
            elif status is EdgeStatus.EXISTED:
                summary.unchanged += 1
            elif status is EdgeStatus.BLOCKED:
                summary.reject(RowError(number, "one of the two users blocks the other"))
            else:  # unregistered meanwhile
                unknown = edge.follower if status is EdgeStatus.FOLLOWER_UNKNOWN else edge.followee
                summary.reject(RowError(number, f"user {unknown!r} is not registered"))
        return summary.stopped_at is None

    return await _batched(rows, summary, on_error, flush, progress)


async def import_users(
    store: FollowStore,
    rows: Iterable[tuple[int, UserRow | RowError]],
    *,
    on_error: OnError = OnError.SKIP,
    progress: Progress | None = None,
) -> Summary:
    summary = Summary()

    async def flush(batch: list[tuple[int, UserRow]]) -> bool:
        await upsert_many(store, [user for _, user in batch])
        summary.written += len(batch)
        return True

    return await _batched(rows, summary, on_error, flush, progress)


async def _export(
    batches: AsyncIterator[list[T]],
    out: IO[str],
    fmt: Format,
    fields: tuple[str, ...],
    record: Callable[[T], dict[str, Any]],
    progress: Progress | None,
) -> int:
    writer = csv.writer(out, lineterminator="\n")
    if fmt is Format.CSV:
        writer.writerow(fields)
    count = 0
    async for batch in batches:
        for item in batch:
            values = record(item)
            if fmt is Format.CSV:
                writer.writerow(["" if values[f] is None else values[f] for f in fields])
            else:
                out.write(json.dumps(values, ensure_ascii=False))
                out.write("\n")
        count += len(batch)
        if progress:
            progress(count)
    return count


async def export_edges(
    store: FollowStore, out: IO[str], fmt: Format, *, progress: Progress | None = None
) -> int:
    def record(edge: Edge) -> dict[str, Any]:
        return {"follower": edge.follower, "followee": edge.followee, "followed_at": edge.at}

    return await _export(scan_edges(store), out, fmt, EDGE_FIELDS, record, progress)


async def export_users(
    store: FollowStore, out: IO[str], fmt: Format, *, progress: Progress | None = None
) -> int:
    def record(p: Profile) -> dict[str, Any]:
        return {"userId": p.user_id, "name": p.name, "avatarUrl": p.avatar_url, "createdAt": p.created_at}

    return await _export(scan_users(store), out, fmt, USER_FIELDS, record, progress)
