"""An import's batches in a line (store/graph/imports.py): on a single Redis the next batch goes out
before the answer to the one before is read, so Redis has it to run while the importer reads the
file and the answer.

The batches go in order on a connection of the line's own, where Redis runs them in the order sent.
A batch sent ahead is built from what the import knew before the batch still running, and the
script checks that this batch, and nothing else, came between (lua/import_follows.lua: the log's
last event is that batch's, which names the run and the event before it). Nothing else changes what
a batch knows of its users, but a follow without a time, which may make a request: after a batch
with one, the next waits for its answer. So does the second batch of an import, for the first
answer says whether the database was empty (then the users the import has not named need no
look). Each script is sent whole (EVAL, which Redis keeps compiled by its digest), so a server that
lost its scripts cannot answer NOSCRIPT to one batch and run the next.

A lost connection or a reply that does not come: the batches not answered go again, in order, on a
new connection (once; a batch run twice changes nothing the second time, and the one after it then
finds an event it does not know and believes nothing). A cluster, `stop` and writes that wait for
replicas (store/redis/replicas.py wraps the client's calls) take their batches one at a time
through import_batch, each while the next is read.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError, TimeoutError

from followgraph.store.graph.imports import (
    IMPORT_FOLLOWS_SCRIPT,
    BatchResult,
    SingleBatch,
    import_batch,
    single_batch,
)
from followgraph.store.graph.known_users import KnownUsers
from followgraph.store.graph.store import FollowStore
from followgraph.store.redis.lua import Arg
from followgraph.store.redis.replicas import waits_for_replicas

# Batches sent and not answered, at most: one running, one waiting its turn.
AHEAD = 2

Tag = TypeVar("Tag")


@dataclass(slots=True)
class _Sent(Generic[Tag]):
    """A batch sent and not answered, with what its sender tagged it with: sent ahead on the
    line's connection (the batch and its command), or running whole through import_batch."""

    tag: Tag
    ahead: tuple[SingleBatch, tuple[Arg, ...]] | None = None
    running: asyncio.Future[BatchResult] | None = None


class ImportLine(Generic[Tag]):
    """The batches of one import, sent with `send` and answered in the same order by `result`, each
    with the tag it was sent with."""

    def __init__(self, store: FollowStore, *, register: bool, stop: bool) -> None:
        self._store = store
        self._register, self._stop = register, stop
        self.known = KnownUsers()
        redis = store.redis
        # The client whose pool the line's connection comes from: a single Redis's.
        self._redis = redis if isinstance(redis, Redis) and not store.cluster else None
        self.ahead = self._redis is not None and not stop and not waits_for_replicas(redis)
        self._sent: deque[_Sent[Tag]] = deque()
        self._connection: AbstractConnection | None = None

    def room(self) -> bool:
        """Whether a batch may go out now, before the answer to those sent is read."""
        sent = self._sent
        if not self.ahead:
            return not sent
        if not sent:
            return True
        last = sent[-1].ahead
        # The first answer says whether the database was empty (KnownUsers.empty): the next batch
        # waits for it, so as not to look up users it could take as never seen.
        if self.known.empty is None:
            return False
        return len(sent) < AHEAD and not (last is not None and last[0].timeless)

    @property
    def waiting(self) -> bool:
        """Whether a batch was sent and not answered yet."""
        return bool(self._sent)

    async def send(self, edges: Sequence[str], tag: Tag) -> None:
        """Send a batch (edges as import_batch takes them), answered with `tag`; room() must be
        true."""
        if not self.ahead:
            whole = import_batch(
                self._store, edges, register=self._register, stop=self._stop, known=self.known
            )
            self._sent.append(_Sent(tag, running=asyncio.ensure_future(whole)))
            await asyncio.sleep(0)  # it goes out before the next one is read
            return
        batch = single_batch(self._store, edges, register=self._register, stop=False, known=self.known)
        command = ("EVAL", IMPORT_FOLLOWS_SCRIPT.source, len(batch.keys), *batch.keys, *batch.args)
        self._sent.append(_Sent(tag, ahead=(batch, command)))
        try:
            await (await self._connected()).send_command(*command)
        except (ConnectionError, TimeoutError):
            await self._send_again()

    async def result(self) -> tuple[Tag, BatchResult]:
        """The first batch sent and not answered: its tag and its result."""
        first = self._sent[0]
        if first.running is not None:
            self._sent.popleft()
            return first.tag, await first.running
        assert first.ahead is not None
        try:
            reply = await (await self._connected()).read_response()
        except (ConnectionError, TimeoutError):
            await self._send_again()
            reply = await (await self._connected()).read_response()
        self._sent.popleft()
        return first.tag, first.ahead[0].result(reply, self.known)

    async def aclose(self) -> None:
        """Give the connection back (dropped when answers are still to come); batches running
        through import_batch are cancelled."""
        for sent in self._sent:
            if sent.running is not None:
                sent.running.cancel()
        if self._connection is not None:
            if self._sent:
                await self._connection.disconnect()
            assert self._redis is not None
            await self._redis.connection_pool.release(self._connection)
            self._connection = None

    async def _connected(self) -> AbstractConnection:
        if self._connection is None:
            assert self._redis is not None
            pool: Any = self._redis.connection_pool  # whose get_connection redis-py leaves untyped
            self._connection = await pool.get_connection()
        return self._connection

    async def _send_again(self) -> None:
        """The batches not answered, again on a new connection."""
        connection = await self._connected()
        await connection.disconnect()  # connected again as it sends
        commands = [sent.ahead[1] for sent in self._sent if sent.ahead is not None]
        await connection.send_packed_command(connection.pack_commands(commands))
