"""Reading an import file's records: CSV rows by their header's column names (or, with no header,
in the kind's documented order), or JSON Lines objects by their keys; a header that does not fit
its kind stops the import before anything is written (cli/transfer.py turns records into rows)."""

from __future__ import annotations

import csv
import enum
import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

EDGE_FIELDS = ("follower", "followee", "followed_at")
USER_FIELDS = ("userId", "name", "avatarUrl", "createdAt", "locked", "hideFollowing", "hideFans")
CONTROL_FIELDS = ("kind", "actor", "target", "at")


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


# A data line's number, and its values by name or a parse error message.
Record = tuple[int, dict[str, Any] | str]


class HeaderError(Exception):
    """A CSV file's first line does not name the columns its kind has; the message says what it
    should name (a clause to follow "Cannot import FILE: ")."""


# The kind of row each set of fields describes, and how many of its fields, from the first, every
# row must have.
_KIND = {EDGE_FIELDS: "edges", USER_FIELDS: "users", CONTROL_FIELDS: "controls"}
REQUIRED = {EDGE_FIELDS: 2, USER_FIELDS: 1, CONTROL_FIELDS: 3}


def listed(names: Iterable[str]) -> str:
    """a; a and b; a, b and c."""
    items = list(names)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _described(fields: tuple[str, ...]) -> str:
    """follower and followee, and optionally followed_at."""
    required = REQUIRED[fields]
    return f"{listed(fields[:required])}, and optionally {listed(fields[required:])}"


def records(lines: Iterable[str], fmt: Format, fields: tuple[str, ...], header: bool) -> Iterator[Record]:
    """(line number, record or a parse error message) for every data line. A CSV file's header
    is read at once (HeaderError when it does not fit `fields`) and names each row's values;
    without `header` they are `fields` in their order."""
    if fmt is Format.JSONL:
        return _json_records(lines, fields)
    rows = _csv_rows(lines)
    first = next(rows, None)
    if first is None:
        return iter(())
    if header:
        return _named(rows, columns_of(first[1], fields))
    if is_header(first[1], fields):
        raise HeaderError(
            f"its first line, {shown(first[1])}, is a header, but --no-header says it has none: "
            "drop --no-header"
        )
    return _named(itertools.chain([first], rows), fields)


def _json_records(lines: Iterable[str], fields: tuple[str, ...]) -> Iterator[Record]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, f"not JSON: {exc.msg}"
            continue
        if not isinstance(record, dict):
            yield number, "not a JSON object"
            continue
        unknown = [repr(key[:40]) for key in record if key not in fields]
        if unknown:
            keys = "unknown key" if len(unknown) == 1 else "unknown keys"
            yield number, f"{keys} {listed(unknown)} (the keys of {_KIND[fields]} are {_described(fields)})"
            continue
        yield number, record


def _csv_rows(lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """(line number, values) of every CSV row that is not blank."""
    reader = csv.reader(lines)
    for row in reader:
        if row and not (len(row) == 1 and not row[0].strip()):
            yield reader.line_num, row


def _named(rows: Iterable[tuple[int, list[str]]], names: tuple[str, ...]) -> Iterator[Record]:
    """Each row's values by column name; a short row lacks the last columns, a long one is an error
    (an unquoted comma in a value would otherwise move every later value into the wrong column)."""
    for number, row in rows:
        if len(row) > len(names):
            yield number, f"{len(row)} values for {len(names)} columns ({','.join(names)})"
            continue
        yield number, dict(zip(names, row, strict=False))


def shown(row: list[str]) -> str:
    """A CSV line as a message quotes it."""
    return repr(",".join(row)[:60])


def is_header(row: list[str], fields: tuple[str, ...]) -> bool:
    """Whether the row names columns of `fields`, the required ones among them, and nothing else."""
    names = {cell.strip() for cell in row}
    return names <= set(fields) and set(fields[: REQUIRED[fields]]) <= names


def columns_of(row: list[str], fields: tuple[str, ...]) -> tuple[str, ...]:
    """The column names a CSV header gives, in its order; HeaderError when they are not columns of
    `fields` (each once, the required ones included)."""
    names = tuple(cell.strip() for cell in row)
    kind = _KIND[fields]
    if not set(names) & set(fields):
        raise HeaderError(
            f"its first line, {shown(row)}, names none of the columns of {kind} ({_described(fields)}): "
            "start the file with a header naming them, in any order, or pass --no-header if its rows "
            f"hold {','.join(fields)} in that order"
        )
    problems = []
    unknown = [repr(name[:40]) for name in names if name not in fields]
    if unknown:
        columns = "an unknown column" if len(unknown) == 1 else "unknown columns"
        problems.append(f"names {columns} {listed(unknown)}")
    twice = [name for name in fields if names.count(name) > 1]
    if twice:
        problems.append(f"names {listed(twice)} more than once")
    missing = [name for name in fields[: REQUIRED[fields]] if name not in names]
    if missing:
        problems.append(f"lacks {listed(missing)}")
    if problems:
        raise HeaderError(
            f"its header {listed(problems)}; the columns of {kind} are {_described(fields)}, in any order"
        )
    return names
