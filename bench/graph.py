"""The benchmark graphs, written straight into Redis with the store's key layout.

The sorted sets are written directly (ZADD / HSET over raw pipelines) instead of through the
FOLLOW script, for speed, but the result is what the store writes: following:F and fans:C hold
the same score (the follow time, epoch ms), a mutual set entry exists on both sides wherever both
directions exist (scored with the later of the two times), and every user has a profile hash
{createdAt, name, avatarUrl} (the order UPSERT_USER writes the fields in).
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import redis

from bench.resp import ClusterPipe, RawPipe, chunks, pack, zadd
from followgraph.store import Keys

# Follow times: fan i followed every celebrity at BASE - i s (plus the celebrity's index in ms),
# so f1 is the newest fan and the first page of every celebrity is f1, f2, ...
BASE_MS = 1_700_000_000_000
VIEWER_FOLLOWS_MS = BASE_MS + 10_000_000
FOLLOWS_VIEWER_MS = BASE_MS + 20_000_000
CREATED_MS = BASE_MS - 400 * 86_400_000
ZADD_CHUNK = 1000

VIEWER = "viewer"
# The viewer follows every 3rd and is followed by every 5th of the first VIEWER_SPAN fans.
VIEWER_SPAN = 3000
VIEWER_FOLLOWS_EVERY = 3
FOLLOWS_VIEWER_EVERY = 5


def label(size: int) -> str:
    """1000 -> '1k', 100000 -> '100k', 1000000 -> '1m'."""
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f"{size // 1_000_000}m"
    if size >= 1000 and size % 1000 == 0:
        return f"{size // 1000}k"
    return str(size)


def fan_id(i: int) -> str:
    return f"f{i}"


def profile_command(keys: Keys, user_id: str, name: str) -> bytes:
    return pack(
        "HSET", keys.profile(user_id),
        "createdAt", CREATED_MS,
        "name", name,
        "avatarUrl", f"https://avatars.example.com/{user_id}.png",
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Celebrity:
    user_id: str
    fans: int
    index: int

    @property
    def label(self) -> str:
        return label(self.fans)


@dataclass(frozen=True, slots=True)
class FanGraph:
    """Celebrities sharing one fan population f1..fN, a viewer with mixed relationships, writers."""

    sizes: tuple[int, ...]
    writers: tuple[str, ...]
    celebrities: tuple[Celebrity, ...] = field(init=False)

    def __post_init__(self) -> None:
        celebrities = tuple(Celebrity(f"c{label(n)}", n, i) for i, n in enumerate(sorted(self.sizes)))
        object.__setattr__(self, "celebrities", celebrities)

    @property
    def population(self) -> int:
        return max(self.sizes)

    def celebrity(self, size: int) -> Celebrity:
        return next(c for c in self.celebrities if c.fans == size)

    @staticmethod
    def fan_time(celebrity: Celebrity, i: int) -> int:
        return BASE_MS - i * 1000 + celebrity.index

    def viewer_follows(self) -> list[int]:
        return list(range(VIEWER_FOLLOWS_EVERY, VIEWER_SPAN + 1, VIEWER_FOLLOWS_EVERY))

    def follows_viewer(self) -> list[int]:
        return list(range(FOLLOWS_VIEWER_EVERY, VIEWER_SPAN + 1, FOLLOWS_VIEWER_EVERY))

    def expected_relationship(self, i: int) -> str:
        out = i <= VIEWER_SPAN and i % VIEWER_FOLLOWS_EVERY == 0
        back = i <= VIEWER_SPAN and i % FOLLOWS_VIEWER_EVERY == 0
        return {(True, True): "MUTUAL", (True, False): "FOLLOWING", (False, True): "FOLLOWED_BY"}.get(
            (out, back), "NONE"
        )

    @property
    def edges(self) -> int:
        return sum(self.sizes) + len(self.viewer_follows()) + len(self.follows_viewer())


@dataclass(frozen=True, slots=True)
class LoadReport:
    users: int
    edges: int
    commands: int
    round_trips: int
    seconds: float

    @property
    def edges_per_second(self) -> float:
        return self.edges / self.seconds if self.seconds else 0.0


def fan_graph_users(graph: FanGraph) -> Iterator[tuple[str, str]]:
    """(user id, name) of every registered user."""
    yield from ((c.user_id, f"Celebrity {c.label}") for c in graph.celebrities)
    yield VIEWER, "The Viewer"
    yield from ((w, f"Writer {w}") for w in graph.writers)
    yield from ((fan_id(i), f"Fan {i}") for i in range(1, graph.population + 1))


def fan_graph_edges(graph: FanGraph) -> Iterator[tuple[str, str, int]]:
    """(follower, followee, follow time) of every follow: what the store's FOLLOW would be given."""
    for c in graph.celebrities:
        for i in range(1, c.fans + 1):
            yield fan_id(i), c.user_id, graph.fan_time(c, i)
    for i in graph.viewer_follows():
        yield VIEWER, fan_id(i), VIEWER_FOLLOWS_MS - i
    for i in graph.follows_viewer():
        yield fan_id(i), VIEWER, FOLLOWS_VIEWER_MS - i


