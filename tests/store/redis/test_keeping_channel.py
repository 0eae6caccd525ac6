"""Profiles kept by the read channel of a single Redis (store/redis/keeping_channel.py), on a real
Redis: a hot page's profiles are read once, every change reaches every process's copy before its
next read (written through another store, straight to Redis, or by another OS process), the
settings that hide lists included, and the channel goes on without keeping where Redis refuses."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest
import redis
import redis.asyncio as aioredis
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from followgraph.server.redis_server import RedisServer
from followgraph.store import FollowStore
from followgraph.store.graph.model import ListKind, Parts
from followgraph.store.graph.scripts import PAGE_SCRIPT, PROFILE_READS
from followgraph.store.redis.channel import Address, ReadChannel
from followgraph.store.redis.channels import open_reads
from followgraph.store.redis.keeping_channel import KeepingReadChannel
from followgraph.store.redis.lua import KeyedRead, ReadCommand, ScriptCall
from tests.store.writes import Writes

USERS = [f"u{i}" for i in range(20)]
PROFILE = Parts(profile=True)
# What a page's second round trip reads: its users' profiles and their relations to the viewer.
PAGE_FACTS = Parts(profile=True, relation=True)


def _address(server: RedisServer) -> Address:
    return Address(path=str(server.socket_path))


async def _store(real_redis: aioredis.Redis, channel: ReadChannel) -> FollowStore:
    return FollowStore(real_redis, reads=channel)


@pytest.fixture
async def kept(real_redis: aioredis.Redis, redis_server: RedisServer) -> AsyncIterator[FollowStore]:
    """A store whose read channel keeps profiles, its users registered."""
    channel = KeepingReadChannel(_address(redis_server), timeout=2.0)
    store = await _store(real_redis, channel)
    for user in USERS:
        await store.upsert_user(user, name=f"Name {user}")
    yield store
    await channel.aclose()


@pytest.fixture
async def other(real_redis: aioredis.Redis, redis_server: RedisServer) -> AsyncIterator[FollowStore]:
    """A second store on the same Redis with a channel of its own, as another server process has."""
    channel = KeepingReadChannel(_address(redis_server), timeout=2.0)
    yield await _store(real_redis, channel)
    await channel.aclose()


def _channel(store: FollowStore) -> KeepingReadChannel:
    assert isinstance(store.reads, KeepingReadChannel)
    return store.reads


async def _names(store: FollowStore, users: list[str] = USERS) -> list[str | None]:
    facts = await store.facts(None, users, PROFILE)
    return [f.profile.name if f.profile else None for f in facts]


def _calls(server: RedisServer, command: str) -> int:
    """How many times Redis has run `command` so far."""
    client = redis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
    try:
        return int(client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))
    finally:
        client.close()


async def test_open_reads_keeps_profiles_on_one_redis_unless_the_cache_is_off(
    real_redis: aioredis.Redis,
) -> None:
    keeping = open_reads(real_redis)
    plain = open_reads(real_redis, cache=0)
    try:
        assert isinstance(keeping, KeepingReadChannel) and keeping.keeps
        assert isinstance(plain, ReadChannel) and not isinstance(plain, KeepingReadChannel)
        assert not plain.keeps
    finally:
        for channel in (keeping, plain):
            if channel is not None:
                await channel.aclose()


async def test_a_hot_pages_profiles_are_read_once_then_kept(
    kept: FollowStore, real_redis: aioredis.Redis, redis_server: RedisServer
) -> None:
    plain = FollowStore(real_redis, reads=open_reads(real_redis, cache=0))
    try:
        expected = [f"Name {u}" for u in USERS]
        assert await _names(plain) == expected
        assert await _names(kept) == expected
        stats = _channel(kept).cache_stats
        assert (stats.hits, stats.misses) == (0, 20)
        hmgets, pings = _calls(redis_server, "hmget"), _calls(redis_server, "ping")
        for _ in range(5):
            assert await _names(kept) == expected
        assert _calls(redis_server, "hmget") == hmgets
        assert _calls(redis_server, "ping") == pings + 5  # what a kept read sends instead
        assert (stats.hits, stats.misses) == (100, 20)
        # The same facts, profiles beside relations, counts and controls, as a channel keeping none.
        await kept.follow(follower="u1", followee="u2")
        await kept.follow(follower="u3", followee="u1")
        parts = Parts(profile=True, relation=True, counts=True, controls=True)
        assert await kept.facts("u1", USERS, parts) == await plain.facts("u1", USERS, parts)
    finally:
        assert plain.reads is not None
        await plain.reads.aclose()


async def test_a_pages_facts_are_one_round_trip(
    kept: FollowStore, real_redis: aioredis.Redis, redis_server: RedisServer
) -> None:
    """The scripts' connection and the tracking connection write in the same turn of the event
    loop: one round trip, counted once, whether the profiles are kept or read."""
    writes = Writes()
    channel = KeepingReadChannel(_address(redis_server), on_send=writes)
    store = await _store(real_redis, channel)
    try:
        await store.facts("u0", USERS[:1], PAGE_FACTS)  # connected, and Redis knows the scripts
        for users in (USERS, USERS, USERS[5:]):
            before = writes.count
            await store.facts("u0", users, PAGE_FACTS)
            assert writes.count - before == 1
        assert channel.cache_stats.hits > 0 and channel.cache_stats.misses > 0
    finally:
        await channel.aclose()


async def test_a_profile_written_through_another_store_is_in_its_very_next_read(
    kept: FollowStore, other: FollowStore
) -> None:
    """Two stores with channels of their own, as two server processes: a name written through one
    is in the other's next read, 100 times in a row (each read after the write returned)."""
    assert await _names(other) == await _names(kept)
    for i in range(100):
        user = USERS[i % len(USERS)]
        await kept.upsert_user(user, name=f"Name {i}")
        assert (await _names(other))[i % len(USERS)] == f"Name {i}"
        assert (await _names(kept))[i % len(USERS)] == f"Name {i}"
    stats = _channel(other).cache_stats
    assert stats.invalidations >= 100
    assert stats.hits > 0


