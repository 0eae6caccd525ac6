from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.sql.engine import create_engine


async def test_sqlite_writes_ahead_and_waits_for_a_busy_lock(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'copy.db'}")
    try:
        async with engine.connect() as connection:
            assert (await connection.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
            assert (await connection.execute(text("PRAGMA busy_timeout"))).scalar() == 30_000
    finally:
        await engine.dispose()


async def test_each_database_runs_the_batches_at_read_committed_or_serially(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        level = await connection.get_isolation_level()
    # MySQL's default REPEATABLE READ takes gap locks, which make concurrent batches deadlock.
    expected = {"postgresql": "READ COMMITTED", "mysql": "READ COMMITTED", "sqlite": "SERIALIZABLE"}
    assert level == expected[engine.dialect.name]
