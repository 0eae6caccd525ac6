"""The SQL copy's tables, as SQLAlchemy Core metadata: what the migrations create and the code reads.

Every row carries the version (Event.version: its stream id, ms and seq) of the last event that changed it,
so that an event changes a row only when it is newer; rows that end (an unfollow, an unblock) stay
as tombstones, so that an older event applied late cannot bring them back.
"""

from __future__ import annotations

import enum
from typing import Any

from sqlalchemy import BigInteger, Boolean, Column, MetaData, SmallInteger, String, Table
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.types import TypeEngine

metadata = MetaData()

# Ids compare bytewise on every database (PostgreSQL's "C" collation, MySQL's ascii_bin): user ids
# are case-sensitive, and the snapshot reads come in the same order wherever the copy lives.
USER_ID_LENGTH = 64


def user_id_type() -> TypeEngine[str]:
    return (
        String(USER_ID_LENGTH)
        .with_variant(postgresql.VARCHAR(USER_ID_LENGTH, collation="C"), "postgresql")
        .with_variant(
            mysql.VARCHAR(USER_ID_LENGTH, charset="ascii", collation="ascii_bin"), "mysql", "mariadb"
        )
    )


def version_columns(prefix: str = "") -> list[Column[int]]:
    """The two columns of a version: the event's stream id (ms, seq)."""
    return [
        Column(f"{prefix}v_ms", BigInteger, nullable=False),
        Column(f"{prefix}v_seq", BigInteger, nullable=False),
    ]


class FollowStatus(enum.IntEnum):
    """follows.status: the original MySQL design's values."""

    FOLLOWING = 1
    UNFOLLOWED = 2


class RequestStatus(enum.StrEnum):
    """follow_requests.status: pending, or how the request ended."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    FOLLOWED = "followed"  # the requester followed directly (the account was unlocked)
    BLOCKED = "blocked"  # a block either way cut it


REQUEST_STATUS_LENGTH = 16

users = Table(
    "users",
    metadata,
    Column("id", user_id_type(), primary_key=True),
    Column("name", String(200), nullable=True),
    Column("avatar_url", String(2048), nullable=True),
    Column("created_at", BigInteger, nullable=True),
    Column("locked", Boolean, nullable=False),
    Column("hide_following", Boolean, nullable=False),
    Column("hide_fans", Boolean, nullable=False),
    # The profile and the settings change through different events, each ordered on its own.
    *version_columns("profile_"),
    *version_columns("settings_"),
)


def _pair_table(name: str, first: str, second: str, *columns: Column[Any]) -> Table:
    """A table of one relation between two users, keyed by the pair, versioned like every row."""
    key = [Column(column, user_id_type(), primary_key=True) for column in (first, second)]
    return Table(name, metadata, *key, *columns, *version_columns())


def _switch_table(name: str, actor: str, target: str) -> Table:
    """A relation that is on or off (a block, a mute), since `at`; kept when off (a tombstone)."""
    return _pair_table(
        name,
        actor,
        target,
        Column("active", Boolean, nullable=False),
        Column("at", BigInteger, nullable=False),
    )


follows = _pair_table(
    "follows",
    "follower",
    "followee",
    Column("status", SmallInteger, nullable=False),
    # The time of the current follow, or of the last one; null when only an unfollow was seen.
    Column("followed_at", BigInteger, nullable=True),
    Column("changed_at", BigInteger, nullable=False),
)
blocks = _switch_table("blocks", "blocker", "blocked")
mutes = _switch_table("mutes", "muter", "muted")
follow_requests = _pair_table(
    "follow_requests",
    "requester",
    "owner",
    Column("status", String(REQUEST_STATUS_LENGTH), nullable=False),
    Column("at", BigInteger, nullable=False),
)
