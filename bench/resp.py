"""Raw RESP pipelines for bulk loading: commands packed by hand, written ~10k at a time on one socket.

redis-py's pipeline spends several microseconds per command in Python; packing the protocol
directly and parsing the replies with hiredis keeps a bulk load bound by Redis, not by the client.
Two batches are kept in flight, so Python packs the next batch while Redis runs the previous one.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Self

import hiredis
import redis
from redis.crc import key_slot

BATCH = 10_000

Arg = str | int


def pack(*args: Arg) -> bytes:
    """One command in the RESP protocol (built as text: ids, names and numbers are mostly ASCII)."""
    parts = [f"*{len(args)}\r\n"]
    for arg in args:
        text = str(arg)
        size = len(text) if text.isascii() else len(text.encode())
        parts.append(f"${size}\r\n{text}\r\n")
    return "".join(parts).encode()


class _Pipeline:
    """Sends what is buffered on a clean exit, and closes in any case."""

    def flush(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if exc_type is None:
                self.flush()
        finally:
            self.close()


class RawPipe(_Pipeline):
    """A blocking connection that sends packed commands in batches and checks every reply."""

    def __init__(self, host: str, port: int, *, db: int = 0, batch: int = BATCH) -> None:
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()
        self.batch = batch
        self.round_trips = 0
        self.commands = 0
        self._buffer: list[bytes] = []
        self._in_flight: list[int] = []
        if db:
            self.send_all([pack("SELECT", db)])
            self.flush()

    def add(self, command: bytes) -> None:
        self._buffer.append(command)
        if len(self._buffer) >= self.batch:
            self._send()

    def send_all(self, commands: Iterable[bytes]) -> None:
        for command in commands:
            self.add(command)

    def _send(self) -> None:
        if not self._buffer:
            return
        self.sock.sendall(b"".join(self._buffer))
        self._in_flight.append(len(self._buffer))
        self.commands += len(self._buffer)
        self.round_trips += 1
        self._buffer = []
        # Keep at most two batches in flight: Redis runs one while Python packs the next.
        while len(self._in_flight) > 1:
            self._read(self._in_flight.pop(0))

    def _read(self, count: int) -> None:
        seen = 0
        while seen < count:
            reply = self.reader.gets()
            if reply is False:
                data = self.sock.recv(1 << 20)
                if not data:
                    raise ConnectionError("Redis closed the connection during a bulk load")
                self.reader.feed(data)
                continue
            if isinstance(reply, Exception):
                raise RuntimeError(f"Redis refused a bulk-load command: {reply}")
            seen += 1

    def flush(self) -> None:
        """Send what is buffered and wait for every reply."""
        self._send()
        while self._in_flight:
            self._read(self._in_flight.pop(0))

    def close(self) -> None:
        self.sock.close()


def chunks(items: list[tuple[int, str]], size: int) -> Iterator[list[tuple[int, str]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def zadd(key: str, entries: Iterable[tuple[int, str]]) -> bytes:
    """ZADD key score member ... for (score, member) entries."""
    args: list[Arg] = ["ZADD", key]
    for score, member in entries:
        args += [score, member]
    return pack(*args)


def key_of(command: bytes) -> bytes:
    """The first key of a packed command: its second argument (`*N $len CMD $len KEY`)."""
    parts = command.split(b"\r\n", 5)
    return parts[4]


class ClusterPipe(_Pipeline):
    """RawPipes to every master of a Redis Cluster; each command goes to the node owning its key."""

    def __init__(self, host: str, port: int, *, batch: int = BATCH) -> None:
        probe = redis.Redis(host=host, port=port)
        try:
            layout = probe.cluster("SLOTS")
        finally:
            probe.close()
        self.pipes: dict[tuple[str, int], RawPipe] = {}
        self.owner: list[RawPipe | None] = [None] * 16384
        for start, end, primary, *_ in layout:
            address = (primary[0].decode() if isinstance(primary[0], bytes) else primary[0], int(primary[1]))
            if address not in self.pipes:
                self.pipes[address] = RawPipe(*address, batch=batch)
            for slot in range(int(start), int(end) + 1):
                self.owner[slot] = self.pipes[address]

    def add(self, command: bytes) -> None:
        pipe = self.owner[key_slot(key_of(command))]
        assert pipe is not None, "the cluster does not cover every slot"
        pipe.add(command)

    def send_all(self, commands: Iterable[bytes]) -> None:
        for command in commands:
            self.add(command)

    def flush(self) -> None:
        for pipe in self.pipes.values():
            pipe.flush()

    @property
    def commands(self) -> int:
        return sum(pipe.commands for pipe in self.pipes.values())

    @property
    def round_trips(self) -> int:
        return sum(pipe.round_trips for pipe in self.pipes.values())

    def close(self) -> None:
        for pipe in self.pipes.values():
            pipe.close()
