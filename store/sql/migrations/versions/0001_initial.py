"""The initial schema: users, follows, follow_requests, blocks, mutes (issue #13).

Written out in full rather than built from tables.py, so that the revision stays what it was when
the tables change; a test checks that the two agree.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql, postgresql

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def _user_id() -> sa.types.TypeEngine[str]:
    return (
        sa.String(64)
        .with_variant(postgresql.VARCHAR(64, collation="C"), "postgresql")
        .with_variant(mysql.VARCHAR(64, charset="ascii", collation="ascii_bin"), "mysql", "mariadb")
    )


def _version(prefix: str = "") -> list[sa.Column[int]]:
    return [sa.Column(f"{prefix}v_{n}", sa.BigInteger, nullable=False) for n in ("ms", "seq")]


def _pair(table: str, first: str, second: str, *columns: sa.Column[object]) -> None:
    op.create_table(
        table,
        sa.Column(first, _user_id(), nullable=False),
        sa.Column(second, _user_id(), nullable=False),
        *columns,
        *_version(),
        sa.PrimaryKeyConstraint(first, second),
    )


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", _user_id(), nullable=False),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("avatar_url", sa.String(2048), nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=True),
        sa.Column("locked", sa.Boolean, nullable=False),
        sa.Column("hide_following", sa.Boolean, nullable=False),
        sa.Column("hide_fans", sa.Boolean, nullable=False),
        *_version("profile_"),
        *_version("settings_"),
        sa.PrimaryKeyConstraint("id"),
    )
    _pair(
        "follows",
        "follower",
        "followee",
        sa.Column("status", sa.SmallInteger, nullable=False),
        sa.Column("followed_at", sa.BigInteger, nullable=True),
        sa.Column("changed_at", sa.BigInteger, nullable=False),
    )
    for table, first, second in (("blocks", "blocker", "blocked"), ("mutes", "muter", "muted")):
        _pair(
            table,
            first,
            second,
            sa.Column("active", sa.Boolean, nullable=False),
            sa.Column("at", sa.BigInteger, nullable=False),
        )
    _pair(
        "follow_requests",
        "requester",
        "owner",
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    for table in ("follow_requests", "mutes", "blocks", "follows", "users"):
        op.drop_table(table)
