"""The durable SQL copy of the follow graph (PostgreSQL, MySQL/MariaDB, SQLite), fed by the event log.

A consumer reads batches of events (followgraph.store.graph.events) and hands them to `apply_events`;
`migrate` creates the tables; the snapshot reads give the copy back for a rebuild or a reconcile.
"""

from __future__ import annotations

from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.effects import EventDataError
from followgraph.store.sql.engine import create_engine
from followgraph.store.sql.migrate import migrate
from followgraph.store.sql.snapshot import (
    Counts,
    FollowRow,
    PairRow,
    UserRow,
    active_blocks,
    active_follows,
    active_mutes,
    all_users,
    counts,
    pending_requests,
)
from followgraph.store.sql.tables import FollowStatus, RequestStatus, metadata
from followgraph.store.sql.urls import UnsupportedDatabaseError, database_url

__all__ = [
    "Counts",
    "EventDataError",
    "FollowRow",
    "FollowStatus",
    "PairRow",
    "RequestStatus",
    "UnsupportedDatabaseError",
    "UserRow",
    "active_blocks",
    "active_follows",
    "active_mutes",
    "all_users",
    "apply_events",
    "counts",
    "create_engine",
    "database_url",
    "metadata",
    "migrate",
    "pending_requests",
]
