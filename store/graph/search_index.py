"""Keeping the search index (store/graph/search.py) in step with the users.

`index_users` compares, for each user, what the index holds (the user's search doc: the words
indexed and their score) with what it should hold (the words of the current name, the fans
count): it removes the user from the sets of prefixes no longer in the name, adds it to new ones,
and rescores it everywhere when its fans count moved by more than a sixteenth (by any amount below
16), so that a follow rarely writes to the index at all. Two round trips for any number of users;
it reads the current state rather than an event's payload, so events delivered twice or out of
order leave the same index. A user no longer registered leaves the index.

The index is fed by a consumer of the change log (server/search.py) and built from every user by
`build_index` the first time (and by `followgraph search-index --rebuild`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from followgraph.store.graph.base import StoreBase
from followgraph.store.graph.events import Event, EventKind
from followgraph.store.graph.search import fold, name_words, prefixes
from followgraph.store.redis.lua import AnyPipeline, run_pipeline

SCAN_COUNT = 1000
# A Redis command, as execute_command takes it.
Command = tuple[Any, ...]
# Relation events that change a fans count: whose count (the actor's, the target's) they move.
_MOVES_FANS: dict[EventKind, tuple[bool, bool]] = {
    EventKind.FOLLOW: (False, True),
    EventKind.UNFOLLOW: (False, True),
    EventKind.ACCEPT_FOLLOW_REQUEST: (True, False),
    EventKind.REMOVE_FAN: (True, False),
    EventKind.BLOCK: (True, True),
}


def touched(events: Sequence[Event]) -> list[str]:
    """The users whose entries in the index `events` may change: a profile written, an account
    switched off or on, a fans count moved. In order, without repeats."""
    users: dict[str, None] = {}
    for event in events:
        if event.kind is EventKind.USER or event.kind is EventKind.ACCOUNT:
            users[event.actor] = None
        elif event.kind is EventKind.IMPORT:
            users.update(dict.fromkeys(event.imported_users()))
            users.update(dict.fromkeys(followee for _, followee, _ in event.imported_follows()))
        elif (moved := _MOVES_FANS.get(event.kind)) is not None:
            actor, target = moved
            if actor:
                users[event.actor] = None
            if target and event.target is not None:
                users[event.target] = None
    return list(users)


def rescored(indexed: float | None, fans: int) -> bool:
    """Whether a user indexed with score `indexed` (None: not indexed) is rescored at `fans`."""
    if indexed is None:
        return True
    return fans != indexed if indexed < 16 else abs(fans - indexed) > indexed / 16


@dataclass(frozen=True, slots=True)
class _Entry:
    """One user's place in the index: as it is, and as it should be."""

    user_id: str
    registered: bool
    words: list[str]
    fans: int
    old_words: list[str]
    old_score: float | None


class IndexOps(StoreBase):
    """Keeping the search index, as operations of the store."""

    async def index_users(self, user_ids: Sequence[str]) -> int:
        """Bring the index up to date for `user_ids`; how many users' entries changed."""
        ids = list(dict.fromkeys(user_ids))
        if not ids:
            return 0
        k = self.keys

        def read(pipe: AnyPipeline) -> None:
            for user_id in ids:
                pipe.exists(k.profile(user_id))
                pipe.hget(k.profile(user_id), "name")
                pipe.zcard(k.fans(user_id))
                pipe.hmget(k.search_doc(user_id), ["w", "s"])

        replies = await run_pipeline(self.redis, read)
        entries = [_entry(user_id, replies[4 * i : 4 * i + 4]) for i, user_id in enumerate(ids)]
        changes = [writes for entry in entries if (writes := self._writes(entry))]
        if changes:

            def write(pipe: AnyPipeline) -> None:
                for writes in changes:
                    for command in writes:
                        pipe.execute_command(*command)

            await run_pipeline(self.redis, write)
        return len(changes)

    def _writes(self, e: _Entry) -> list[Command]:
        """What brings `e`'s place in the index to what it should be (nothing when it is)."""
        k = self.keys
        old = prefixes(e.old_words)
        id_key = k.search_id(fold(e.user_id))
        doc = k.search_doc(e.user_id)
        if not e.registered:
            if e.old_score is None:
                return []
            gone = [k.search_prefix(p) for p in old] + [id_key]
            return [*(("ZREM", key, e.user_id) for key in gone), ("DEL", doc)]
        new = prefixes(e.words)
        rescore = rescored(e.old_score, e.fans)
        score = float(e.fans) if rescore else (e.old_score or 0.0)
        added = new if rescore else new - old
        writes: list[Command] = [("ZREM", k.search_prefix(p), e.user_id) for p in old - new]
        writes += [("ZADD", k.search_prefix(p), score, e.user_id) for p in added]
        if rescore:
            writes.append(("ZADD", id_key, score, e.user_id))
        if writes or e.words != e.old_words:
            writes.append(("HSET", doc, "w", " ".join(e.words), "s", repr(score)))
        return writes

    async def scan_user_ids(self) -> AsyncIterator[list[str]]:
        """Every registered user's id, a batch at a time."""
        batch: list[str] = []
        async for key in self.redis.scan_iter(match=self.keys.pattern("profile"), count=SCAN_COUNT):
            batch.append(self.keys.user_of(key))
            if len(batch) >= SCAN_COUNT:
                yield batch
                batch = []
        if batch:
            yield batch


def _entry(user_id: str, reply: list[Any]) -> _Entry:
    exists, name, fans, (words, score) = reply
    return _Entry(
        user_id=user_id,
        registered=bool(exists),
        words=name_words(name or ""),
        fans=int(fans),
        old_words=words.split(" ") if words else [],
        old_score=None if score is None else float(score),
    )