async def test_settings_written_through_another_store_decide_its_next_page(
    kept: FollowStore, other: FollowStore
) -> None:
    """The settings live in the profile hash: the copy of another process follows them, and the
    page itself reads them on the owner's slot, so a list hidden through one store is hidden in
    the other's very next page."""
    await kept.follow(follower="u1", followee="u0")
    query = other.list_query(ListKind.FANS, "u0", viewer="u2", viewer_checked=True)
    assert [(await other.pages([query]))[0].hidden] == [False]
    for hidden in (True, False, True):
        await kept.update_settings("u0", hide_fans=hidden)
        columns = await other.columns("u2", ["u0"], PROFILE)
        assert [f.profile and f.profile.settings.hide_fans for f in columns.facts()] == [hidden]
        assert (await other.pages([query]))[0].hidden is hidden
    await kept.update_settings("u0", hide_fans=False, locked=True)
    assert (await other.columns("u2", ["u0"], PROFILE)).locked == [True]
    assert (await other.pages([query]))[0].hidden is True


async def test_a_write_by_another_os_process_is_in_the_next_read_of_every_process(
    kept: FollowStore, redis_server: RedisServer
) -> None:
    """A second OS process keeps the same profiles on its own channel; names written by this one,
    through its store, and straight to Redis by a third, are in both processes' next reads."""
    reader = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _READER,
        str(redis_server.socket_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert reader.stdin is not None and reader.stdout is not None

    async def read_there() -> str:
        assert reader.stdin is not None and reader.stdout is not None
        reader.stdin.write(b"read\n")
        await reader.stdin.drain()
        return (await reader.stdout.readline()).decode().strip()

    try:
        assert await read_there() == "Name u7 kept 0"
        assert await read_there() == "Name u7 kept 1"  # the second read found it kept
        key = kept.keys.profile("u7")
        for i in range(20):
            if i % 2:
                await kept.upsert_user("u7", name=f"Written {i}")
            else:
                writer = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", _WRITER, str(redis_server.socket_path), key, f"Written {i}"
                )
                assert await writer.wait() == 0
            assert (await read_there()).startswith(f"Written {i} ")
            assert (await _names(kept, ["u7"])) == [f"Written {i}"]
    finally:
        reader.stdin.close()
        assert await reader.wait() == 0


