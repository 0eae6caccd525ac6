"""The Redis a command uses: the configured URL, or the embedded server of the data directory.

A data directory's embedded Redis has one owner (server/owner.py): the process that started it,
which stops it on its way out. `serve` must be that owner, since what it serves lasts as long as
it runs: a second `serve` on the same data directory refuses to start (#36). The short commands
(import, export, token...) use the Redis a running owner serves, or start and own one for their
duration. A Redis that answers while no process owns it (its owner was killed where no
parent-death signal stopped it with it, as on macOS) is shut down and replaced by the new owner's.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from followgraph.server.owner import OwnerLock, owned, owner_pid
from followgraph.server.private import private_directory
from followgraph.server.redis_server import RedisServer, RedisServerError, answers, shut_down, socket_path_for
from followgraph.server.settings import Settings
from followgraph.server.watchdog import RedisWatchdog

log = logging.getLogger(__name__)

# Set by `serve --workers` for its workers: the pid of the process that owns their embedded Redis.
OWNER_ENV = "FOLLOWGRAPH_EMBEDDED_OWNER"
# How long a command waits for the Redis another process owns and is starting (or restarting).
OWNER_WAIT = 30.0
# How long `serve` tries for the lock: a process asking whether there is an owner holds it for an
# instant (owned()).
EXCLUSIVE_WAIT = 0.5


class DataDirInUseError(RedisServerError):
    """Another process owns the embedded Redis of the data directory."""


@dataclass(frozen=True)
class Embedded:
    """Where the Redis is, and the watchdog of the embedded one when this process started it."""

    url: str
    watchdog: RedisWatchdog | None = None


def redis_directory(data_dir: Path) -> Path:
    """Where the embedded Redis of `data_dir` keeps its files (and its owner its lock)."""
    return data_dir / "redis"


@contextmanager
def redis_url(settings: Settings) -> Iterator[str]:
    """Yield a Redis URL: settings.redis_url, the embedded Redis another followgraph process already
    runs on this data directory, or an embedded Redis started here and stopped on exit."""
    with embedded_redis(settings) as embedded:
        yield embedded.url


@contextmanager
def embedded_redis(
    settings: Settings,
    *,
    exclusive: bool = False,
    watch: bool = False,
    on_give_up: Callable[[], None] | None = None,
) -> Iterator[Embedded]:
    """Like redis_url(). With `exclusive` (serve), this process owns the embedded Redis or raises
    DataDirInUseError; with `watch`, the Redis it starts is restarted when it exits."""
    if settings.redis_url is not None:
        yield Embedded(settings.redis_url)
        return
    directory = redis_directory(settings.data_dir)
    socket = socket_path_for(directory)
    lock = OwnerLock(directory)
    try:
        private_directory(directory)
        owner = _own(lock, settings.data_dir, exclusive=exclusive)
    except OSError as exc:
        raise RedisServerError(f"cannot use {directory}: {exc.strerror or exc}.") from None
    if not owner:
        log.info("using the embedded redis already running at %s", socket)
        yield Embedded(f"unix://{socket}")
        return
    try:
        if answers(socket):
            pid = shut_down(socket)
            log.warning(
                "an embedded redis that no process owned was running at %s (pid %s): shut it down "
                "to start this process's own",
                socket,
                pid,
            )
        server = RedisServer(directory, appendonly=True, appendfsync=settings.appendfsync)
        server.start()
        log.info("embedded redis started at %s (data in %s)", server.url, directory)
        watchdog = RedisWatchdog(server, on_give_up=on_give_up) if watch else None
        if watchdog is not None:
            watchdog.start()
        try:
            yield Embedded(server.url, watchdog)
        finally:
            if watchdog is not None:
                watchdog.stop()
            server.stop()
            log.info("embedded redis stopped")
    finally:
        lock.release()  # after the stop: no other owner starts a Redis on files still written


def _own(lock: OwnerLock, data_dir: Path, *, exclusive: bool) -> bool:
    """Take `lock`: True once this process owns the embedded Redis, False when it is to use the one
    another process owns and runs. DataDirInUseError when neither can be."""
    directory = lock.path.parent
    if exclusive:
        if lock.acquire(wait=EXCLUSIVE_WAIT):
            return True
        who = _owner(directory)
        raise DataDirInUseError(
            f"{who[0].upper()}{who[1:]} runs the embedded Redis of the data directory "
            f"{data_dir.resolve()}: stop it first, or serve with another --data-dir or with --redis-url."
        )
    socket = socket_path_for(directory)
    deadline = time.monotonic() + OWNER_WAIT
    while not lock.acquire():
        if answers(socket):
            return False
        if time.monotonic() > deadline:
            raise DataDirInUseError(
                f"{_owner(directory)} runs the embedded Redis of the data directory {data_dir.resolve()}, "
                f"which did not answer within {OWNER_WAIT:g}s."
            )
        time.sleep(0.1)
    return True


def _owner(directory: Path) -> str:
    pid = owner_pid(directory)
    return "another followgraph process" + (f" (pid {pid})" if pid is not None else "")


@dataclass(frozen=True)
class SharedRedis:
    """The embedded Redis of a data directory as a process that uses it without owning it sees it
    (each worker of `serve --workers`: their parent owns it). It is gone for good when it does not
    answer and its owner has exited, since nothing will start it again."""

    data_dir: Path
    owner: int

    @classmethod
    def from_env(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> SharedRedis | None:
        """The embedded Redis of settings.data_dir when OWNER_ENV names its owner, else None."""
        raw = (os.environ if environ is None else environ).get(OWNER_ENV, "")
        return cls(settings.data_dir, int(raw)) if raw.isdigit() else None

    def problem(self) -> str | None:
        """Why this process cannot serve any more, or None while it can."""
        directory = redis_directory(self.data_dir)
        if owned(directory) or answers(socket_path_for(directory)):
            return None
        return (
            f"the embedded Redis of the data directory {self.data_dir.resolve()} is gone, and the "
            f"process that ran it (pid {self.owner}) has exited: nothing will start it again"
        )
