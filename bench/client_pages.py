"""A fans page's Redis reads through one client, in a process of its own (for bench/clients.py).

`python -m bench.client_pages --client NAME --port P [--cluster] --owner U --viewer V` reads the
page that server A reads for make bench's fans page, with the same commands: the PAGE script with
the owner's rules, then the page's users' profiles (the owner's and its 20 users', an HMGET each)
and the viewer's two ZMSCOREs in one round trip. CONCURRENCY coroutines read pages one after
another, first for the warm-up, then for the measured seconds; it prints one JSON line: the pages
read, the process's CPU seconds over them (every thread's: GLIDE runs its Rust core on threads of
its own), the pages' latency percentiles, and a digest of the page read, which the harness compares
between clients.

The clients (CLIENTS): FollowGraph's read channel as the server runs it (profiles kept until Redis
says they changed: a hot page's profiles cost a PING), the same channel sending the commands GLIDE
sends (an HMGET a profile), and Valkey GLIDE's asyncio client with the second round trip as one
non-atomic batch or as commands awaited together on its multiplexed connection, or with the
profiles read by HGETALL through its client-side cache (server-assisted: CLIENT TRACKING BCAST).
On a cluster the channel is store/redis/cluster_channel.py's and GLIDE's the cluster client; each
routes a command to its key's slot.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import uvloop
from glide import (
    Batch,
    ClientSideCache,
    ClusterBatch,
    GlideClient,
    GlideClientConfiguration,
    GlideClusterClient,
    GlideClusterClientConfiguration,
    NodeAddress,
    Script,
)
from redis.asyncio import RedisCluster

from bench.loadgen import percentile
from followgraph.store import Keys
from followgraph.store.graph.scripts import (
    PAGE,
    PAGE_SCRIPT,
    PROFILE_FIELDS,
    PROFILE_READ,
    PROFILE_READS,
    RELATION_READ,
)
from followgraph.store.redis.channel import Address, ReadChannel
from followgraph.store.redis.cluster_channel import ClusterReadChannel
from followgraph.store.redis.keeping_channel import KeepingReadChannel
from followgraph.store.redis.lua import ScriptCall
from followgraph.store.redis.tracking import DEFAULT_CAPACITY

# What each client is, as the report names it.
CLIENTS = {
    "channel": "FollowGraph's read channel (profiles kept, as the server runs it)",
    "channel-hmget": "FollowGraph's read channel, an HMGET a profile (GLIDE's commands)",
    "glide-batch": "GLIDE, the second round trip one non-atomic batch",
    "glide-gather": "GLIDE, the second round trip's commands awaited together",
    "glide-cached": "GLIDE, profiles by HGETALL from its client-side cache, awaited together",
}
# GLIDE's cache for the glide-cached client: about what FOLLOWGRAPH_PROFILE_CACHE's 20,000 profiles
# take, kept until Redis' tracking (BCAST: every key's changes) says they changed.
CACHE_KB = 10_240
# GLIDE's default request timeout is 250 ms; the channel's is FOLLOWGRAPH_REDIS_TIMEOUT's 5 s.
TIMEOUT_MS = 5000
_NAME = PROFILE_FIELDS.index("name")


@dataclass(frozen=True, slots=True)
class PageSpec:
    """Whose fans page, seen by whom; the keys and arguments of its reads."""

    owner: str
    viewer: str
    first: int = 20

    def page_call(self, keys: Keys) -> tuple[list[str], list[str | int]]:
        """The PAGE script's keys and arguments, as the store's page of a guarded list has them."""
        owner = self.owner
        return (
            [keys.fans(owner), keys.profile(owner), keys.fans(owner), keys.blocking(owner)],
            ["first", "0", "", "", self.first, self.viewer, "hideFans"],
        )


@dataclass(frozen=True, slots=True)
class Measured:
    client: str
    pages: int
    # Every page read, the warm-up's and the first included: what Redis counted commands over.
    all_pages: int
    cpu_seconds: float
    wall_seconds: float
    p50_ms: float
    p99_ms: float
    digest: str
    threads: int

    @property
    def cpu_us_per_page(self) -> float:
        return 1e6 * self.cpu_seconds / self.pages if self.pages else 0.0


class PageReads(Protocol):
    """The page's two round trips through one client."""

    async def page(self, keys: list[str], args: list[str | int]) -> list[Any]:
        """The PAGE script's reply."""
        ...

    async def details(
        self, profile_keys: list[str], relation_keys: list[str], ids: list[str]
    ) -> tuple[list[list[Any]], list[list[Any]]]:
        """In one round trip: each profile's PROFILE_FIELDS, and a ZMSCORE of `ids` in each of
        `relation_keys`."""
        ...

    async def close(self) -> None: ...