def open_pipe(host: str, port: int, *, cluster: bool = False, db: int = 0) -> RawPipe | ClusterPipe:
    """Raw pipelines to one Redis, or to every master of the cluster that `host:port` belongs to."""
    return ClusterPipe(host, port) if cluster else RawPipe(host, port, db=db)


def load_fan_graph(
    graph: FanGraph,
    host: str,
    port: int,
    *,
    db: int = 0,
    cluster: bool = False,
    keys: Keys | None = None,
    progress: Callable[[str], None] = lambda step: None,
) -> LoadReport:
    """Write `graph` with raw pipelines: the sets of fan_graph_edges, as FOLLOW would leave them."""
    k = keys or Keys()
    started = time.perf_counter()
    users = 0
    with open_pipe(host, port, cluster=cluster, db=db) as pipe:
        progress("profiles")
        for user_id, name in fan_graph_users(graph):
            pipe.add(profile_command(k, user_id, name))
            users += 1
        # following:fi holds every celebrity fi follows, with the time fans:c has for fi.
        progress("following sets")
        for i in range(1, graph.population + 1):
            followed = [(graph.fan_time(c, i), c.user_id) for c in graph.celebrities if i <= c.fans]
            pipe.add(zadd(k.following(fan_id(i)), followed))
        progress("fans sets")
        for c in graph.celebrities:
            for start in range(1, c.fans + 1, ZADD_CHUNK):
                stop = min(start + ZADD_CHUNK, c.fans + 1)
                entries = ((graph.fan_time(c, i), fan_id(i)) for i in range(start, stop))
                pipe.add(zadd(k.fans(c.user_id), entries))
        # The viewer: follows every 3rd, followed by every 5th; mutual where both (every 15th).
        progress("viewer")
        out = {i: VIEWER_FOLLOWS_MS - i for i in graph.viewer_follows()}
        back = {i: FOLLOWS_VIEWER_MS - i for i in graph.follows_viewer()}
        pipe.add(zadd(k.following(VIEWER), [(t, fan_id(i)) for i, t in out.items()]))
        pipe.add(zadd(k.fans(VIEWER), [(t, fan_id(i)) for i, t in back.items()]))
        for i, t in out.items():
            pipe.add(zadd(k.fans(fan_id(i)), [(t, VIEWER)]))
        for i, t in back.items():
            pipe.add(zadd(k.following(fan_id(i)), [(t, VIEWER)]))
        mutual = {i: max(out[i], back[i]) for i in out if i in back}
        pipe.add(zadd(k.mutual(VIEWER), [(t, fan_id(i)) for i, t in mutual.items()]))
        for i, t in mutual.items():
            pipe.add(zadd(k.mutual(fan_id(i)), [(t, VIEWER)]))
        pipe.flush()
        commands, round_trips = pipe.commands, pipe.round_trips
    return LoadReport(users, graph.edges, commands, round_trips, time.perf_counter() - started)


