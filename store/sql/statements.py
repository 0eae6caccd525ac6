"""The SQL of applying a batch, per dialect: insert-if-missing, then the conditional updates.

An update's WHERE compares the row's version with the event's as a row value, (ms, seq) <
(:ms, :seq), so that the check and the write are one atomic statement on every database.
Where the insert can say which rows it created (PostgreSQL, SQLite: RETURNING), only the rows that
were there already are updated: a new row is inserted with the batch's final state.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, bindparam, case, func, or_, tuple_
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.sql.dml import Insert, Update

from followgraph.store.sql import tables
from followgraph.store.sql.plan import KEY_COLUMNS

_TABLES: dict[str, Table] = {
    "users": tables.users,
    "follows": tables.follows,
    "follow_requests": tables.follow_requests,
    "blocks": tables.blocks,
    "mutes": tables.mutes,
}
# Columns an update leaves as they are when the event has no value for them.
_KEPT_WHEN_ABSENT = {
    "followed_at",
    "name",
    "avatar_url",
    "created_at",
    "locked",
    "hide_following",
    "hide_fans",
}
_STATE_COLUMNS = {
    "follows": ("status", "changed_at", "followed_at"),
    "follow_requests": ("status", "at"),
    "blocks": ("active", "at"),
    "mutes": ("active", "at"),
    "users.profile": ("name", "avatar_url", "created_at"),
    "users.settings": ("locked", "hide_following", "hide_fans"),
}


class UnsupportedDialectError(ValueError):
    """A database this copy has no insert-if-missing statement for."""


def _newer(table: Table, prefix: str) -> ColumnElement[bool]:
    names = (f"{prefix}v_ms", f"{prefix}v_seq")
    stored = tuple_(*(table.c[n] for n in names))
    given = tuple_(*(bindparam(f"p_{n}", type_=table.c[n].type) for n in names))
    return stored < given


def _update_follows() -> Update:
    # Besides the newest write, a follow learns the time of its last follow from older events too
    # (an unfollow applied before the follow it ended). One statement, so each row is locked once,
    # in key order. PostgreSQL and SQLite only: MySQL would see the versions already assigned.
    table = tables.follows
    newer = _newer(table, "")
    last = bindparam("p_last_followed_at", type_=table.c.followed_at.type)
    later = and_(last.is_not(None), or_(table.c.followed_at.is_(None), table.c.followed_at < last))
    values: dict[str, Any] = {"followed_at": case((later, last), else_=table.c.followed_at)}
    for column in ("status", "changed_at", "v_ms", "v_seq"):
        given = bindparam(f"p_{column}", type_=table.c[column].type)
        values[column] = case((newer, given), else_=table.c[column])
    keys = and_(*(table.c[k] == bindparam(f"k_{k}", type_=table.c[k].type) for k in KEY_COLUMNS["follows"]))
    return table.update().where(keys, or_(newer, later)).values(values)


@functools.cache
def update(part: str) -> Update:
    """The conditional update of one table (or of users' profile / settings) for executemany; on
    MySQL the relation tables use `joined_update` instead."""
    if part == "follows":
        return _update_follows()
    name, _, sub = part.partition(".")
    table = _TABLES[name]
    prefix = f"{sub}_" if sub else ""
    values: dict[str, Any] = {}
    for column in _STATE_COLUMNS[part]:
        given = bindparam(f"p_{column}", type_=table.c[column].type)
        values[column] = func.coalesce(given, table.c[column]) if column in _KEPT_WHEN_ABSENT else given
    for n in ("ms", "seq"):
        column = f"{prefix}v_{n}"
        values[column] = bindparam(f"p_{column}", type_=table.c[column].type)
    keys = and_(*(table.c[k] == bindparam(f"k_{k}", type_=table.c[k].type) for k in KEY_COLUMNS[name]))
    return table.update().where(keys, _newer(table, prefix)).values(values)


def returns_inserted(dialect: str) -> bool:
    """Whether `insert_missing` returns the keys it inserted (whose updates are then skipped)."""
    return dialect in ("postgresql", "sqlite")


@functools.cache
def insert_missing(dialect: str, name: str) -> Insert:
    """INSERT that skips rows already there. On PostgreSQL and SQLite it returns the keys it
    inserted; on MySQL it returns nothing, and for follows keeps the later `followed_at`."""
    table = _TABLES[name]
    keys = list(KEY_COLUMNS[name])
    if returns_inserted(dialect):
        module: Any = postgresql if dialect == "postgresql" else sqlite
        stmt = module.insert(table).on_conflict_do_nothing(index_elements=keys)
        return stmt.returning(*(table.c[k] for k in keys))  # type: ignore[no-any-return]
    if dialect in ("mysql", "mariadb"):
        # Not INSERT IGNORE: it share-locks an existing row, and two transactions upgrading that
        # lock for the update deadlock; a no-op ON DUPLICATE KEY UPDATE takes the write lock at once.
        my = mysql.insert(table)
        if name != "follows":
            return my.on_duplicate_key_update({keys[0]: table.c[keys[0]]})
        given = my.inserted.followed_at
        later = or_(table.c.followed_at.is_(None), table.c.followed_at < given)
        kept = case((and_(given.is_not(None), later), given), else_=table.c.followed_at)
        return my.on_duplicate_key_update({"followed_at": kept})
    raise UnsupportedDialectError(f"no SQL copy for the {dialect!r} database")


# Rows per joined update on MySQL: big enough to save round trips, few distinct statement sizes.
JOINED_ROWS = 100


@functools.cache
def joined_update_columns(name: str) -> tuple[str, ...]:
    """The parameters of one row of `joined_update`, in order (names as in the executemany params)."""
    versions = ("v_ms", "v_seq")
    return (*(f"k_{k}" for k in KEY_COLUMNS[name]), *(f"p_{c}" for c in (*_STATE_COLUMNS[name], *versions)))


@functools.cache
def joined_update(name: str, rows: int) -> str:
    """The conditional update of `rows` rows of a relation table in one statement, for MySQL.

    MySQL runs an executemany UPDATE as one round trip per row; this joins the table to the rows
    given as a derived table instead. Each key appears once (the plan keeps a row's newest write),
    so the result is the same as the updates one by one.
    """
    table = _TABLES[name]
    keys = KEY_COLUMNS[name]
    columns = [*keys, *_STATE_COLUMNS[name], "v_ms", "v_seq"]
    first = "SELECT " + ", ".join(f"%s AS {c}" for c in columns)
    others = " UNION ALL SELECT " + ", ".join(["%s"] * len(columns))
    given = first + others * (rows - 1)
    assign = []
    for column in columns[len(keys) :]:
        value = f"v.{column}"
        if column in _KEPT_WHEN_ABSENT:
            value = f"COALESCE(v.{column}, t.{column})"
        assign.append(f"t.{column} = {value}")
    on = " AND ".join(f"t.{k} = v.{k}" for k in keys)
    return (
        f"UPDATE {table.name} AS t JOIN ({given}) AS v ON {on} SET {', '.join(assign)}"
        " WHERE (t.v_ms, t.v_seq) < (v.v_ms, v.v_seq)"
    )
