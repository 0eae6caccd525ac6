"""The SQL copy's suite runs on PostgreSQL, MariaDB (or MySQL) and SQLite, never skipping one
(the session's databases: `sql_url` in tests/conftest.py); every test starts from empty tables."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.sql.engine import create_engine
from tests.store.sql.rows import wipe


@pytest.fixture
async def engine(sql_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on the session's database, its tables empty."""
    engine = create_engine(sql_url)
    await wipe(engine)
    yield engine
    await engine.dispose()