def text(value: Any) -> Any:
    """A reply with bytes made str (GLIDE answers bytes, the channel str)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [text(item) for item in value]
    return value


async def read_page(reads: PageReads, spec: PageSpec, keys: Keys) -> list[tuple[Any, ...]]:
    """One page: (member, follow time, viewer follows it, it follows the viewer, name) an entry."""
    page_keys, page_args = spec.page_call(keys)
    _total, _start, _stop, flat, hidden = await reads.page(page_keys, page_args)
    if hidden:
        return []
    ids = [text(member) for member in flat[0::2]]
    relation_keys = [keys.following(spec.viewer), keys.fans(spec.viewer)]
    profiles, (out, back) = await reads.details(keys.profiles([spec.owner, *ids]), relation_keys, ids)
    return [
        (member, text(at), followed is not None, fan is not None, text(profile[_NAME]))
        for member, at, followed, fan, profile in zip(ids, flat[1::2], out, back, profiles[1:], strict=True)
    ]


def digest(entries: list[tuple[Any, ...]]) -> str:
    """A short digest of a page's entries (scores as integers: RESP3 answers them as numbers)."""
    canonical = [(m, int(float(at)), f, b, name) for m, at, f, b, name in entries]
    return hashlib.sha1(json.dumps(canonical).encode()).hexdigest()[:12]


# -- FollowGraph's read channel ------------------------------------------------------------------


class ChannelReads:
    """The store's calls, as it makes them on the channel it was given."""

    def __init__(self, channel: ReadChannel | ClusterReadChannel, *, kept: bool) -> None:
        self.channel = channel
        self.kept = kept
        self.cluster = isinstance(channel, ClusterReadChannel)

    async def page(self, keys: list[str], args: list[str | int]) -> list[Any]:
        [reply] = await self.channel.run_scripts([(PAGE_SCRIPT, keys, args)])
        return list(reply)

    async def details(
        self, profile_keys: list[str], relation_keys: list[str], ids: list[str]
    ) -> tuple[list[list[Any]], list[list[Any]]]:
        relations: list[ScriptCall] = [(RELATION_READ, [key], ids) for key in relation_keys]
        if self.kept or self.cluster:  # a keyed read: an HMGET a key on its slot, or none when kept
            profiles, *scores = await self.channel.run_scripts(
                [(PROFILE_READS, profile_keys, []), *relations]
            )
            return profiles, scores
        replies = await self.channel.run_scripts(
            [*((PROFILE_READ, [key], []) for key in profile_keys), *relations]
        )
        return replies[: len(profile_keys)], replies[len(profile_keys) :]

    async def close(self) -> None:
        await self.channel.aclose()


async def open_channel(host: str, port: int, *, cluster: bool, kept: bool) -> tuple[ChannelReads, Any]:
    """The channel and what else must be closed with it (the cluster's redis-py client)."""
    if not cluster:
        address = Address(host, port)
        channel: ReadChannel | ClusterReadChannel = (
            KeepingReadChannel(address) if kept else ReadChannel(address)
        )
        return ChannelReads(channel, kept=kept), None
    client = RedisCluster(host=host, port=port, decode_responses=True)
    await client.initialize()
    found = ClusterReadChannel.for_client(client, cache=DEFAULT_CAPACITY if kept else 0)
    assert found is not None
    return ChannelReads(found, kept=kept), client


# -- Valkey GLIDE --------------------------------------------------------------------------------


