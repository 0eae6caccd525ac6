"""Events to feed the copy, and its tables read back whole, to compare two states of it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.graph.events import Event, EventKind
from followgraph.store.sql.tables import metadata

Tables = dict[str, list[tuple[Any, ...]]]


def event(kind: EventKind, actor: str, target: str | None, at: int, seq: int = 0, **data: str) -> Event:
    """An event at `at` whose stream id is `at-seq` (as a single Redis writes it)."""
    return Event(id=f"{at}-{seq}", kind=kind, actor=actor, target=target, at=at, data=data)


async def wipe(engine: AsyncEngine) -> None:
    """Empty every table."""
    async with engine.begin() as connection:
        for table in reversed(metadata.sorted_tables):
            await connection.execute(table.delete())


async def dump(engine: AsyncEngine) -> Tables:
    """Every row of every table, in key order."""
    tables: Tables = {}
    async with engine.connect() as connection:
        for table in metadata.sorted_tables:
            query = select(table).order_by(*table.primary_key.columns)
            tables[table.name] = [tuple(row) for row in (await connection.execute(query)).all()]
    return tables


async def row(engine: AsyncEngine, table_name: str, *key: str) -> dict[str, Any] | None:
    """One row as a dict of its columns, or None."""
    table = metadata.tables[table_name]
    where = [column == value for column, value in zip(table.primary_key.columns, key, strict=True)]
    async with engine.connect() as connection:
        found = (await connection.execute(select(table).where(*where))).mappings().one_or_none()
    return None if found is None else dict(found)
