"""A failover under load, Jepsen-style: concurrent follow and unfollow writers through the API, on a
primary watched by three Sentinels (server/redis_sentinel.py); the primary SIGKILLed (or frozen
with SIGSTOP for longer than the Sentinels' down-after, then let go) mid-load; then every
acknowledged write checked against the final graph, and the SQL copy, fed from the change log by
the server through the failover, against the graph. How the writes are recorded and checked is
tests/faults/history.py's.

With FOLLOWGRAPH_WRITE_REPLICAS=1 none may be lost and the copy must equal the graph (asserted);
with 0 what was lost, and how the copy differs, is reported, not asserted. Each run logs its
figures (docs/production.md, "Failover", has a table of them):

    .venv/bin/pytest tests/faults/test_failover.py -p no:randomly -o log_cli=true --log-cli-level=INFO
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import redis

from followgraph.server.redis_client import connect
from followgraph.server.redis_sentinel import LocalSentinel
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.replicas import WRITE_NOT_REPLICATED
from tests.faults.history import Edge, Operation, Run, allowed, write, writer
from tests.faults.support import check_graph, fault_settings
from tests.served import Served, serve
from tests.server.copies import copy_differences
from tests.server.processes import free_ports

log = logging.getLogger(__name__)

USERS = [f"j{i:02}" for i in range(16)]
WRITERS = 8
# Follows sent at once to a frozen primary let go (each on an edge of its own).
SPIKE = 48
DOWN_AFTER_MS = 1000
# Writes before the fault, and after they succeed again.
BEFORE = 1.5
AFTER = 2.0
# A run gives up waiting for writes to succeed again after this long: a Sentinel election that
# ends without a leader is tried again after twice the failover timeout (10 s here), and a
# loaded machine can need two.
RECOVERY = 45.0
VIEWER = "{ viewer { userId followingCount } }"


@dataclass(frozen=True)
class Scenario:
    """What a run does: the writes wait for `write_replicas`, the primary has `replicas`, and the
    fault is a SIGKILL ("kill") or a SIGSTOP of three down-afters ("stop"); `heal` starts the
    killed primary again, as a replica, once the Sentinels have moved on."""

    write_replicas: int
    replicas: int
    fault: str
    heal: bool = False

    def __str__(self) -> str:
        extra = ", the old primary back as a replica" if self.heal else ""
        return f"WRITE_REPLICAS={self.write_replicas}, {self.replicas} replica(s), {self.fault}{extra}"


SCENARIOS = [
    Scenario(0, 1, "kill"),
    Scenario(1, 2, "kill"),
    Scenario(1, 1, "kill", heal=True),
    Scenario(0, 1, "stop"),
    Scenario(1, 1, "stop"),
]


def _sentinel_logs(sentinel: LocalSentinel) -> str:
    """What each Sentinel logged of late (its votes, a failover begun or given up)."""
    tails = []
    for watcher in sentinel.sentinels:
        text = watcher.log_path.read_text(errors="replace") if watcher.log_path.exists() else ""
        tails.append(f"-- Sentinel {watcher.port}:\n" + "\n".join(text.splitlines()[-25:]))
    return "\n".join(tails)


async def fault(
    sentinel: LocalSentinel, scenario: Scenario, run: Run, quiet: Served, spike: list[Edge]
) -> None:
    """Kill or freeze the primary, and see the failover through. A frozen one, once let go, gets
    a spike of follows (on the `spike` edges) through `quiet`, a server process that sent nothing
    while it was frozen: its pooled connections are still the old primary's."""
    old = sentinel.primary_port()
    assert old is not None
    primary = sentinel.server(old)
    assert primary.process is not None
    pid = primary.process.pid
    run.fault_at = time.monotonic()
    if scenario.fault == "kill":
        await asyncio.to_thread(primary.kill)
    else:
        os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + RECOVERY
    while await asyncio.to_thread(sentinel.primary_port) in (old, None):
        assert time.monotonic() < deadline, "the Sentinels did not fail over:\n" + _sentinel_logs(sentinel)
        await asyncio.sleep(0.1)
    if scenario.fault == "stop":
        # Let go: the old primary answers its clients again until the Sentinels make it a replica.
        await asyncio.sleep(DOWN_AFTER_MS / 1000)
        os.kill(pid, signal.SIGCONT)
        await asyncio.gather(*(write(quiet, edge, "follow", run) for edge in spike))
    elif scenario.heal:
        assert await asyncio.to_thread(sentinel.heal) == [old]