# The other server process: a store keeping profiles, reading u7's name at each line of its input.
_READER = """
import asyncio, sys
import redis.asyncio as aioredis
from followgraph.store import FollowStore
from followgraph.store.graph.model import Parts
from followgraph.store.redis.channel import Address
from followgraph.store.redis.keeping_channel import KeepingReadChannel
from followgraph.store.redis.lua import KeyedRead, ReadCommand, ScriptCall

async def main():
    channel = KeepingReadChannel(Address(path=sys.argv[1]))
    store = FollowStore(aioredis.Redis(unix_socket_path=sys.argv[1], decode_responses=True), reads=channel)
    loop = asyncio.get_running_loop()
    while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "read":
        [facts] = await store.facts(None, ["u7"], Parts(profile=True))
        print(facts.profile.name, "kept", channel.cache_stats.hits, flush=True)
    await channel.aclose()

asyncio.run(main())
"""

# A process that writes a name straight to Redis, as an operator's script would.
_WRITER = """
import sys, redis
redis.Redis(unix_socket_path=sys.argv[1]).hset(sys.argv[2], "name", sys.argv[3])
"""


async def test_a_profile_changed_while_its_read_waits_is_read_again(
    kept: FollowStore, redis_server: RedisServer
) -> None:
    """The write reaches Redis after the read began and before the tracking connection's PING:
    the invalidation comes first, and the read takes the profile from Redis instead."""
    await _names(kept, ["u5"])
    writer = redis.Redis(unix_socket_path=str(redis_server.socket_path))
    try:
        reading = asyncio.ensure_future(_names(kept, ["u5"]))
        # Runs after the read queued its PING and before the write that sends it.
        asyncio.get_running_loop().call_soon(writer.hset, kept.keys.profile("u5"), "name", "changed")
        assert await reading == ["changed"]
    finally:
        writer.close()
    assert _channel(kept).cache_stats.changed == 1
    assert await _names(kept, ["u5"]) == ["changed"]


async def test_deletes_and_flushes_reach_what_was_kept(kept: FollowStore, real_redis: aioredis.Redis) -> None:
    await _names(kept)
    await real_redis.delete(kept.keys.profile("u3"))
    assert (await _names(kept))[3] is None
    await real_redis.flushall()
    assert await _names(kept) == [None] * len(USERS)
    for user in USERS:
        await kept.upsert_user(user, name="again")
    assert await _names(kept) == ["again"] * len(USERS)


async def test_a_lost_connection_takes_what_it_kept_with_it(
    kept: FollowStore, redis_server: RedisServer
) -> None:
    await _names(kept)
    killer = redis.Redis(unix_socket_path=str(redis_server.socket_path))
    try:
        assert killer.client_kill_filter(_type="normal", skipme=True) >= 1
        # Written while no tracking connection is there to hear of it.
        killer.hset(kept.keys.profile("u5"), "name", "while away")
    finally:
        killer.close()
    names = await _names(kept)
    assert names[5] == "while away"
    assert names[:5] == [f"Name {u}" for u in USERS[:5]]


async def test_scripts_redis_forgot_are_loaded_again_beside_kept_profiles(
    kept: FollowStore, real_redis: aioredis.Redis
) -> None:
    await kept.follow(follower="u1", followee="u0")
    query = kept.list_query(ListKind.FANS, "u0", viewer="u2", viewer_checked=True)
    await kept.facts("u2", USERS, PAGE_FACTS)
    await real_redis.script_flush()
    [page] = await kept.pages([query])
    assert page.members == ["u1"]
    facts = await kept.facts("u2", USERS, PAGE_FACTS)
    assert [f.profile.name if f.profile else None for f in facts] == [f"Name {u}" for u in USERS]


