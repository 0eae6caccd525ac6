"""Applying a batch of events to the SQL copy, in one transaction, idempotently."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from followgraph.store.graph.events import DELETED, Event, EventKind
from followgraph.store.sql.plan import KEY_COLUMNS, BatchPlan
from followgraph.store.sql.statements import (
    JOINED_ROWS,
    insert_missing,
    joined_update,
    joined_update_columns,
    returns_inserted,
    update,
)
from followgraph.store.sql.tables import blocks, follow_requests, follows, mutes, users

# A batch that lost a deadlock (or a serialization check) is run again, a few times: it is
# idempotent, so running it again is always safe.
RETRIES = 5
_PG_RETRY_STATES = {"40P01", "40001"}  # deadlock_detected, serialization_failure
_MYSQL_RETRY_CODES = {1213, 1205}  # ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT


def _transient(error: DBAPIError) -> bool:
    orig = error.orig
    if getattr(orig, "sqlstate", None) in _PG_RETRY_STATES:
        return True
    args: tuple[Any, ...] = getattr(orig, "args", ())
    return bool(args) and args[0] in _MYSQL_RETRY_CODES


async def _joined_updates(connection: AsyncConnection, name: str, params: list[dict[str, Any]]) -> None:
    order = joined_update_columns(name)
    for start in range(0, len(params), JOINED_ROWS):
        chunk = params[start : start + JOINED_ROWS]
        flat = tuple(row[column] for row in chunk for column in order)
        await connection.exec_driver_sql(joined_update(name, len(chunk)), flat)


async def _run(connection: AsyncConnection, plan: BatchPlan) -> None:
    dialect = connection.dialect.name
    returns = returns_inserted(dialect)
    for name, table_plan in plan.tables.items():
        result = await connection.execute(insert_missing(dialect, name), table_plan.inserts)
        # A row this transaction inserted holds the batch's final state already (and stays locked
        # until the commit): only the rows that were there get the updates.
        inserted = {tuple(row) for row in result.all()} if returns else set()
        keys = [f"k_{column}" for column in KEY_COLUMNS[name]]
        for part, all_params in table_plan.updates.items():
            params = [p for p in all_params if tuple(p[k] for k in keys) not in inserted]
            if not params:
                continue
            if not part and not returns:  # MySQL: one round trip per row, unless joined
                await _joined_updates(connection, name, params)
            else:
                await connection.execute(update(f"{name}.{part}" if part else name), params)


async def _erase(connection: AsyncConnection, user_ids: list[str]) -> None:
    """Every row naming the users: their account was deleted for good."""
    for table in (follows, follow_requests, blocks, mutes):
        first, second = (column for column in table.primary_key.columns)
        await connection.execute(delete(table).where(first.in_(user_ids) | second.in_(user_ids)))
    await connection.execute(delete(users).where(users.c.id.in_(user_ids)))


def _segments(events: Sequence[Event]) -> list[BatchPlan]:
    """The batch's plans: one, or on a deletion of an account one up to it (its rows are erased
    after it) and one for what came after (an account registered again under the same id)."""
    if not any(e.kind is EventKind.ACCOUNT and e.data.get("state") == DELETED for e in events):
        return [BatchPlan.of(events)]
    plans, segment = [], []
    for event in sorted(events, key=lambda e: e.version):
        segment.append(event)
        if event.kind is EventKind.ACCOUNT and event.data.get("state") == DELETED:
            plans.append(BatchPlan.of(segment))
            segment = []
    return [*plans, BatchPlan.of(segment)]


async def apply_events(engine: AsyncEngine, events: Sequence[Event]) -> None:
    """Apply `events` (any order, repeats allowed) in one transaction: each row ends up as its
    newest event left it, and an event older than a row's version changes nothing. A deletion of
    an account removes the rows naming it, after the writes of the events before it."""
    plans = [plan for plan in _segments(events) if plan.tables or plan.deleted]
    if not plans:
        return
    for attempt in range(RETRIES):
        try:
            async with engine.begin() as connection:
                for plan in plans:
                    await _run(connection, plan)
                    if plan.deleted:
                        await _erase(connection, plan.deleted)
            return
        except DBAPIError as error:
            if attempt == RETRIES - 1 or not _transient(error):
                raise
            await asyncio.sleep(random.uniform(0.01, 0.05) * 2**attempt)
