"""Import and export of follows and users as CSV or JSON Lines, streaming and pipelined.

Edges: `follower,followee,followed_at` (followed_at in epoch ms or ISO-8601; empty means now).
Users: `userId,name,avatarUrl,createdAt,locked,hideFollowing,hideFans` (the settings true or false;
empty or absent leaves one as it is).
Controls: `kind,actor,target,at`: BLOCK (actor blocks target), MUTE (actor mutes target) or REQUEST
(actor asked to follow target, pending); `at` as followed_at.
A CSV file starts with a header naming its columns, in any order, and the values of a row are read
by those names: a header that names a column the kind lacks, or lacks a required one, stops the
import before anything is written. Without a header (`header=False`) the columns are the ones
above in that order, the optional ones at the end free to be left out.
JSON Lines use the same names as object keys (the settings as JSON booleans); an object with a key
the kind lacks is a bad row.
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

from followgraph.cli.records import (
    CONTROL_FIELDS,
    EDGE_FIELDS,
    REQUIRED,
    USER_FIELDS,
    Format,
    Record,
    listed,
    records,
)
from followgraph.store import FollowStore, InvalidInputError, validate_user_id
from followgraph.store.graph.bulk import (
    Control,
    ControlKind,
    ControlStatus,
    Edge,
    UserRow,
    control_many,
    load_control_scripts,
    scan_controls,
    scan_following,
    scan_users,
    upsert_many,
)
from followgraph.store.graph.model import MAX_TIME, Profile
from followgraph.store.graph.profiles import validate_avatar_url, validate_name

BATCH = 2000
SETTING_FIELDS = USER_FIELDS[4:]
MAX_REPORTED_ERRORS = 20
T = TypeVar("T")


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
    # Edges without a time to a locked account: pending follow requests, as the API's follow makes.
    requested: int = 0
    unchanged: int = 0
    # Users an edge import registered (named by a follow, not registered before).
    registered: int = 0
    # Rows an earlier run of a resumed import counted (in `rows`, not in `seconds`).
    earlier: int = 0
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
        self.errors.sort(key=lambda error: error.line)  # a batch's refusals come after its parse errors
        return self

    @property
    def rate(self) -> float:
        return (self.rows - self.earlier) / self.seconds if self.seconds > 0 else 0.0


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


def parse_flag(raw: Any, name: str) -> bool | None:
    """A setting: a JSON boolean, or true / false (any case); None when empty or absent."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    shown = raw if isinstance(raw, str) else json.dumps(raw)
    raise ValueError(f"bad {name} {str(shown)[:40]!r}: use true or false (or leave it empty)")


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


def _required(record: dict[str, Any], name: str, fields: tuple[str, ...], fmt: Format) -> str:
    """A text field that every row of `fields` must have; a row without it (a short CSV row, a JSON
    object without the key) is an error naming it."""
    if name not in record:
        if fmt is Format.CSV:
            raise ValueError(f"no {name}: the row ends before its {name} column")
        raise ValueError(f"no {name} (an object needs {listed(fields[: REQUIRED[fields]])})")
    return _text(record, name)


Parse = Callable[[dict[str, Any], Format], T]


def _parsed(records: Iterator[Record], fmt: Format, parse: Parse[T]) -> Iterator[tuple[int, T | RowError]]:
    """Each record parsed, or the RowError that says why it cannot be."""
    for number, record in records:
        if isinstance(record, str):
            yield number, RowError(number, record)
            continue
        try:
            row: T | RowError = parse(record, fmt)
        except (InvalidInputError, ValueError) as exc:
            row = RowError(number, str(exc))
        yield number, row


def edge_rows(
    lines: Iterable[str], fmt: Format, *, header: bool = True
) -> Iterator[tuple[int, Edge | RowError]]:
    """The edges of `lines`, or why each row is not one; HeaderError at once when a CSV header does
    not fit (see _records)."""
    return _parsed(records(lines, fmt, EDGE_FIELDS, header), fmt, _edge)


