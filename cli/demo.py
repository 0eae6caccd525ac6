"""A realistic demo graph: power-law fans, a few celebrities, mutuals, months of follow times.

User ids are "1" to "N"; popularity falls with the id (Zipf), so "1" is the biggest celebrity
and README examples can name it.
"""

from __future__ import annotations

import itertools
import random
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from followgraph.store import FollowStore
from followgraph.store.graph.bulk import Edge, UserRow, follow_many, upsert_many
from followgraph.transport.demo_viewer import DEMO_VIEWER

DAY_MS = 86_400_000
BATCH = 2000

_SURNAMES = (
    "Wang Li Zhang Liu Chen Yang Zhao Huang Zhou Wu Xu Sun Hu Zhu Gao Lin He Guo Ma Luo "
    "Smith Garcia Kim Nguyen Silva Müller Rossi Dubois Tanaka Sato Cohen Novak Ivanova Kowalski"
).split()
_GIVEN = (
    "Wei Fang Min Jing Lei Yan Hao Yue Xin Jun Ling Tao Ning Qing Rui Bo Hui Lan Kai Mei "
    "Alex Maria Sam Noah Emma Lucas Mia Leo Sofia Omar Aiko Ivan Ana Jonas Lena Ravi Zoe"
).split()


DEFAULT_USERS = 5000
DEFAULT_SEED = 2026
# The demo's default viewer: `serve --demo` prints their token, and the web app starts as them.


@dataclass(frozen=True, slots=True)
class DemoSpec:
    users: int = DEFAULT_USERS
    mean_following: int = 20
    reciprocity: float = 0.3
    days: int = 180
    zipf: float = 1.0
    seed: int = DEFAULT_SEED


def demo_users(spec: DemoSpec) -> list[UserRow]:
    rng = random.Random(spec.seed)
    return [
        UserRow(
            str(i),
            name=f"{rng.choice(_GIVEN)} {rng.choice(_SURNAMES)}",
            avatar_url=f"https://api.dicebear.com/9.x/thumbs/png?seed=fg{i}",
        )
        for i in range(1, spec.users + 1)
    ]


def demo_edges(spec: DemoSpec, *, now_ms: int) -> Iterator[Edge]:
    """The follows of the demo graph, each once, with times in the last `spec.days` days."""
    for edges in demo_follows(spec, now_ms=now_ms):
        yield from edges


def demo_follows(spec: DemoSpec, *, now_ms: int) -> Iterator[list[Edge]]:
    """demo_edges, user by user: each user's follows (and the follow-backs they get), in the
    order of the users."""
    rng = random.Random(spec.seed + 1)
    n = spec.users
    cumulative = list(itertools.accumulate(1 / (i**spec.zipf) for i in range(1, n + 1)))
    total = cumulative[-1]
    start = now_ms - spec.days * DAY_MS
    seen: set[tuple[int, int]] = set()
    for follower in range(1, n + 1):
        wanted = min(n - 1, max(1, round(rng.expovariate(1 / spec.mean_following))))
        targets: set[int] = set()
        for _ in range(wanted * 3):
            if len(targets) >= wanted:
                break
            target = bisect_left(cumulative, rng.random() * total) + 1
            if target != follower:
                targets.add(target)
        edges: list[Edge] = []
        for target in sorted(targets):
            if (follower, target) in seen:
                continue
            seen.add((follower, target))
            at = rng.randint(start, now_ms)
            edges.append(Edge(str(follower), str(target), at))
            # Small accounts often follow back; celebrities, with thousands of fans, rarely do.
            expected_fans = n * spec.mean_following * (1 / target**spec.zipf) / total
            back = spec.reciprocity * min(1.0, 50 / (1 + expected_fans))
            if (target, follower) not in seen and rng.random() < back:
                seen.add((target, follower))
                edges.append(Edge(str(target), str(follower), rng.randint(at, now_ms)))
        yield edges


async def is_empty(store: FollowStore) -> bool:
    async for _ in store.redis.scan_iter(match=store.keys.pattern("profile"), count=100):
        return False
    return True


async def load_demo(
    store: FollowStore,
    spec: DemoSpec,
    *,
    now_ms: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[int, int]:
    """Write the demo graph; returns (users, follows). `progress(users, follows)` after each batch
    of follows: the users whose follows are written (of `spec.users`), and the follows."""
    users = demo_users(spec)
    for i in range(0, len(users), BATCH):
        await upsert_many(store, users[i : i + BATCH])
    follows = 0
    batch: list[Edge] = []
    done = 0
    for done, edges in enumerate(demo_follows(spec, now_ms=now_ms), start=1):
        batch += edges
        if len(batch) >= BATCH:
            await follow_many(store, batch)
            follows += len(batch)
            batch = []
            if progress:
                progress(done, follows)
    await follow_many(store, batch)
    follows += len(batch)
    if progress:
        progress(done, follows)
    return len(users), follows


# Social controls of the demo, so that GraphiQL and the web app show them. They name users above
# 600, so that small demo graphs keep their plain shape; an action naming a user the graph does not
# have is left out. The web app's demo picker (web/src/app/session/DemoPicker.tsx) offers 701, the
# locked account with requests to answer, beside the default viewer, who asked 700 and blocks and
# mutes: change them together.
DEMO_LOCKED = ("700", "701", "702")
DEMO_HIDE_FOLLOWING = ("703",)
DEMO_HIDE_FANS = ("704",)
# (follower, locked account): requests, pending until answered.
DEMO_REQUESTS = (
    (DEMO_VIEWER, "700"),
    *((str(user), "701") for user in range(705, 716)),
)
# (blocker, blocked)
DEMO_BLOCKS = ((DEMO_VIEWER, "720"), ("721", DEMO_VIEWER))
# (muter, muted)
DEMO_MUTES = ((DEMO_VIEWER, "722"),)


async def load_demo_controls(store: FollowStore, spec: DemoSpec) -> int:
    """Lock, hide, request, block and mute as DEMO_* say, for the users `spec` has; returns how many
    actions were applied."""

    def present(*user_ids: str) -> bool:
        return all(1 <= int(user_id) <= spec.users for user_id in user_ids)

    applied = 0
    for user_id in (u for u in DEMO_LOCKED if present(u)):
        await store.update_settings(user_id, locked=True)
        applied += 1
    for user_id in (u for u in DEMO_HIDE_FOLLOWING if present(u)):
        await store.update_settings(user_id, hide_following=True)
        applied += 1
    for user_id in (u for u in DEMO_HIDE_FANS if present(u)):
        await store.update_settings(user_id, hide_fans=True)
        applied += 1
    for follower, followee in (pair for pair in DEMO_REQUESTS if present(*pair)):
        await store.unfollow(follower=follower, followee=followee)  # a request, not an old follow
        await store.follow(follower=follower, followee=followee)
        applied += 1
    for blocker, blocked in (pair for pair in DEMO_BLOCKS if present(*pair)):
        await store.block(blocker=blocker, blocked=blocked)
        applied += 1
    for muter, muted in (pair for pair in DEMO_MUTES if present(*pair)):
        await store.mute(muter=muter, muted=muted)
        applied += 1
    return applied
