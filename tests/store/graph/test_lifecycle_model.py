"""Model-based test of account lifecycles: random follows, unfollows, fan removals, blocks,
deactivations, suspensions, reactivations and deletions against a plain model, on real Redis, the
real cluster and fakeredis, in one script and in batches.

After every step: every active user's following, fans and mutual lists (members and times) and
counts are the model's, which names no account that is off; after a deletion no key or member
names the user; `verify` is clean now and then and at the end, when every account comes back on and
must have exactly the follows nothing ended. Then the change log, applied to a SQL copy (SQLite),
makes a copy `reconcile` finds equal to Redis: a deletion left no row, a deactivation kept them.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from followgraph.store import (
    AccountInactiveError,
    AccountState,
    BlockedError,
    FollowStore,
    ListKind,
    StoreError,
    UserNotFoundError,
)
from followgraph.store.graph import lifecycle
from followgraph.store.graph.repair import verify
from followgraph.store.log.stream import EventLog
from followgraph.store.redis.lua import Client
from followgraph.store.sql import mirror
from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.engine import create_engine
from followgraph.store.sql.migrate import migrate
from tests.store.graph.test_lifecycle import keys_naming

USERS = ("u0", "u1", "u2", "u3", "u4", "u5")
STEPS = 150
ON = AccountState.ACTIVE


@dataclass
class Model:
    # Each user's state; None once deleted.
    state: dict[str, AccountState | None] = field(default_factory=lambda: dict.fromkeys(USERS, ON))
    # Every follow nothing ended, kept ones included: (follower, followee) -> time.
    follows: dict[tuple[str, str], int] = field(default_factory=dict)
    blocks: set[tuple[str, str]] = field(default_factory=set)

    def on(self, user: str) -> bool:
        return self.state[user] is ON

    def following(self, user: str) -> dict[str, int]:
        return {b: at for (a, b), at in self.follows.items() if a == user and self.on(b)}

    def fans(self, user: str) -> dict[str, int]:
        return {a: at for (a, b), at in self.follows.items() if b == user and self.on(a)}

    def mutual(self, user: str) -> dict[str, int]:
        fans = self.fans(user)
        return {b: max(at, fans[b]) for b, at in self.following(user).items() if b in fans}

    def forget(self, user: str) -> None:
        self.state[user] = None
        self.follows = {pair: at for pair, at in self.follows.items() if user not in pair}
        self.blocks = {pair for pair in self.blocks if user not in pair}


@pytest.fixture(params=["one script", "batches"])
async def users(
    request: pytest.FixtureRequest, store: FollowStore, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[FollowStore]:
    if request.param == "batches":
        monkeypatch.setattr(lifecycle, "ATOMIC_LIMIT", 0)
        monkeypatch.setattr(lifecycle, "BATCH", 2)
    for user_id in USERS:
        await store.upsert_user(user_id, name=user_id)
    yield store


async def expect(error: type[StoreError] | None, call: object) -> None:
    if error is None:
        await call  # type: ignore[misc]
        return
    with pytest.raises(error):
        await call  # type: ignore[misc]


async def step(s: FollowStore, m: Model, rng: random.Random, at: int) -> str:
    error: type[StoreError] | None
    a, b = rng.sample(USERS, 2)
    kind = rng.choice(
        ["follow"] * 6 + ["unfollow", "remove_fan", "block", "deactivate", "suspend"]
        + ["reactivate"] * 2 + ["unsuspend", "delete"]
    )  # fmt: skip
    known = m.state[a] is not None
    if not known and rng.random() < 0.5:  # the id is taken again: a new account, with nothing
        await s.upsert_user(a, name=a)
        m.state[a] = ON
        return f"register {a}"
    if kind == "follow":
        blocked = (a, b) in m.blocks or (b, a) in m.blocks
        error = UserNotFoundError if not (m.on(a) and m.on(b)) else BlockedError if blocked else None
        await expect(error, s.follow(follower=a, followee=b, at=at))
        if error is None:
            m.follows.setdefault((a, b), at)
    elif kind in ("unfollow", "remove_fan"):
        follower, followee, actor, other = (a, b, a, b) if kind == "unfollow" else (b, a, a, b)
        call = s.unfollow(follower=a, followee=b) if kind == "unfollow" else s.remove_fan(user=a, fan=b)
        await expect(None if m.on(a) and m.on(b) else UserNotFoundError, call)
        # An active user ends a follow the other's account keeps while it is off.
        if m.on(actor) and m.state[other] is not None:
            m.follows.pop((follower, followee), None)
    elif kind == "block":
        await expect(None if m.on(a) and m.on(b) else UserNotFoundError, s.block(blocker=a, blocked=b))
        if m.on(a) and m.on(b):
            m.blocks.add((a, b))
            m.follows.pop((a, b), None)
            m.follows.pop((b, a), None)
    elif kind in ("deactivate", "suspend"):
        state = AccountState.DEACTIVATED if kind == "deactivate" else AccountState.SUSPENDED
        await expect(None if known else UserNotFoundError, s.deactivate(a, state=state))
        if m.on(a) or (m.state[a] is AccountState.DEACTIVATED and state is AccountState.SUSPENDED):
            m.state[a] = state
    elif kind in ("reactivate", "unsuspend"):
        lifting = AccountState.DEACTIVATED if kind == "reactivate" else AccountState.SUSPENDED
        had = m.state[a]
        error = (
            UserNotFoundError if had is None
            else None if had in (ON, lifting)
            else AccountInactiveError
        )  # fmt: skip
        await expect(error, s.reactivate(a, lifting=lifting))
        if had is lifting:
            m.state[a] = ON
    else:
        await expect(None if known else UserNotFoundError, s.delete_account(a))
        m.forget(a)
    return f"{kind} {a} {b}"


async def check(s: FollowStore, m: Model, redis: Client, what: str) -> None:
    on = [u for u in USERS if m.on(u)]
    kinds = (ListKind.FOLLOWING, ListKind.FANS, ListKind.MUTUAL)
    pages = await s.pages([s.list_query(kind, u, first=50) for u in on for kind in kinds])
    found = iter(pages)
    counts = await s.counts(on)
    for user, count in zip(on, counts, strict=True):
        for kind, expected in zip(kinds, (m.following(user), m.fans(user), m.mutual(user)), strict=True):
            page = next(found)
            assert {e.user_id: e.at for e in page.entries} == expected, (what, kind, user)
        assert (count.following, count.fans, count.mutual) == (
            len(m.following(user)),
            len(m.fans(user)),
            len(m.mutual(user)),
        ), (what, user)
    for user in USERS:
        state = await s.account_state(user)
        assert state is m.state[user], (what, user)


async def sql_copy_differences(s: FollowStore, path: Path) -> dict[str, int]:
    """What `reconcile` finds between Redis and a copy made from the whole change log."""
    url = f"sqlite+aiosqlite:///{path}"
    await migrate(url)
    engine = create_engine(url)
    try:
        log, after, events = EventLog(s), None, []
        while batch := await log.read(after, count=5000):
            events += batch
            after = batch[-1].id
        await apply_events(engine, events)
        return mirror.compare(await mirror.read_sql(engine), await mirror.read_redis(s)).counts
    finally:
        await engine.dispose()


@pytest.mark.parametrize("seed", range(5))
async def test_random_lifecycles_keep_every_list_exact(
    users: FollowStore, backend: Client, seed: int, tmp_path: Path
) -> None:
    s, m, rng = users, Model(), random.Random(seed)
    for n in range(STEPS):
        what = await step(s, m, rng, 1_000 + n)
        await check(s, m, backend, what)
        if what.startswith("delete"):
            gone = what.split()[1]
            assert await keys_naming(backend, gone) == [], what
        if n % 15 == 14:
            assert (await verify(s)).clean, what
    # Every account back on: exactly the follows nothing ended, with their times.
    for user, state in m.state.items():
        if state is not None and state is not ON:
            await s.reactivate(user, lifting=state)
            m.state[user] = ON
    await check(s, m, backend, "all back on")
    assert (await verify(s)).clean
    assert await sql_copy_differences(s, tmp_path / "copy.db") == {}
