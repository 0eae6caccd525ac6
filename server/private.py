"""The data directory is for the user who runs followgraph alone: its AOF and its SQL copy hold
blocks, mutes, follow requests and settings, and jwt-secret the key that signs tokens (#36).

Directories followgraph creates there are 0700 and its files 0600 (the embedded redis-server runs
with the umask PRIVATE_UMASK for the same reason); a data directory that others may already enter
is made private when a server starts on it, with a log line.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600
# The umask of the processes that write in the data directory for us (redis-server).
PRIVATE_UMASK = 0o077


def private_directory(path: Path) -> Path:
    """Create `path` and every missing directory above it 0700 (`mkdir -p` would make the parents
    0755); an existing one is left as it is. Returns `path`."""
    missing = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        # Another process may make it first: then it is that process's to have made private.
        directory.mkdir(mode=PRIVATE_DIRECTORY, exist_ok=True)
    return path


def make_private(data_dir: Path) -> None:
    """Make an existing `data_dir` that other users may enter or list 0700, saying so in the log.

    One that is not this user's, or is shared (sticky, as /tmp is), is not changed: it is reported.
    """
    try:
        found = data_dir.stat()
    except FileNotFoundError:
        return
    mode = stat.S_IMODE(found.st_mode)
    if not mode & 0o077:
        return
    shown = data_dir.resolve()
    if found.st_uid != os.geteuid() or mode & stat.S_ISVTX:
        log.warning(
            "the data directory %s is open to other users (mode %o) and is not this user's own to "
            "change: choose a private one with --data-dir or FOLLOWGRAPH_DATA_DIR",
            shown,
            mode,
        )
        return
    try:
        data_dir.chmod(PRIVATE_DIRECTORY)
    except OSError as exc:
        log.warning("the data directory %s is open to other users (mode %o): %s", shown, mode, exc)
        return
    log.warning(
        "the data directory %s was open to other users (mode %o): made it %o", shown, mode, PRIVATE_DIRECTORY
    )