@pytest.fixture(params=SCENARIOS, ids=str)
def scenario(request: pytest.FixtureRequest) -> Scenario:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def sentinel(tmp_path: Path, scenario: Scenario) -> Iterator[LocalSentinel]:
    ports = tuple(free_ports(1 + scenario.replicas + 3))
    with LocalSentinel(
        tmp_path / "ha", ports, replicas=scenario.replicas, down_after_ms=DOWN_AFTER_MS
    ) as local:
        yield local


@pytest.mark.slow
async def test_no_acknowledged_write_is_lost_in_a_failover(
    sentinel: LocalSentinel, scenario: Scenario, tmp_path: Path
) -> None:
    rng = random.Random(20261205)
    settings: Settings = fault_settings(
        tmp_path,
        sentinel.url,
        redis_timeout=1.0,
        follow_rate_limit="off",
        # The SQL copy, fed by `api` alone, follows the failover too.
        database_url=f"sqlite:///{tmp_path / 'copy.sqlite3'}",
        search_index=False,
        write_replicas=scenario.write_replicas,
        write_replicas_timeout=0.5,
    )
    edges = [(a, b) for a in USERS for b in USERS if a != b]
    rng.shuffle(edges)
    run = Run({edge: [] for edge in edges})
    async with serve(settings) as api, serve(replace(settings, sync=False)) as quiet:
        for user in USERS:
            await api.store.upsert_user(user, name=f"User {user}")
        async with asyncio.timeout(BEFORE + RECOVERY * 2 + AFTER + 10):
            spike, steady = edges[:SPIKE], edges[SPIKE:]
            tasks = [
                asyncio.create_task(writer(api, steady[i::WRITERS], run, random.Random(rng.random())))
                for i in range(WRITERS)
            ]
            await asyncio.sleep(BEFORE)
            # The quiet process's reads leave connections idle in its pool, as a busy server has.
            await asyncio.gather(*(quiet.post(VIEWER, as_user=user) for user in USERS * 2))
            await fault(sentinel, scenario, run, quiet, spike)
            while run.back_after() is None:
                assert time.monotonic() - run.fault_at < RECOVERY, f"writes did not come back: {run.failures}"
                await asyncio.sleep(0.1)
            await asyncio.sleep(AFTER)
            run.stop = True
            await asyncio.gather(*tasks)
        if scenario.fault == "stop":
            await _demoted(sentinel)
        # The copy, caught up on the new primary's log, against the graph Redis holds.
        diverged = await copy_differences(api)
    client = connect(sentinel.url)
    try:
        graph = await check_graph(FollowStore(client), USERS)
    finally:
        await client.aclose()
    lost = run.lost(graph.edges())
    acknowledged = run.acknowledged()
    back = run.back_after()
    assert back is not None
    log.info(
        "%s: %d writes acknowledged, %d failed (%s), writes back %.1f s after the fault, "
        "%d acknowledged writes lost, SQL copy %s",
        scenario,
        acknowledged,
        run.failed(),
        run.failure_codes(),
        back,
        len(lost),
        "equal to Redis" if diverged.total == 0 else f"diverged: {diverged.counts}",
    )
    assert acknowledged > 100, acknowledged
    if scenario.write_replicas:
        assert not lost, f"acknowledged writes lost: {lost[:10]}"
        assert diverged.total == 0, diverged.examples
        if scenario.replicas == 1 and scenario.fault == "stop":
            assert run.failures.get(WRITE_NOT_REPLICATED, 0) > 0, run.failures


async def _demoted(sentinel: LocalSentinel) -> None:
    """Until every Redis of the set but the primary is a replica (the frozen one made one again)."""
    deadline = time.monotonic() + RECOVERY
    primary = sentinel.primary_port()
    for server in sentinel.servers:
        if server.port == primary:
            continue
        node = redis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
        try:
            while node.info("replication").get("master_link_status") != "up":
                assert time.monotonic() < deadline, f"the Redis on {server.port} did not become a replica"
                await asyncio.sleep(0.1)
        finally:
            node.close()


def test_an_edge_may_be_as_its_last_acknowledged_write_left_it_or_as_a_later_failed_one() -> None:
    def op(kind: str, acknowledged: bool) -> Operation:
        return Operation(kind, 0.0, 0.0, acknowledged)

    assert allowed([]) == {False}
    assert allowed([op("follow", True)]) == {True}
    assert allowed([op("follow", True), op("unfollow", False)]) == {True, False}
    assert allowed([op("follow", False), op("unfollow", True)]) == {False}
    assert allowed([op("unfollow", True), op("follow", False), op("follow", False)]) == {False, True}
