"""The read channel (store/redis/channel.py) on a real Redis: pipelining, errors, lost connections,
timeouts and callers that give up."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError, NoScriptError, ResponseError, TimeoutError

from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer
from followgraph.store.redis.channel import Address, ReadChannel
from followgraph.store.redis.lua import LuaScript, ReadCommand, run_scripts
from tests.store.writes import Writes

ECHO = LuaScript("return ARGV[1]")


async def _command(client: aioredis.Redis, *args: str) -> Any:
    return await client.execute_command(*args)  # type: ignore[no-untyped-call]


@pytest.fixture
async def writes() -> Writes:
    return Writes()


@pytest.fixture
async def channel(real_redis: aioredis.Redis, writes: Writes) -> AsyncIterator[ReadChannel]:
    found = ReadChannel.for_client(real_redis)
    assert found is not None
    opened = ReadChannel(found.address, timeout=2.0, on_send=writes)
    yield opened
    await opened.aclose()


async def test_replies_come_back_to_their_callers_in_one_write_per_loop_turn(
    channel: ReadChannel, writes: Writes
) -> None:
    await channel.run([("PING",)])  # connects
    writes.count = 0
    replies = await asyncio.gather(*(channel.run([("ECHO", f"a{i}"), ("ECHO", f"b{i}")]) for i in range(50)))
    assert replies == [[f"a{i}", f"b{i}"] for i in range(50)]
    assert writes.count == 1


async def test_an_error_reply_is_raised_and_the_channel_goes_on(channel: ReadChannel) -> None:
    with pytest.raises(ResponseError, match="unknown command"):
        await channel.run([("NOSUCHCOMMAND",)])
    assert await channel.run([("ECHO", "still here")]) == ["still here"]


async def test_scripts_unknown_to_redis_are_loaded_and_run(
    channel: ReadChannel, real_redis: aioredis.Redis
) -> None:
    await real_redis.script_flush()
    with pytest.raises(NoScriptError):
        await channel.run([("EVALSHA", ECHO.sha, 0, "x")])
    assert await channel.run_scripts([(ECHO, [], ["one"]), (ECHO, [], ["two"])]) == ["one", "two"]


async def test_plain_reads_run_beside_unknown_scripts_and_are_never_loaded(
    channel: ReadChannel, real_redis: aioredis.Redis
) -> None:
    await real_redis.set("k", "v")
    get = ReadCommand("GET")
    calls = [(get, ["k"], []), (ECHO, [], ["one"]), (get, ["missing"], [])]
    for reads in (channel.run_scripts, lambda calls: run_scripts(real_redis, calls)):
        await real_redis.script_flush()
        assert await reads(calls) == ["v", "one", None]
    assert await real_redis.script_exists(get.sha) == [False]  # the empty script was never loaded


async def test_a_caller_that_gives_up_leaves_the_others_their_replies(channel: ReadChannel) -> None:
    await channel.run([("PING",)])
    slow = asyncio.create_task(channel.run([("EVAL", "local t = redis.call('TIME') return 'slow'", 0)]))
    await asyncio.sleep(0)  # queued and written
    slow.cancel()
    after = await asyncio.gather(*(channel.run([("ECHO", str(i))]) for i in range(10)))
    assert after == [[str(i)] for i in range(10)]
    with pytest.raises(asyncio.CancelledError):
        await slow


async def test_a_killed_connection_is_replaced_and_the_read_sent_again(
    channel: ReadChannel, real_redis: aioredis.Redis
) -> None:
    await channel.run([("CLIENT", "SETNAME", "read-channel")])
    clients = await real_redis.client_list()
    [ours] = [c for c in clients if c["name"] == "read-channel"]
    await real_redis.client_kill_filter(_id=ours["id"])
    assert await channel.run([("ECHO", "again")]) == ["again"]


async def test_a_server_that_does_not_answer_times_out_and_the_channel_recovers(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    server.start()
    channel = ReadChannel(Address(path=str(server.socket_path)), timeout=0.3)
    try:
        await channel.run([("PING",)])
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGSTOP)  # alive, connected, silent
        try:
            with pytest.raises(TimeoutError, match=r"within 0\.3 s"):
                await channel.run([("ECHO", "late")])
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        assert await channel.run([("ECHO", "back")]) == ["back"]
    finally:
        await channel.aclose()
        server.stop()


async def test_nothing_to_run_is_no_round_trip(channel: ReadChannel, writes: Writes) -> None:
    assert await channel.run([]) == []
    assert writes.count == 0


async def test_a_closed_channel_refuses_reads(channel: ReadChannel) -> None:
    await channel.aclose()
    with pytest.raises(ConnectionError, match="closed"):
        await channel.run([("PING",)])


async def test_an_unreachable_redis_is_a_connection_error() -> None:
    channel = ReadChannel(Address(path="/nonexistent/redis.sock"), timeout=0.5)
    with pytest.raises(ConnectionError, match="could not connect"):
        await channel.run([("PING",)])


async def test_the_channel_reads_the_database_and_logs_in_as_its_client(redis_server: RedisServer) -> None:
    admin = aioredis.Redis(unix_socket_path=str(redis_server.socket_path), decode_responses=True)
    await _command(admin, "ACL", "SETUSER", "reader", "on", ">secret-pass", "~*", "+@all")
    try:
        db3 = aioredis.Redis(unix_socket_path=str(redis_server.socket_path), db=3, decode_responses=True)
        await db3.set("where", "db3")
        url = f"unix://reader:secret-pass@{redis_server.socket_path}?db=3"
        client = connect(url)
        channel = ReadChannel.for_client(client)
        assert channel is not None
        assert (channel.address.db, channel.address.username) == (3, "reader")
        try:
            assert await channel.run([("GET", "where"), ("ACL", "WHOAMI")]) == ["db3", "reader"]
        finally:
            await channel.aclose()
            await client.aclose()
            await db3.flushdb()
            await db3.aclose()
        bad = ReadChannel(Address(path=str(redis_server.socket_path), username="reader", password="wrong"))
        with pytest.raises(ConnectionError, match="log in"):
            await bad.run([("PING",)])
    finally:
        await _command(admin, "ACL", "DELUSER", "reader")
        await admin.aclose()


def test_only_a_plain_single_redis_gets_a_channel(redis_server: RedisServer) -> None:
    assert ReadChannel.for_client(fakeredis.FakeAsyncRedis(decode_responses=True)) is None
    assert ReadChannel.for_client(connect("redis+cluster://127.0.0.1:7000")) is None
    assert ReadChannel.for_client(connect("rediss://127.0.0.1:6380/0")) is None
    raw = aioredis.Redis(unix_socket_path=str(redis_server.socket_path))
    assert ReadChannel.for_client(raw) is None  # replies as bytes: not what the store reads
    tcp = ReadChannel.for_client(connect("redis://127.0.0.1:6390/2", timeout=0.7))
    assert tcp is not None
    assert (tcp.address, tcp.timeout) == (Address("127.0.0.1", 6390, None, 2), 0.7)
