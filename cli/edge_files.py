"""Reading the follows of a file for an import, a batch at a time: the bytes decoded strictly as
UTF-8, with the byte offset, the line number and a CRC-32 of everything read after each row, so
that a checkpoint can name where the rows written so far end and a later run can check that the
file before that point is the one it was (cli/checkpoints.py).

The rows of a CSV file whose values are plainly valid (two user ids and a time in epoch ms, or
none) are taken as they are; any other row goes through cli/transfer.py's parsing, which reads
ISO-8601 times and words the errors, so both give the same rows and the same messages.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from followgraph.cli.records import EDGE_FIELDS, Format, HeaderError, columns_of, is_header, shown
from followgraph.cli.transfer import RowError, edge_of, edge_rows
from followgraph.store.graph.model import MAX_TIME

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_BOM = codecs.BOM_UTF8
# Bytes read at a time where a file is only checked or counted.
BLOCK = 1 << 20
MAX_TIME_DIGITS = len(str(MAX_TIME))


class NotUtf8Error(Exception):
    """The file to import is not UTF-8 text; the message says where, `byte` which byte."""

    def __init__(self, message: str, byte: int) -> None:
        super().__init__(message)
        self.byte = byte


@dataclass(frozen=True, slots=True)
class Mark:
    """A place in a file: the byte offset after a row, the line it ended on, the CRC-32 of the bytes
    before the offset."""

    offset: int = 0
    line: int = 0
    crc: int = 0


def not_utf8(path: str, data: bytes, start: int, offset: int, line: int) -> NotUtf8Error:
    return NotUtf8Error(
        f"{path} is not UTF-8 text (byte 0x{data[start]:02x} at offset {offset + start:,}, "
        f"line {line:,}): save it as UTF-8 and import it again.",
        data[start],
    )


def scan(raw: IO[bytes], path: str, offset: int, line: int) -> int:
    """Check that the file is UTF-8 from `offset` (at line `line` + 1) to its end, and count its
    lines there; NotUtf8Error says where it is not. Reads in blocks, at the speed of the disk."""
    raw.seek(offset)
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 0
    at = offset
    while block := raw.read(BLOCK):
        try:
            decoder.decode(block)
        except UnicodeDecodeError as exc:
            start = max(exc.start, 0)
            before = block[:start]
            raise not_utf8(path, block, start, at, line + lines + before.count(b"\n") + 1) from None
        lines += block.count(b"\n")
        at += len(block)
        last = block[-1:]
    else:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise not_utf8(path, b"?", 0, at, line + lines + 1) from None
    if at > offset and last != b"\n":
        lines += 1
    return lines


def checksum(raw: IO[bytes], size: int) -> int:
    """The CRC-32 of the first `size` bytes of the file."""
    raw.seek(0)
    crc, left = 0, size
    while left > 0 and (block := raw.read(min(BLOCK, left))):
        crc = zlib.crc32(block, crc)
        left -= len(block)
    return crc


class Lines:
    """The lines of a binary file from a mark, as text, keeping the mark after the last line read."""

    def __init__(self, raw: IO[bytes], path: str, start: Mark) -> None:
        if start.offset or raw.seekable():
            raw.seek(start.offset)
        self.raw = raw
        self.path = path
        self.offset, self.line, self.crc = start.offset, start.line, start.crc

    @property
    def mark(self) -> Mark:
        return Mark(self.offset, self.line, self.crc)

    def __iter__(self) -> Iterator[str]:
        # Read a block at a time, each checked whole before its lines are given out, as a text
        # stream decodes: a byte that is not UTF-8 stops the reading before the rows around it.
        decoder = codecs.getincrementaldecoder("utf-8")()
        pending = b""
        while block := self.raw.read(BLOCK):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                start = max(exc.start, 0)
                line = self.line + (pending + block[:start]).count(b"\n") + 1
                raise not_utf8(self.path, block, start, self.offset + len(pending), line) from None
            *complete, pending = (pending + block).split(b"\n")
            for data in complete:
                yield self._line(data + b"\n")
        if pending:
            yield self._line(pending)

    def _line(self, data: bytes) -> str:
        text = data.decode()
        if self.offset == 0 and data.startswith(_BOM):
            text = text[1:]
        self.offset += len(data)
        self.line += 1
        self.crc = zlib.crc32(data, self.crc)
        return text


@dataclass
class EdgeBatch:
    """Rows read: the valid follows flat (follower, followee, time: epoch ms digits or '' for now),
    the line of each, the rows that are not follows, how many rows in all, and the mark after the
    last (None when the source has no marks)."""

    edges: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    rows: int = 0
    mark: Mark | None = None


def plain_time(text: str) -> bool:
    """Whether `text` is empty or epoch ms as plain digits within range."""
    return not text or (
        text.isdigit() and text.isascii() and (len(text) < MAX_TIME_DIGITS or int(text) <= MAX_TIME)
    )


def _rows(lines: Lines) -> Iterator[tuple[int, list[str]]]:
    """(line number, values) of every CSV row that is not blank."""
    for row in csv.reader(lines):
        if row and not (len(row) == 1 and not row[0].strip()):
            yield lines.line, row


def _csv_batches(
    lines: Lines, rows: Iterator[tuple[int, list[str]]], names: tuple[str, ...], size: int
) -> Iterator[EdgeBatch]:
    width = len(names)
    fi, ei = names.index("follower"), names.index("followee")
    ti = names.index("followed_at") if "followed_at" in names else -1
    batch = EdgeBatch()
    for number, row in rows:
        batch.rows += 1
        if len(row) == width:
            a, b = row[fi], row[ei]
            at = row[ti] if ti >= 0 else ""
            if a != b and _ID.fullmatch(a) and _ID.fullmatch(b) and plain_time(at):
                batch.edges += (a, b, at)
                batch.lines.append(number)
                if len(batch.lines) >= size:
                    batch.mark = lines.mark
                    yield batch
                    batch = EdgeBatch()
                continue
        if len(row) > width:
            message = f"{len(row)} values for {width} columns ({','.join(names)})"
            batch.errors.append(RowError(number, message))
            continue
        edge = edge_of(dict(zip(names, row, strict=False)), Format.CSV)
        if isinstance(edge, str):
            batch.errors.append(RowError(number, edge))
            continue
        batch.edges += (edge.follower, edge.followee, "" if edge.at is None else str(edge.at))
        batch.lines.append(number)
    batch.mark = lines.mark
    yield batch


def _jsonl_batches(lines: Lines, size: int) -> Iterator[EdgeBatch]:
    batch = EdgeBatch()
    for number, row in edge_rows(lines, Format.JSONL):
        batch.rows += 1
        if isinstance(row, RowError):
            batch.errors.append(row)
            continue
        batch.edges += (row.follower, row.followee, "" if row.at is None else str(row.at))
        batch.lines.append(number)
        if len(batch.lines) >= size:
            batch.mark = lines.mark
            yield batch
            batch = EdgeBatch()
    batch.mark = lines.mark
    yield batch


def edge_batches(
    raw: IO[bytes], path: str, fmt: Format, *, header: bool, start: Mark, size: int
) -> Iterator[EdgeBatch]:
    """The follows of the file from `start`, `size` valid ones a batch (the last may hold fewer, or
    none), each with its mark. From the top, a CSV file's first row is read at once: HeaderError
    when it does not fit (its header, or a header where --no-header says there is none); from a
    mark further on, the columns are those the header names. NotUtf8Error at a line that is not
    UTF-8."""
    if fmt is Format.JSONL:
        return _jsonl_batches(Lines(raw, path, start), size)
    names: tuple[str, ...] = EDGE_FIELDS
    if header and start.offset > 0:
        first = next(_rows(Lines(raw, path, Mark())), None)
        if first is not None:
            names = columns_of(first[1], EDGE_FIELDS)
    lines = Lines(raw, path, start)
    rows = _rows(lines)
    if start.offset == 0:
        first = next(rows, None)
        if first is None:
            return iter(())
        if header:
            names = columns_of(first[1], EDGE_FIELDS)
        elif is_header(first[1], EDGE_FIELDS):
            raise HeaderError(
                f"its first line, {shown(first[1])}, is a header, but --no-header says it has none: "
                "drop --no-header"
            )
        else:
            rows = itertools.chain([first], rows)
    return _csv_batches(lines, rows, names, size)
