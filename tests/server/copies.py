"""What the SQL copy's suites share: a random stream of changes and waiting for the copy."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from followgraph.server.sync import GROUP, SqlSync
from followgraph.store import BlockedError, FollowStore
from followgraph.store.sql import mirror
from followgraph.store.sql.snapshot import counts
from tests.served import Served

USERS = [f"u{i}" for i in range(12)]


async def register(store: FollowStore, users: list[str] = USERS) -> None:
    for user in users:
        await store.upsert_user(user, name=f"User {user}")


async def random_changes(store: FollowStore, rng: random.Random, steps: int) -> None:
    """Follows, unfollows, fan removals, blocks, mutes, settings and requests with their answers."""
    for _ in range(steps):
        a, b = rng.sample(USERS, 2)
        action = rng.random()
        try:
            if action < 0.35:
                await store.follow(follower=a, followee=b)
            elif action < 0.45:
                await store.unfollow(follower=a, followee=b)
            elif action < 0.5:
                await store.remove_fan(user=a, fan=b)
            elif action < 0.56:
                await store.block(blocker=a, blocked=b)
            elif action < 0.6:
                await store.unblock(blocker=a, blocked=b)
            elif action < 0.66:
                await store.mute(muter=a, muted=b, on=rng.random() < 0.7)
            elif action < 0.72:
                await store.update_settings(
                    a, locked=rng.random() < 0.5, hide_fans=rng.choice([None, True, False])
                )
            elif action < 0.8:
                await store.accept_request(user=a, requester=b)
            elif action < 0.85:
                await store.reject_request(user=a, requester=b)
            else:
                await store.upsert_user(a, name=f"User {a} {rng.randrange(5)}")
        except BlockedError:
            pass


async def caught_up(feeder: SqlSync, timeout: float = 60) -> None:
    """Wait until the copy has applied every event. On a cluster a slot's stream appears with its
    first event and consumers look for new ones every few seconds: look now. On a timeout the
    error holds each stream's state, to tell a stuck consumer from a lag measured wrong."""
    await feeder.log.streams(fresh=True)
    try:
        async with asyncio.timeout(timeout):
            while (await feeder.measure()).events:
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"the copy did not catch up: {await _log_state(feeder)}") from None


async def _log_state(feeder: SqlSync) -> dict[str, object]:
    redis = feeder.store.redis
    state: dict[str, object] = {"lag": await feeder.measure(), "consumer": feeder.options.consumer}
    for stream in await feeder.log.streams(fresh=True):
        groups = await redis.execute_command("XINFO", "GROUPS", stream)
        pending = await redis.execute_command("XPENDING", stream, GROUP)
        state[stream] = {"length": await redis.xlen(stream), "groups": groups, "pending": pending}
    return state


async def differences(store: FollowStore, engine: AsyncEngine) -> mirror.Differences:
    return mirror.compare(await mirror.read_sql(engine), await mirror.read_redis(store))


async def poll(check: Callable[[], Awaitable[bool]], timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.01)


async def copied_between(engine: AsyncEngine, low: int, high: int) -> bool:
    """Whether the copy holds between `low` and `high` current follows."""
    return low <= (await counts(engine)).follows <= high


async def copy_differences(served: Served) -> mirror.Differences:
    """How the SQL copy `served` feeds differs from its Redis, once the copy has caught up."""
    feeder = served.app.state.sync
    await caught_up(feeder)
    assert feeder.engine is not None
    return await differences(served.store, feeder.engine)
