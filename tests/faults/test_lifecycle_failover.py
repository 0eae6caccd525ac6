"""A big account's change in batches (store/graph/lifecycle.py) across a failover: the primary,
watched by three Sentinels, is SIGKILLed a quarter of the way through a deletion and through a
deactivation, and the same server process, without a restart, ends the change on the replica the
Sentinels promoted; nothing names a deleted account, and lists equal counts everywhere.

The writes wait for one replica (FOLLOWGRAPH_WRITE_REPLICAS=1, two replicas, so that the promoted
one still has one to confirm them): every step acknowledged before the kill is on the new primary.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.exceptions import RedisError

from followgraph.server.redis_client import connect
from followgraph.server.redis_sentinel import LocalSentinel
from followgraph.store import AccountState, FollowStore
from followgraph.store.graph import lifecycle
from tests.faults.support import check_graph, fault_settings
from tests.served import Served, serve
from tests.server.processes import free_ports
from tests.store.graph.test_lifecycle import keys_naming

STAR = "star"
FANS = [f"f{i:03}" for i in range(240)]
FOLLOWED = [f"g{i:02}" for i in range(40)]
# Where the primary is killed, as a share of the users the change visits.
KILL_AT = 0.25
# Seconds a change may take to end after the kill: the failover (about down-after plus an
# election) and the retries' pauses.
RECOVERY = 45.0
log = logging.getLogger(__name__)
CHANGE = "state errors { code }"
MUTATIONS = {
    "delete": f"mutation($id: ID!) {{ deleteUser(input: {{userId: $id}}) {{ {CHANGE} }} }}",
    "deactivate": (
        f'mutation($id: ID!) {{ suspendUser(input: {{userId: $id, reason: "spam"}}) {{ {CHANGE} }} }}'
    ),
}


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[LocalSentinel]:
    with LocalSentinel(
        tmp_path / "ha", tuple(free_ports(1 + 2 + 3)), replicas=2, down_after_ms=1000
    ) as local:
        yield local


class Killer:
    """A job watcher (store.watch_jobs) that kills the primary once the change has `KILL_AT` of
    its users behind it, between two of its steps."""

    def __init__(self, sentinel: LocalSentinel) -> None:
        self.sentinel = sentinel
        self.total = 0
        self.killed_with_left: int | None = None
        self.killed_at = 0.0

    def __call__(self, user_id: str, left: int) -> None:
        self.total = max(self.total, left)
        if self.killed_with_left is None and 0 < left <= self.total * (1 - KILL_AT):
            port = self.sentinel.primary_port()
            assert port is not None
            self.sentinel.server(port).kill()
            self.killed_with_left = left
            self.killed_at = time.monotonic()


async def _load(api: Served) -> None:
    await api.register(STAR, *FANS, *FOLLOWED)
    store = api.store
    for fan in FANS:
        await store.follow(follower=fan, followee=STAR)
    for other in FOLLOWED:
        await store.follow(follower=STAR, followee=other)
    # Some follow back: mutual lists to end as well.
    for fan in FANS[:20]:
        await store.follow(follower=STAR, followee=fan)


async def _until_ended(store: FollowStore, kind: str) -> None:
    deadline = time.monotonic() + RECOVERY
    while True:
        with contextlib.suppress(RedisError):  # the primary is away: so is the change's next step
            if await store.job_progress(STAR) is None:
                return
        assert time.monotonic() < deadline, f"the {kind} did not end within {RECOVERY} s of the kill"
        await asyncio.sleep(0.2)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["delete", "deactivate"])
async def test_a_change_in_batches_ends_on_the_promoted_replica(
    sentinel: LocalSentinel,
    tmp_path: Path,
    kind: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(lifecycle, "ATOMIC_LIMIT", 10)
    monkeypatch.setattr(lifecycle, "BATCH", 10)
    settings = fault_settings(
        tmp_path,
        sentinel.url,
        redis_timeout=1.0,
        request_timeout=4.0,
        follow_rate_limit="off",
        database_url="off",
        search_index=False,
        write_replicas=1,
        write_replicas_timeout=0.5,
    )
    caplog.set_level(logging.WARNING, logger=lifecycle.__name__)
    async with serve(settings) as api:
        await _load(api)
        killer = Killer(sentinel)
        api.store.watch_jobs(killer)
        response = await api.post(MUTATIONS[kind], {"id": STAR}, headers=api.auth("root", admin=True))
        body = response.json()
        # The answer reads the account's state after half the request's time: during the switch
        # that read finds Redis out of reach while the change goes on.
        assert {e["extensions"]["code"] for e in body.get("errors", [])} <= {"SERVICE_UNAVAILABLE"}, body
        assert killer.killed_with_left is not None, "the change ended before the kill"
        await _until_ended(api.store, kind)
        log.info(
            "%s of %d users: the primary killed with %d left, the change ended %.1f s after",
            kind,
            killer.total,
            killer.killed_with_left,
            time.monotonic() - killer.killed_at,
        )
        retried = [r for r in caplog.records if "trying again" in r.getMessage()]
        assert retried, "no step of the change met the failover"

    client = connect(sentinel.url)
    try:
        store = FollowStore(client)
        survivors = FANS + FOLLOWED
        graph = await check_graph(store, survivors, off=[] if kind == "delete" else [STAR])
        assert all(STAR not in graph.following(user) and STAR not in graph.fans(user) for user in survivors)
        if kind == "delete":
            assert await store.account_state(STAR) is None
            assert await keys_naming(client, STAR) == []
        else:
            assert await store.account_state(STAR) is AccountState.SUSPENDED
            # Its own sets kept every follow, to come back on reactivation.
            [counts] = await store.counts([STAR])
            assert (counts.following, counts.fans) == (len(FOLLOWED) + 20, len(FANS))
    finally:
        await client.aclose()