def edge_of(record: dict[str, Any], fmt: Format) -> Edge | str:
    """The edge of a record, or the message that says why it is none."""
    try:
        return _edge(record, fmt)
    except (InvalidInputError, ValueError) as exc:
        return str(exc)


def _edge(record: dict[str, Any], fmt: Format) -> Edge:
    follower = validate_user_id(_required(record, "follower", EDGE_FIELDS, fmt), field="follower")
    followee = validate_user_id(_required(record, "followee", EDGE_FIELDS, fmt), field="followee")
    if follower == followee:
        raise ValueError("a user cannot follow themselves")
    return Edge(follower, followee, parse_time(record.get("followed_at")))


def user_rows(
    lines: Iterable[str], fmt: Format, *, header: bool = True
) -> Iterator[tuple[int, UserRow | RowError]]:
    """The users of `lines`, or why each row is not one; HeaderError at once when a CSV header does
    not fit (see _records)."""
    return _parsed(records(lines, fmt, USER_FIELDS, header), fmt, _user)


def _user(record: dict[str, Any], fmt: Format) -> UserRow:
    user_id = validate_user_id(_required(record, "userId", USER_FIELDS, fmt))
    name = _text(record, "name") or None
    avatar = _text(record, "avatarUrl") or None
    return UserRow(
        user_id,
        name=None if name is None else validate_name(name),
        avatar_url=None if avatar is None else validate_avatar_url(avatar),
        created_at=parse_time(record.get("createdAt")),
        locked=parse_flag(record.get("locked"), "locked"),
        hide_following=parse_flag(record.get("hideFollowing"), "hideFollowing"),
        hide_fans=parse_flag(record.get("hideFans"), "hideFans"),
    )


_SELF = {
    ControlKind.BLOCK: "a user cannot block themselves",
    ControlKind.MUTE: "a user cannot mute themselves",
    ControlKind.REQUEST: "a user cannot ask to follow themselves",
}


def control_rows(
    lines: Iterable[str], fmt: Format, *, header: bool = True
) -> Iterator[tuple[int, Control | RowError]]:
    """The controls of `lines`, or why each row is not one; HeaderError at once when a CSV header
    does not fit (see _records)."""
    return _parsed(records(lines, fmt, CONTROL_FIELDS, header), fmt, _control)


def _control(record: dict[str, Any], fmt: Format) -> Control:
    raw_kind = _required(record, "kind", CONTROL_FIELDS, fmt)
    try:
        kind = ControlKind(raw_kind.strip().upper())
    except ValueError:
        raise ValueError(f"unknown kind {raw_kind[:40]!r}: use BLOCK, MUTE or REQUEST") from None
    actor = validate_user_id(_required(record, "actor", CONTROL_FIELDS, fmt), field="actor")
    target = validate_user_id(_required(record, "target", CONTROL_FIELDS, fmt), field="target")
    if actor == target:
        raise ValueError(_SELF[kind])
    return Control(kind, actor, target, parse_time(record.get("at")))


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


async def _registered_rows(
    store: FollowStore,
    rows: list[tuple[int, tuple[str, str], T]],
    known: set[str],
    register_missing: bool,
    summary: Summary,
    on_error: OnError,
) -> list[tuple[int, T]]:
    """The rows whose two users are registered (registering the missing ones first with
    `register_missing`); the others are rejected. `known` remembers the users found so far."""
    new = {user for _, users, _ in rows for user in users} - known
    if register_missing:
        await upsert_many(store, [UserRow(user_id) for user_id in sorted(new)])
        known.update(new)
    else:
        ids = sorted(new)
        known.update(user for user, present in zip(ids, await store.registered(ids), strict=True) if present)
    ready: list[tuple[int, T]] = []
    for number, users, row in rows:
        missing = next((user for user in users if user not in known), None)
        if missing is None:
            ready.append((number, row))
            continue
        summary.reject(RowError(number, f"user {missing!r} is not registered"))
        if on_error is OnError.STOP:
            summary.stopped_at = number
            break
    return ready