class GlideReads:
    """GLIDE's asyncio client (standalone or cluster): the PAGE script by invoke_script (EVALSHA,
    loading it on NOSCRIPT), then the HMGETs and ZMSCOREs as one non-atomic batch or awaited
    together; or, `cached`, the profiles by HGETALL, which its client-side cache serves (not HMGET,
    and not within a batch), awaited together with the ZMSCOREs."""

    def __init__(self, client: GlideClient | GlideClusterClient, *, batch: bool, cached: bool) -> None:
        self.client = client
        self.batch = batch
        self.cached = cached
        self.script = Script(PAGE)  # type: ignore[no-untyped-call]

    async def page(self, keys: list[str], args: list[str | int]) -> list[Any]:
        reply = await self.client.invoke_script(self.script, keys=list(keys), args=[str(a) for a in args])
        assert isinstance(reply, list)
        return reply

    async def details(
        self, profile_keys: list[str], relation_keys: list[str], ids: list[str]
    ) -> tuple[list[list[Any]], list[list[Any]]]:
        fields: list[str | bytes] = list(PROFILE_FIELDS)
        members: list[str | bytes] = list(ids)
        client = self.client
        if self.cached:
            fetched = await asyncio.gather(
                *(client.hgetall(key) for key in profile_keys),
                *(client.zmscore(key, members) for key in relation_keys),
            )
            maps: list[dict[bytes, bytes]] = fetched[: len(profile_keys)]  # type: ignore[assignment]
            profiles = [[found.get(name.encode()) for name in PROFILE_FIELDS] for found in maps]
            return profiles, [list(scores) for scores in fetched[len(profile_keys) :]]
        if self.batch:
            batch = ClusterBatch(is_atomic=False) if isinstance(client, GlideClusterClient) else Batch(False)
            for key in profile_keys:
                batch.hmget(key, fields)
            for key in relation_keys:
                batch.zmscore(key, members)
            if isinstance(client, GlideClusterClient):
                assert isinstance(batch, ClusterBatch)
                replies = await client.exec(batch, raise_on_error=True)
            else:
                assert isinstance(batch, Batch)
                replies = await client.exec(batch, raise_on_error=True)
            assert replies is not None
        else:
            replies = await asyncio.gather(
                *(client.hmget(key, fields) for key in profile_keys),
                *(client.zmscore(key, members) for key in relation_keys),
            )
        found: list[list[Any]] = [list(reply) for reply in replies]
        return found[: len(profile_keys)], found[len(profile_keys) :]

    async def close(self) -> None:
        await self.client.close()


async def open_glide(host: str, port: int, *, cluster: bool, batch: bool, cached: bool) -> GlideReads:
    addresses = [NodeAddress(host, port)]
    cache = ClientSideCache.create(CACHE_KB, 0, server_assisted=True) if cached else None
    if cluster:
        config = GlideClusterClientConfiguration(
            addresses, request_timeout=TIMEOUT_MS, client_side_cache=cache
        )
        return GlideReads(await GlideClusterClient.create(config), batch=batch, cached=cached)
    standalone = GlideClientConfiguration(addresses, request_timeout=TIMEOUT_MS, client_side_cache=cache)
    return GlideReads(await GlideClient.create(standalone), batch=batch, cached=cached)


# -- the load ------------------------------------------------------------------------------------


async def _load(
    reads: PageReads, spec: PageSpec, keys: Keys, concurrency: int, seconds: float
) -> tuple[list[int], float, float]:
    """Pages read by `concurrency` coroutines for `seconds`: each page's nanoseconds, the CPU and
    wall seconds taken."""
    latencies: list[int] = []
    deadline = time.perf_counter() + seconds

    async def reader() -> None:
        clock = time.perf_counter_ns
        while time.perf_counter() < deadline:
            started = clock()
            await read_page(reads, spec, keys)
            latencies.append(clock() - started)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(reader() for _ in range(concurrency)))
    return latencies, time.process_time() - cpu, time.perf_counter() - wall


async def measure(
    client: str,
    host: str,
    port: int,
    spec: PageSpec,
    *,
    cluster: bool,
    concurrency: int,
    warmup: float,
    seconds: float,
) -> Measured:
    closing: Any = None
    reads: PageReads
    if client.startswith("channel"):
        reads, closing = await open_channel(host, port, cluster=cluster, kept=client == "channel")
    else:
        reads = await open_glide(
            host, port, cluster=cluster, batch=client == "glide-batch", cached=client == "glide-cached"
        )
    keys = Keys()
    try:
        seen = digest(await read_page(reads, spec, keys))
        warm, _, _ = await _load(reads, spec, keys, concurrency, warmup)
        latencies, cpu, wall = await _load(reads, spec, keys, concurrency, seconds)
    finally:
        await reads.close()
        if closing is not None:
            await closing.aclose()
    ms = sorted(v / 1e6 for v in latencies)
    threads = len(os.listdir("/proc/self/task"))
    return Measured(
        client,
        len(ms),
        1 + len(warm) + len(ms),
        cpu,
        wall,
        percentile(ms, 0.50),
        percentile(ms, 0.99),
        seen,
        threads,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=sorted(CLIENTS), required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cluster", action="store_true", help="the port is a node of a Redis Cluster")
    parser.add_argument("--owner", required=True)
    parser.add_argument("--viewer", required=True)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args(argv)
    spec = PageSpec(args.owner, args.viewer)
    measured = uvloop.run(
        measure(
            args.client,
            args.host,
            args.port,
            spec,
            cluster=args.cluster,
            concurrency=args.concurrency,
            warmup=args.warmup,
            seconds=args.seconds,
        )
    )
    print(json.dumps(asdict(measured)))


if __name__ == "__main__":
    main()
