"""Reads from replicas (FOLLOWGRAPH_READ_FROM_REPLICAS=1): pages and users' facts are read from the
replicas, every write and everything else goes to the primary: the replicas Sentinel names, or on a
Redis Cluster a replica of each slot's master (store/redis/cluster_channel.py, `replica=True`).

What a replica may show. Every write of the graph waits until N replicas have it before it answers
(FOLLOWGRAPH_WRITE_REPLICAS=N, store/redis/replicas.py), and the barrier before its WAIT covers
everything the primary had done. While the primary has no more replicas than N, each of them has
every acknowledged write: a read from any replica begun after a write was answered shows it,
whichever server process serves it. A viewer's follow is in their next page, and so is anyone
else's acknowledged write; a write not yet answered may show or not, as on the primary. Staleness
is bounded by the writes themselves, not by a time: a replica that falls behind holds the writes
back (they fail with WRITE_NOT_REPLICATED) rather than serve reads older than an answered write.

With more replicas than N, one of them may lack an acknowledged write: reads then go to the
primary, until there are N again. The replicas are counted every CHECK_SECONDS (the first read
waits for the first count), every replica the count source knows whatever its state (on a cluster,
the most any master has): one cut off from its primary still answers reads, with what it had.

A replica that cannot serve a read right now (out of reach, loading its data, or refusing reads
while it syncs: `replica-serve-stale-data no`, which a replica that can come back empty needs) gets
it read from the primary instead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.exceptions import ClusterDownError, ConnectionError, ReadOnlyError, TimeoutError

from followgraph.store.redis.channel import Reads
from followgraph.store.redis.lua import Client, ScriptCall, run_scripts

log = logging.getLogger(__name__)

CHECK_SECONDS = 5.0
# A replica that cannot serve now: out of reach or loading (ConnectionError covers LOADING), or
# refusing reads while its link to the primary is down or syncing (MASTERDOWN, a ClusterDownError).
UNFIT = (ConnectionError, TimeoutError, ClusterDownError, ReadOnlyError)


class ClientReads:
    """Reads through a redis-py client (a Sentinel primary's or replicas' has no read channel);
    closing it closes the client when it `owns` it."""

    def __init__(self, client: Client, *, owns: bool) -> None:
        self.client = client
        self.owns = owns

    @property
    def keeps(self) -> bool:
        return False

    async def run_scripts(self, calls: Sequence[ScriptCall]) -> list[Any]:
        return await run_scripts(self.client, calls)

    async def aclose(self) -> None:
        if self.owns:
            await self.client.aclose()


class ReplicaReads:
    """The read path on the replicas, through `replicas`, while `count` says there are no more than
    `waited`; else on the primary, through `primary`. Closing it closes both."""

    def __init__(
        self,
        replicas: Reads,
        primary: Reads,
        *,
        waited: int,
        count: Callable[[], Awaitable[int]],
        check_seconds: float = CHECK_SECONDS,
    ) -> None:
        self.replicas = replicas
        self.primary = primary
        self.waited = waited
        self.count = count
        self.check_seconds = check_seconds
        # Whether the replicas may serve reads; None until counted.
        self.allowed: bool | None = None
        self._next_check = 0.0
        self._checking: asyncio.Task[None] | None = None
        # Reads served by each side, and those a replica could not serve, for the tests.
        self.served = {"replica": 0, "primary": 0, "unfit": 0}

    @property
    def keeps(self) -> bool:
        return False

    async def run_scripts(self, calls: Sequence[ScriptCall]) -> list[Any]:
        if self._checking is None and time.monotonic() >= self._next_check:
            self._checking = asyncio.ensure_future(self._check())
        if self.allowed is None and self._checking is not None:
            await asyncio.shield(self._checking)
        if self.allowed:
            try:
                replies = await self.replicas.run_scripts(calls)
            except UNFIT as exc:
                log.debug("replica reads: a replica cannot serve now (%s: %s)", type(exc).__name__, exc)
                self.served["unfit"] += 1
            else:
                self.served["replica"] += 1
                return replies
        self.served["primary"] += 1
        return await self.primary.run_scripts(calls)

    async def _check(self) -> None:
        try:
            replicas = await self.count()
        except Exception as exc:  # the count's source away: the last answer stands
            log.warning("replica reads: could not count the replicas (%s: %s)", type(exc).__name__, exc)
            if self.allowed is None:
                self.allowed = False
        else:
            allowed = replicas <= self.waited
            if allowed != self.allowed:
                self._tell(replicas, allowed)
            self.allowed = allowed
        finally:
            self._next_check = time.monotonic() + self.check_seconds
            self._checking = None

    def _tell(self, replicas: int, allowed: bool) -> None:
        if allowed:
            log.info("replica reads: %d replica(s), each with every answered write: read from", replicas)
        else:
            log.warning(
                "replica reads: %d replicas, more than the %d each write waits for "
                "(FOLLOWGRAPH_WRITE_REPLICAS): one may lack an answered write, so reads go to the primary",
                replicas,
                self.waited,
            )

    async def aclose(self) -> None:
        if self._checking is not None:
            self._checking.cancel()
        await self.replicas.aclose()
        await self.primary.aclose()