async def import_controls(
    store: FollowStore,
    rows: Iterable[tuple[int, Control | RowError]],
    *,
    on_error: OnError = OnError.SKIP,
    register_missing: bool = True,
    progress: Progress | None = None,
) -> Summary:
    """Apply every valid block, mute and pending request at its time; each is idempotent (an
    existing one keeps its time), so a re-run is safe. A block ends follows and requests between
    its two users; a request across a block, or of a follow that exists, is rejected."""
    summary = Summary()
    known: set[str] = set()
    await load_control_scripts(store)

    async def flush(batch: list[tuple[int, Control]]) -> bool:
        pairs = [(number, (c.actor, c.target), c) for number, c in batch]
        ready = await _registered_rows(store, pairs, known, register_missing, summary, on_error)
        now_ms = int(time.time() * 1000)
        statuses = await control_many(store, [c for _, c in ready], now_ms)
        for (number, c), status in zip(ready, statuses, strict=True):
            if status is ControlStatus.ADDED:
                summary.written += 1
            elif status is ControlStatus.EXISTED:
                summary.unchanged += 1
            elif status is ControlStatus.BLOCKED:
                summary.reject(RowError(number, "one of the two users blocks the other"))
            elif status is ControlStatus.FOLLOWING:
                summary.reject(RowError(number, f"user {c.actor!r} already follows {c.target!r}"))
            else:  # unregistered meanwhile
                unknown = c.actor if status is ControlStatus.ACTOR_UNKNOWN else c.target
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
                writer.writerow([_cell(values[f]) for f in fields])
            else:
                out.write(json.dumps(values, ensure_ascii=False))
                out.write("\n")
        count += len(batch)
        if progress:
            progress(count)
    return count


def _cell(value: Any) -> Any:
    """A CSV cell: empty for None, true / false for a boolean."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


async def export_edges(
    store: FollowStore, out: IO[str], fmt: Format, *, progress: Progress | None = None
) -> int:
    """Every follow, a batch of following sets at a time. Ids need no quoting in CSV nor escaping in
    JSON (store/graph/ids.py), so each line is written as it is, as csv and json would write it."""
    if fmt is Format.CSV:
        out.write(",".join(EDGE_FIELDS) + "\n")
    count = 0
    async for entries in scan_following(store):
        if fmt is Format.CSV:
            out.write("".join([f"{a},{b},{at}\n" for a, b, at in entries]))
        else:
            line = '{{"follower": "{}", "followee": "{}", "followed_at": {}}}\n'
            out.write("".join([line.format(a, b, at) for a, b, at in entries]))
        count += len(entries)
        if progress:
            progress(count)
    return count


async def export_users(
    store: FollowStore, out: IO[str], fmt: Format, *, progress: Progress | None = None
) -> int:
    def record(p: Profile) -> dict[str, Any]:
        return {
            "userId": p.user_id,
            "name": p.name,
            "avatarUrl": p.avatar_url,
            "createdAt": p.created_at,
            "locked": p.settings.locked,
            "hideFollowing": p.settings.hide_following,
            "hideFans": p.settings.hide_fans,
        }

    return await _export(scan_users(store), out, fmt, USER_FIELDS, record, progress)


async def export_controls(
    store: FollowStore, out: IO[str], fmt: Format, *, progress: Progress | None = None
) -> int:
    """Every block, mute and pending request (each from its source of truth: blocking, muting,
    requests_out)."""

    def record(c: Control) -> dict[str, Any]:
        return {"kind": c.kind.value, "actor": c.actor, "target": c.target, "at": c.at}

    return await _export(scan_controls(store), out, fmt, CONTROL_FIELDS, record, progress)