# -- the "typical" graph of the memory measurement ------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypicalGraph:
    """`users` users following `per_user` each: some within a small community (which makes
    mutual pairs), some popular accounts (Zipf), the rest uniformly at random."""

    users: int
    per_user: int = 10
    community: int = 20
    in_community: int = 3
    popular: int = 3
    seed: int = 20_240_601

    def user_id(self, n: int) -> str:
        return f"m{n}"

    def edges(self) -> list[tuple[int, int, int]]:
        """(follower, followee, time) for every follow; no self-follows, no duplicates."""
        rng = random.Random(self.seed)
        n = self.users
        weights: list[float] = []
        total = 0.0
        for rank in range(1, n + 1):
            total += 1.0 / rank
            weights.append(total)
        population = range(n)
        popular = rng.choices(population, cum_weights=weights, k=n * self.popular)
        now = BASE_MS
        year = 365 * 86_400_000
        edges: list[tuple[int, int, int]] = []
        for u in range(n):
            chosen: set[int] = set()
            block = (u // self.community) * self.community
            neighbours = [v for v in range(block, min(block + self.community, n)) if v != u]
            chosen.update(rng.sample(neighbours, min(self.in_community, len(neighbours))))
            chosen.update(v for v in popular[u * self.popular : (u + 1) * self.popular] if v != u)
            while len(chosen) < self.per_user:
                v = rng.randrange(n)
                if v != u:
                    chosen.add(v)
            edges += [(u, v, now - rng.randrange(year)) for v in chosen]
        return edges


def load_typical_graph(
    graph: TypicalGraph,
    host: str,
    port: int,
    *,
    used_memory: Callable[[], int],
    cluster: bool = False,
    keys: Keys | None = None,
) -> tuple[int, int, dict[str, int]]:
    """Load `graph` stage by stage; returns (edges, mutual pairs, used_memory growth per stage)."""
    k = keys or Keys()
    edges = graph.edges()
    uid = graph.user_id
    by_follower: defaultdict[int, list[tuple[int, str]]] = defaultdict(list)
    by_followee: defaultdict[int, list[tuple[int, str]]] = defaultdict(list)
    times: dict[tuple[int, int], int] = {}
    for a, b, t in edges:
        by_follower[a].append((t, uid(b)))
        by_followee[b].append((t, uid(a)))
        times[(a, b)] = t
    mutual: defaultdict[int, list[tuple[int, str]]] = defaultdict(list)
    pairs = 0
    for (a, b), t in times.items():
        back = times.get((b, a))
        if back is not None:
            mutual[a].append((max(t, back), uid(b)))
            pairs += 1
    growth: dict[str, int] = {}

    def stage(name: str, commands: Iterable[bytes]) -> None:
        before = used_memory()
        with open_pipe(host, port, cluster=cluster) as pipe:
            pipe.send_all(commands)
        growth[name] = used_memory() - before

    stage("following", (zadd(k.following(uid(a)), rows) for a, rows in by_follower.items()))
    stage(
        "fans",
        (
            zadd(k.fans(uid(b)), chunk)
            for b, rows in by_followee.items()
            for chunk in chunks(rows, ZADD_CHUNK)
        ),
    )
    stage("mutual", (zadd(k.mutual(uid(a)), rows) for a, rows in mutual.items()))
    stage("profiles", (profile_command(k, uid(u), f"User {u}") for u in range(graph.users)))
    return len(edges), pairs // 2, growth


def wait_until_indexed(host: str, port: int, *, cluster: bool = False, timeout: float = 900.0) -> float:
    """Wait until a server started on the graph has built its search index (once, from every
    profile: reads and writes that would otherwise fall on the first scenarios measured, on a
    cluster more than on one Redis); the seconds waited."""
    started = time.perf_counter()
    client: redis.Redis | redis.RedisCluster = (
        redis.RedisCluster(host=host, port=port) if cluster else redis.Redis(host=host, port=port)
    )
    try:
        while not client.exists(Keys().search_built()):
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"the search index of {host}:{port} was not built in {timeout:g} s")
            time.sleep(0.2)
    finally:
        client.close()
    return time.perf_counter() - started
