"""A database of one's own on a PostgreSQL or MySQL/MariaDB server, dropped afterwards: what the
test suite and the benchmark run the SQL copy in (SQLite needs none: a file is one)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Iterator

from sqlalchemy import text

from followgraph.store.sql.engine import create_engine


async def _admin(server: str, statement: str) -> None:
    postgres = server.startswith("postgres")
    engine = create_engine(server + ("/postgres" if postgres else "/"), isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


@contextlib.contextmanager
def private_database(server: str, prefix: str) -> Iterator[str]:
    """The URL of a new database named `prefix`_pid_random on `server` (a server URL without a
    database), dropped when the block ends, even with connections still open on PostgreSQL. Not
    in a running event loop: it runs its own."""
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    asyncio.run(_admin(server, f"CREATE DATABASE {name}"))
    try:
        yield f"{server}/{name}"
    finally:
        force = " WITH (FORCE)" if server.startswith("postgres") else ""
        asyncio.run(_admin(server, f"DROP DATABASE {name}{force}"))
