"""What every part of the store stands on: the Redis client, the key names, the read channel, and the
checks of a pair of users that writes share."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import Any

from redis.asyncio import RedisCluster

from followgraph.store.graph.errors import (
    BlockedError,
    CannotFollowSelfError,
    UserNotFoundError,
)
from followgraph.store.graph.ids import validate_user_id
from followgraph.store.graph.keys import Keys
from followgraph.store.redis.channel import Reads
from followgraph.store.redis.lua import (
    Client,
    ScriptCall,
    run_scripts,
)
from followgraph.store.redis.replicas import waits_for_replicas


class StoreBase:
    """Async access to the follow graph. The client must be created with decode_responses=True."""

    def __init__(self, redis: Client, *, keys: Keys | None = None, reads: Reads | None = None) -> None:
        self.redis = redis
        # Pages and users' facts go through the read channel when there is one (store/redis/channel.py,
        # store/redis/cluster_channel.py).
        self.reads = reads
        # On a cluster every script touches one user's slot: a follow is two steps, reads of many
        # users go out as one command per user (profiles) or per slot (counts), and the change log has
        # a stream per slot.
        self.cluster = isinstance(redis, RedisCluster)
        self.keys = replace(keys or Keys(), sharded=self.cluster)

    def _read(self, calls: Sequence[ScriptCall]) -> Awaitable[list[Any]]:
        """Replies of read-only script calls, in one round trip. (The awaitable of the channel's
        or the client's call itself: a coroutine of its own here would cost every read a frame.)"""
        if self.reads is None:
            return run_scripts(self.redis, calls)
        return self.reads.run_scripts(calls)

    async def run_repeatable(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """Replies of script calls that change nothing when run a second time (a write step that
        finds its work done does nothing), in one round trip: through the read channel, which may
        send them again (over a new connection when one was lost; on a cluster, through redis-py
        when a slot moved or a node did not answer)."""
        if waits_for_replicas(self.redis):
            # The read channel sends no WAIT after a write; the client does.
            return await run_scripts(self.redis, calls)
        return await self._read(calls)

    @staticmethod
    def check_pair(a: str, b: str, *, self_message: str = "A user cannot follow themselves.") -> None:
        validate_user_id(a)
        validate_user_id(b)
        if a == b:
            raise CannotFollowSelfError(self_message)

    @staticmethod
    def check_status(status: int, a: str, b: str) -> None:
        if status == -1:
            raise UserNotFoundError(a)
        if status == -2:
            raise UserNotFoundError(b)
        if status == -3:
            raise BlockedError(f"{a!r} and {b!r}: one of them blocks the other.")

    def _owner_keys(self, owner: str) -> list[str]:
        """What decides whether others see the owner's lists: all on the owner's slot."""
        return [self.keys.profile(owner), self.keys.fans(owner), self.keys.blocking(owner)]
