"""Engines for the SQL copy, set up for its work: short write transactions from few processes."""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from followgraph.store.sql.urls import database_url, sqlite_path

# How long an SQLite writer waits for another's lock before failing, in seconds.
SQLITE_BUSY_TIMEOUT = 30.0


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers (a rebuild) run beside the writer; the busy timeout makes a second writer
    # wait for the lock instead of failing at once.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT * 1000)}")
    cursor.close()


def _private_file(url: str) -> None:
    """Create a SQLite copy's file, if it does not exist yet, for its user alone (0600): SQLite would
    create it with the umask's mode (0644), and it holds blocks, mutes, requests and settings (#36).
    SQLite gives the -wal, -shm and -journal files it makes beside it the file's own mode."""
    path = sqlite_path(url)
    if path is None:
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:  # there already, or a directory that is missing: SQLite reports the latter
        pass


def create_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An async engine for `url` (any form database_url accepts); kwargs go to SQLAlchemy."""
    full = make_url(database_url(url))
    if full.get_backend_name() == "sqlite":
        _private_file(url)
        kwargs.setdefault("connect_args", {}).setdefault("timeout", SQLITE_BUSY_TIMEOUT)
        engine = create_async_engine(full, **kwargs)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    if full.get_backend_name() in ("mysql", "mariadb"):
        # REPEATABLE READ's gap locks make concurrent batches deadlock; nothing here needs them.
        kwargs.setdefault("isolation_level", "READ COMMITTED")
        kwargs.setdefault("pool_recycle", 3600)
    kwargs.setdefault("pool_pre_ping", True)
    return create_async_engine(full, **kwargs)
