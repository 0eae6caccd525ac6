"""Events of the change log: what each one means, and how it is read from a stream entry.

Every script that changes the graph appends one entry to a Redis Stream in the same atomic call
(see store/graph/scripts.py: `log_event`), and only when something changed, so a retried script adds
nothing. An entry's fields:

    k   kind (EventKind's value)
    a   the actor: who acted
    t   the target (absent for USER and SETTINGS)
    at  when, epoch ms (Redis TIME, or an imported time)
    and for USER:     name, avatarUrl, createdAt (the profile after the change)
        for SETTINGS: locked, hideFollowing, hideFans ('1' on, '0' off: the settings after it)
        for ACCOUNT:  state: DEACTIVATED, SUSPENDED, DELETING, ACTIVE (back on) or DELETED (gone)
        for IMPORT:   users (registered at `at`, space-separated), follows ('follower followee
                      time' lines) and requests ('follower followee' lines: pending requests
                      those follows ended), each only when there are some; `a` is empty; on a
                      single Redis also run (the import's id) and before (the log's last event
                      id before the batch), which the import's next batch checks

What each relation kind does to the pair (actor, target):

    FOLLOW                 actor follows target since `at`
    UNFOLLOW               actor no longer follows target, nor asks to
    REMOVE_FAN             target no longer follows actor (actor removed the fan)
    FOLLOW_REQUEST         actor asks to follow target (a locked account), since `at`
    ACCEPT_FOLLOW_REQUEST  target follows actor since `at` (actor accepted)
    REJECT_FOLLOW_REQUEST  target's request to follow actor is gone (actor rejected)
    BLOCK                  actor blocks target; follows and requests both ways end
    UNBLOCK                actor no longer blocks target
    MUTE / UNMUTE          actor mutes / no longer mutes target

Order: an id is `ms-seq`, the time Redis appended the entry and a sequence within that ms, and
ids increase within a stream. On one Redis there is one stream, so ids order every change. On a
cluster there is a stream per slot, and an event sits on the slot of the user whose step made the
change (the follower's for a follow, the blocker's for a block, the requester's for an accepted
request); changes of one pair on two slots are ordered by their ids' times, as far as the nodes'
clocks agree.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from followgraph.store.graph.keys import Keys
from followgraph.store.redis.lua import ScriptCall


class EventKind(enum.Enum):
    FOLLOW = "FOLLOW"
    UNFOLLOW = "UNFOLLOW"
    REMOVE_FAN = "REMOVE_FAN"
    FOLLOW_REQUEST = "FOLLOW_REQUEST"
    ACCEPT_FOLLOW_REQUEST = "ACCEPT_FOLLOW_REQUEST"
    REJECT_FOLLOW_REQUEST = "REJECT_FOLLOW_REQUEST"
    BLOCK = "BLOCK"
    UNBLOCK = "UNBLOCK"
    MUTE = "MUTE"
    UNMUTE = "UNMUTE"
    # Not relation events: a profile written by upsertUser (or an import), settings changed, and an
    # account switched off, on or deleted (for services: never pushed to other users).
    USER = "USER"
    SETTINGS = "SETTINGS"
    ACCOUNT = "ACCOUNT"
    # A batch of a bulk import (store/graph/imports.py): many follows and new users in one event,
    # never pushed to subscriptions.
    IMPORT = "IMPORT"

    @property
    def relation(self) -> bool:
        """Whether this is a change between two users (the contract's RelationEventKind)."""
        return self not in (EventKind.USER, EventKind.SETTINGS, EventKind.ACCOUNT, EventKind.IMPORT)


# An ACCOUNT event's state once the account is deleted for good.
DELETED = "DELETED"

# Each part of a stream id is an unsigned 64-bit number: Redis refuses a larger one.
ID_PART_LIMIT = 2**64


def parse_id(event_id: str) -> tuple[int, int]:
    """A stream id `ms-seq` as numbers; ValueError when it is not one Redis would take."""
    ms, sep, seq = event_id.partition("-")
    # isdigit alone lets through digits of other scripts, which int() reads and Redis refuses.
    if not sep or not (ms + seq).isascii() or not ms.isdigit() or not seq.isdigit():
        raise ValueError(f"{event_id!r} is not an event id (ms-seq)")
    parts = int(ms), int(seq)
    if max(parts) >= ID_PART_LIMIT:
        raise ValueError(f"{event_id!r} is not an event id (ms-seq, each below 2^64)")
    return parts


def parse_after(event_id: str) -> tuple[int, int]:
    """An id to read the log after, as parse_id reads it; ValueError for the largest id too, which
    no event can follow (Redis refuses a range that starts after it)."""
    parts = parse_id(event_id)
    if parts == (ID_PART_LIMIT - 1, ID_PART_LIMIT - 1):
        raise ValueError(f"{event_id!r} is the largest event id: no event can follow it")
    return parts


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    kind: EventKind
    actor: str
    target: str | None
    at: int
    # USER: name, avatarUrl, createdAt; SETTINGS: locked, hideFollowing, hideFans ("1" / "0").
    data: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of_entry(cls, event_id: str, fields: Mapping[str, str]) -> Event:
        """The event of a stream entry (fields decoded to str)."""
        rest = {k: v for k, v in fields.items() if k not in ("k", "a", "t", "at")}
        return cls(
            id=event_id,
            kind=EventKind(fields["k"]),
            actor=fields["a"],
            target=fields.get("t"),
            at=int(fields["at"]),
            data=rest,
        )

    @property
    def version(self) -> tuple[int, int]:
        """What orders two changes of one pair: the id, `ms-seq`, as numbers. Its ms is when Redis
        appended the event (the change's own time, not `at`, which an import may set in the past),
        and ids increase within a stream."""
        return parse_id(self.id)

    def imported_users(self) -> list[str]:
        """The users an IMPORT event registered (at its `at`)."""
        return self.data.get("users", "").split()

    def imported_follows(self) -> list[tuple[str, str, int]]:
        """(follower, followee, time) of each follow an IMPORT event added."""
        rows = [line.split(" ") for line in self.data.get("follows", "").splitlines()]
        return [(a, b, int(at)) for a, b, at in rows]

    def ended_requests(self) -> list[tuple[str, str]]:
        """(follower, followee) of each pending request the follows of an IMPORT event ended."""
        rows = [line.split(" ") for line in self.data.get("requests", "").splitlines()]
        return [(a, b) for a, b in rows]

    def json(self) -> dict[str, Any]:
        """The event as the JSON the docs' change log page documents (`followgraph events tail`)."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind.value, "actor": self.actor}
        if self.target is not None:
            out["target"] = self.target
        out["at"] = self.at
        out.update(self.data)
        return out


def logged(k: Keys, actor: str, call: ScriptCall) -> ScriptCall:
    """A call of a writing script with what its event needs (scripts.LOG): the stream of `actor`'s
    slot as the last key, then `actor` (the user whose keys the step changes) and the cap."""
    script, keys, args = call
    return script, [*keys, k.log(actor)], [*args, actor, k.log_cap]
