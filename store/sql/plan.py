"""A batch of events as the rows to insert and the conditional updates to run, per table.

Rows are sorted by key, so that two processes applying overlapping batches lock rows in the same
order (no deadlock between them); a relation row keeps only its newest write of the batch (every
write sets the whole state, so the others could change nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from followgraph.store.graph.events import DELETED, Event, EventKind
from followgraph.store.sql.effects import Write, writes

# The order tables are written in, the same in every transaction.
RELATION_TABLES = ("follows", "follow_requests", "blocks", "mutes")
KEY_COLUMNS = {
    "users": ("id",),
    "follows": ("follower", "followee"),
    "follow_requests": ("requester", "owner"),
    "blocks": ("blocker", "blocked"),
    "mutes": ("muter", "muted"),
}
_USER_DEFAULTS = {
    "name": None,
    "avatar_url": None,
    "created_at": None,
    "locked": False,
    "hide_following": False,
    "hide_fans": False,
}

_NO_VERSION = {f"{part}_v_{n}": 0 for part in ("profile", "settings") for n in ("ms", "seq")}


@dataclass
class TablePlan:
    """Rows to insert where missing (the batch's state of a new row), then the updates to run in
    order on rows that were there already, by statement ("" a relation's, or users' "profile" and
    "settings")."""

    inserts: list[dict[str, Any]] = field(default_factory=list)
    updates: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _version(prefix: str, version: tuple[int, int]) -> dict[str, int]:
    return {f"{prefix}v_ms": version[0], f"{prefix}v_seq": version[1]}


def _params(write: Write, prefix: str = "") -> dict[str, Any]:
    keys = KEY_COLUMNS[write.table.partition(".")[0]]
    params: dict[str, Any] = {f"k_{name}": value for name, value in zip(keys, write.key, strict=True)}
    params.update({f"p_{name}": value for name, value in write.values.items()})
    params.update({f"p_{name}": value for name, value in _version(prefix, write.version).items()})
    return params


def _relation_plan(table: str, table_writes: Iterable[Write]) -> TablePlan:
    newest: dict[tuple[str, ...], Write] = {}
    followed_at: dict[tuple[str, ...], int] = {}
    for write in table_writes:
        if write.key not in newest or write.version > newest[write.key].version:
            newest[write.key] = write
        at = write.values.get("followed_at")
        if at is not None and at > followed_at.get(write.key, at - 1):
            followed_at[write.key] = at
    plan = TablePlan()
    updates = plan.updates.setdefault("", [])
    for key in sorted(newest):
        write = newest[key]
        row = dict(zip(KEY_COLUMNS[table], key, strict=True)) | dict(write.values)
        params = _params(write)
        if table == "follows":
            # The time of the last follow may come from an older event than the newest write (a
            # follow, then the unfollow that ended it).
            row["followed_at"] = params["p_last_followed_at"] = followed_at.get(key)
        plan.inserts.append(row | _version("", write.version))
        updates.append(params)
    return plan


def _users_plan(user_writes: Sequence[Write]) -> TablePlan:
    # Profile and settings fields may be absent (keep the old value), so every write is applied,
    # oldest first; a new row is inserted with all of them folded in.
    ordered = sorted(user_writes, key=lambda w: (w.key, w.version))
    rows: dict[str, dict[str, Any]] = {}
    plan = TablePlan()
    for write in ordered:
        (user_id,) = write.key
        part = write.table.partition(".")[2]
        row = rows.setdefault(user_id, {"id": user_id, **_USER_DEFAULTS, **_NO_VERSION})
        row.update({name: value for name, value in write.values.items() if value is not None})
        row.update(_version(f"{part}_", write.version))
        plan.updates.setdefault(part, []).append(_params(write, f"{part}_"))
    plan.inserts = list(rows.values())
    return plan


@dataclass(frozen=True)
class BatchPlan:
    """The whole batch: the users table, then each relation table in RELATION_TABLES order."""

    tables: dict[str, TablePlan]
    # Users deleted for good: every row naming them goes, after the batch's other writes.
    deleted: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, events: Sequence[Event]) -> BatchPlan:
        by_table: dict[str, list[Write]] = {}
        deleted: list[str] = []
        for event in events:
            if event.kind is EventKind.ACCOUNT:
                if event.data.get("state") == DELETED:
                    deleted.append(event.actor)
                continue
            for write in writes(event):
                by_table.setdefault(write.table.partition(".")[0], []).append(write)
        tables: dict[str, TablePlan] = {}
        if "users" in by_table:
            tables["users"] = _users_plan(by_table["users"])
        for table in RELATION_TABLES:
            if table in by_table:
                tables[table] = _relation_plan(table, by_table[table])
        return cls(tables, list(dict.fromkeys(deleted)))
