"""Reads of the copy's current state, for rebuilding Redis from it and reconciling the two.

Each read yields batches in key order (ids compare bytewise on every database), paged by key, so
that a long read holds no transaction open and sees every row that was there throughout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Row, Select, Table, and_, func, or_, select, true
from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.store.sql.tables import (
    FollowStatus,
    RequestStatus,
    blocks,
    follow_requests,
    follows,
    mutes,
    users,
)

BATCH = 1000
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class UserRow:
    id: str
    name: str | None
    avatar_url: str | None
    created_at: int | None
    locked: bool
    hide_following: bool
    hide_fans: bool


@dataclass(frozen=True, slots=True)
class FollowRow:
    follower: str
    followee: str
    followed_at: int


@dataclass(frozen=True, slots=True)
class PairRow:
    """An active block (actor blocks target) or mute, or a pending request (actor asks target)."""

    actor: str
    target: str
    at: int


@dataclass(frozen=True, slots=True)
class Counts:
    users: int
    follows: int
    blocks: int
    mutes: int
    pending_requests: int


def _after(keys: Sequence[ColumnElement[str]], values: Sequence[Any]) -> ColumnElement[bool]:
    # Spelt out rather than as a row value (a, b) > (x, y), which not every database turns into
    # an index range.
    first, *rest = keys
    beyond: ColumnElement[bool] = first > values[0]
    if not rest:
        return beyond
    return or_(beyond, and_(first == values[0], _after(rest, values[1:])))


async def _paged(
    engine: AsyncEngine,
    query: Select[Any],
    keys: Sequence[ColumnElement[str]],
    make: Callable[[Row[Any]], T],
    batch: int,
) -> AsyncIterator[list[T]]:
    after: tuple[Any, ...] | None = None
    while True:
        page = query.order_by(*keys).limit(batch)
        if after is not None:
            page = page.where(_after(keys, after))
        async with engine.connect() as connection:
            rows = (await connection.execute(page)).all()
        if not rows:
            return
        yield [make(row) for row in rows]
        if len(rows) < batch:
            return
        after = tuple(rows[-1][: len(keys)])


def all_users(engine: AsyncEngine, *, batch: int = BATCH) -> AsyncIterator[list[UserRow]]:
    """Every users row with its settings, by id."""
    columns = [users.c[field.name] for field in fields(UserRow)]
    return _paged(engine, select(*columns), [users.c.id], lambda r: UserRow(**r._mapping), batch)


def active_follows(engine: AsyncEngine, *, batch: int = BATCH) -> AsyncIterator[list[FollowRow]]:
    """The current follows, by (follower, followee)."""
    query = select(follows.c.follower, follows.c.followee, follows.c.followed_at).where(
        follows.c.status == int(FollowStatus.FOLLOWING)
    )
    keys = [follows.c.follower, follows.c.followee]
    return _paged(engine, query, keys, lambda r: FollowRow(**r._mapping), batch)


def _pairs(
    engine: AsyncEngine, table: Table, where: ColumnElement[bool], batch: int
) -> AsyncIterator[list[PairRow]]:
    first, second = (column for column in table.primary_key.columns)
    query = select(first.label("actor"), second.label("target"), table.c.at).where(where)
    return _paged(engine, query, [first, second], lambda r: PairRow(**r._mapping), batch)


def active_blocks(engine: AsyncEngine, *, batch: int = BATCH) -> AsyncIterator[list[PairRow]]:
    """The current blocks (actor = blocker), by pair."""
    return _pairs(engine, blocks, blocks.c.active == true(), batch)


def active_mutes(engine: AsyncEngine, *, batch: int = BATCH) -> AsyncIterator[list[PairRow]]:
    """The current mutes (actor = muter), by pair."""
    return _pairs(engine, mutes, mutes.c.active == true(), batch)


def pending_requests(engine: AsyncEngine, *, batch: int = BATCH) -> AsyncIterator[list[PairRow]]:
    """The pending follow requests (actor = requester, target = the account asked), by pair."""
    return _pairs(engine, follow_requests, follow_requests.c.status == RequestStatus.PENDING.value, batch)


async def counts(engine: AsyncEngine) -> Counts:
    """How many users, current follows, blocks, mutes and pending requests the copy holds."""

    def count(table: Table, where: ColumnElement[bool] | None = None) -> Any:
        query = select(func.count()).select_from(table)
        return (query if where is None else query.where(where)).scalar_subquery()

    query = select(
        count(users),
        count(follows, follows.c.status == int(FollowStatus.FOLLOWING)),
        count(blocks, blocks.c.active == true()),
        count(mutes, mutes.c.active == true()),
        count(follow_requests, follow_requests.c.status == RequestStatus.PENDING.value),
    )
    async with engine.connect() as connection:
        row = (await connection.execute(query)).one()
    return Counts(*(int(n) for n in row))
