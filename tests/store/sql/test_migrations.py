from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect
from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.graph.events import EventKind
from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.migrate import MIGRATIONS, alembic_config, migrate
from followgraph.store.sql.tables import metadata
from tests.store.sql.rows import dump, event


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, metadata))


def _revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def test_the_migrated_schema_is_the_metadata(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        assert await connection.run_sync(_differences) == []
        tables = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
    assert tables == {*metadata.tables, "alembic_version"}


async def test_migrating_again_changes_nothing(engine: AsyncEngine, sql_url: str) -> None:
    await apply_events(engine, [event(EventKind.FOLLOW, "alice", "bob", 100)])
    before = await dump(engine)
    await migrate(sql_url)
    await migrate(sql_url)
    assert await dump(engine) == before
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    async with engine.connect() as connection:
        assert await connection.run_sync(_revision) == head == "0001"


def test_the_migrations_ship_inside_the_package() -> None:
    assert (MIGRATIONS / "env.py").is_file()
    assert (MIGRATIONS / "versions" / "0001_initial.py").is_file()
    assert MIGRATIONS.parent.name == "sql"