async def test_no_more_than_the_capacity_is_kept(
    real_redis: aioredis.Redis, redis_server: RedisServer
) -> None:
    channel = KeepingReadChannel(_address(redis_server), capacity=3)
    store = await _store(real_redis, channel)
    try:
        for user in USERS:
            await store.upsert_user(user, name=user)
        for _ in range(3):
            assert await _names(store) == USERS
        assert channel.kept is not None
        assert channel.kept.connected
        protocol = channel.kept._protocol
        assert protocol is not None and len(protocol.kept.replies) <= 3  # type: ignore[attr-defined]
    finally:
        await channel.aclose()


async def test_a_redis_that_refuses_tracking_is_read_without_keeping(
    real_redis: aioredis.Redis, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """As on a managed Redis, or for a user whose ACL has no CLIENT command: said once, then the
    store reads profiles with its script again."""
    admin = redis.Redis(unix_socket_path=str(redis_server.socket_path))
    admin.acl_setuser(
        "untracked",
        enabled=True,
        passwords=["+pw"],
        keys=["*"],
        channels=["*"],
        commands=["+@all", "-client"],
    )
    client = aioredis.Redis(
        unix_socket_path=str(redis_server.socket_path),
        username="untracked",
        password="pw",
        decode_responses=True,
    )
    channel = KeepingReadChannel.for_client(client)
    assert channel is not None and channel.keeps
    store = FollowStore(client, reads=channel)
    try:
        for user in USERS[:5]:
            await store.upsert_user(user, name=f"N {user}")
        for _ in range(3):
            assert await _names(store, USERS[:5]) == [f"N {u}" for u in USERS[:5]]
        assert not channel.keeps
        assert (channel.cache_stats.hits, channel.cache_stats.misses) == (0, 0)
        refused = [r for r in caplog.records if "CLIENT TRACKING" in r.getMessage()]
        assert len(refused) == 1
        await store.upsert_user("u0", name="changed")
        assert await _names(store, ["u0"]) == ["changed"]
    finally:
        await channel.aclose()
        await client.aclose()
        admin.acl_deluser("untracked")
        admin.close()


async def test_a_read_keeping_profiles_is_one_span(kept: FollowStore, redis_server: RedisServer) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    channel = KeepingReadChannel(_address(redis_server), tracer=tracer)
    try:
        keys = kept.keys.profiles(USERS[:3])
        page: ScriptCall = (PAGE_SCRIPT, [kept.keys.fans("u0")], ["first", "0", "", "", 20])
        await channel.run_scripts([(PROFILE_READS, keys, []), page])  # outside any span: none
        with tracer.start_as_current_span("request", kind=SpanKind.SERVER):
            replies = await channel.run_scripts([(PROFILE_READS, keys, []), page])
    finally:
        await channel.aclose()
    assert [reply[0] for reply in replies[0]] == ["Name u0", "Name u1", "Name u2"]
    [trip] = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT]
    assert trip.name == "BATCH"
    assert (trip.attributes or {})["followgraph.redis.via"] == "read_channel"
    assert (trip.attributes or {})["db.operation.batch.size"] == 4


async def test_keyed_reads_anywhere_among_the_calls_come_back_in_their_order(
    kept: FollowStore, redis_server: RedisServer
) -> None:
    """The store asks for the profiles first; any other order, and keyed reads that are not kept,
    go out in the same round trip all the same."""
    names = KeyedRead(ReadCommand("HGET", "name"))  # not cacheable: a command a key, every time
    writes = Writes()
    channel = KeepingReadChannel(_address(redis_server), on_send=writes)
    keys = kept.keys.profiles(USERS[:3])
    page: ScriptCall = (PAGE_SCRIPT, [kept.keys.fans("u0")], ["first", "0", "", "", 20])
    try:
        for turn in range(3):
            before = writes.count
            replies = await channel.run_scripts([page, (names, keys, []), (PROFILE_READS, keys[::-1], [])])
            assert turn == 0 or writes.count - before == 1  # the first connects and loads the script
            assert replies[0][:4] == [0, 0, 0, []]
            assert replies[1] == ["Name u0", "Name u1", "Name u2"]
            assert [reply[0] for reply in replies[2]] == ["Name u2", "Name u1", "Name u0"]
        assert (channel.cache_stats.hits, channel.cache_stats.misses) == (6, 3)
    finally:
        await channel.aclose()
