"""The SQL copy's suite runs on PostgreSQL, MariaDB (or MySQL) and SQLite, never skipping one.

Each session creates a database of its own on each server (and drops it at the end), migrates it
once, and every test starts from empty tables. The servers default to the ones CI runs; the
FOLLOWGRAPH_TEST_POSTGRES / FOLLOWGRAPH_TEST_MYSQL variables point elsewhere (a server URL without
a database).
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.sql import create_engine, migrate
from tests.store.sql.rows import wipe

SERVERS = {
    "postgresql": os.environ.get("FOLLOWGRAPH_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432"),
    "mysql": os.environ.get("FOLLOWGRAPH_TEST_MYSQL", "mysql://root@127.0.0.1:3306"),
}


async def _admin(server: str, statement: str) -> None:
    admin_db = "/postgres" if server.startswith("postgres") else "/"
    engine = create_engine(server + admin_db, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


@pytest.fixture(scope="session", params=["postgresql", "mysql", "sqlite"])
def sql_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a migrated database of this session's own, on each of the three databases."""
    kind: str = request.param
    if kind == "sqlite":
        url = f"sqlite:///{Path(tmp_path_factory.mktemp('sql')) / 'copy.db'}"
        asyncio.run(migrate(url))
        yield url
        return
    name = f"fgtest_{os.getpid()}_{secrets.token_hex(4)}"
    server = SERVERS[kind]
    asyncio.run(_admin(server, f"CREATE DATABASE {name}"))
    try:
        url = f"{server}/{name}"
        asyncio.run(migrate(url))
        yield url
    finally:
        drop = f"DROP DATABASE {name} WITH (FORCE)" if kind == "postgresql" else f"DROP DATABASE {name}"
        asyncio.run(_admin(server, drop))


@pytest.fixture
async def engine(sql_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on the session's database, its tables empty."""
    engine = create_engine(sql_url)
    await wipe(engine)
    yield engine
    await engine.dispose()
