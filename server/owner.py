"""The owner of a data directory's embedded Redis: the one process that started it and stops it.

The owner holds an OS lock (flock) on `owner.lock`, beside the Redis's files, for as long as it
runs, with its pid written in for the messages of the others. The kernel drops the lock when the
process ends, however it ends, so a crash never leaves a stale lock behind. The file stays: a
lock file that is deleted can be locked by one process while another creates it anew.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from followgraph.server.private import PRIVATE_FILE

LOCK_FILE = "owner.lock"


class OwnerLock:
    """The lock on `directory/owner.lock`, held by this process from acquire() until release()."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._fd: int | None = None

    def acquire(self, wait: float = 0.0) -> bool:
        """Take the lock, trying for up to `wait` seconds, and write this process's pid in; False
        when another process holds it."""
        deadline = time.monotonic() + wait
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
        try:
            while not _locked(fd, fcntl.LOCK_EX):
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(0.05)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        """Let the lock go (closing the file does)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _locked(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def owned(directory: Path) -> bool:
    """Whether a process owns the embedded Redis of `directory` now. Asking takes a shared lock
    for an instant, which only an owner's lock refuses."""
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        return not _locked(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)


def owner_pid(directory: Path) -> int | None:
    """The pid the owner of `directory` wrote: that of the last one when none owns it now."""
    try:
        text = (directory / LOCK_FILE).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
