"""Engines for the SQL copy, set up for its work: short write transactions from few processes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from followgraph.store.sql.urls import database_url

# How long an SQLite writer waits for another's lock before failing, in seconds.
SQLITE_BUSY_TIMEOUT = 30.0


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers (a rebuild) run beside the writer; the busy timeout makes a second writer
    # wait for the lock instead of failing at once.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT * 1000)}")
    cursor.close()


def create_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An async engine for `url` (any form database_url accepts); kwargs go to SQLAlchemy."""
    full = make_url(database_url(url))
    if full.get_backend_name() == "sqlite":
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
