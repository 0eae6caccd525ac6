"""Spans of Redis round trips (store/redis/spans.py): one per round trip of the read channel, the
cluster's read channel and a redis-py client, made only inside a span that is recorded, named after
the commands, and nothing left of the wrapping once it is undone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

import pytest
import redis.asyncio as aioredis
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer
from redis.asyncio import RedisCluster
from redis.exceptions import ResponseError

from followgraph.server.redis_client import connect
from followgraph.server.redis_cluster import LocalCluster
from followgraph.store.redis.channel import ReadChannel
from followgraph.store.redis.cluster_channel import ClusterReadChannel
from followgraph.store.redis.lua import KeyedRead, LuaScript, ReadCommand, run_scripts
from followgraph.store.redis.spans import call_names, operation_of, trace_client

ECHO = LuaScript("return ARGV[1]")
HGET = KeyedRead(ReadCommand("HGET", "name"))


@dataclass
class Spans:
    tracer: Tracer
    exporter: InMemorySpanExporter

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def trips(self) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.kind is SpanKind.CLIENT]

    @property
    def request(self) -> AbstractContextManager[Span]:
        """A recorded span around what the block does, as a traced request's."""
        return self.tracer.start_as_current_span("request", kind=SpanKind.SERVER)


@pytest.fixture
def spans() -> Spans:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Spans(provider.get_tracer("test"), exporter)


@pytest.fixture
async def channel(real_redis: aioredis.Redis, spans: Spans) -> AsyncIterator[ReadChannel]:
    opened = ReadChannel.for_client(real_redis, tracer=spans.tracer)
    assert opened is not None
    yield opened
    await opened.aclose()


def test_operations_are_named_after_their_commands() -> None:
    assert operation_of(["EVALSHA"]) == ("EVALSHA", 1)
    assert operation_of(["EVALSHA", "EVALSHA", "EVALSHA"]) == ("BATCH EVALSHA", 3)
    assert operation_of(["HMGET", "EVALSHA"]) == ("BATCH", 2)
    assert call_names([(ECHO, [], ["x"]), (HGET, ["a", "b"], []), (ReadCommand("GET"), ["k"], [])]) == [
        "EVALSHA",
        "HGET",
        "HGET",
        "GET",
    ]


async def test_the_read_channel_spans_each_round_trip_inside_a_recorded_span(
    channel: ReadChannel, spans: Spans
) -> None:
    assert await channel.run([("PING",)]) == ["PONG"]  # outside any span: none made
    await channel.run_scripts([(ECHO, [], ["a"])])  # and Redis knows the script from here on
    assert spans.finished() == []
    with spans.request:
        await channel.run_scripts([(ECHO, [], ["a"]), (ECHO, [], ["b"])])
        await channel.run([("ECHO", "c")])
    request = next(s for s in spans.finished() if s.name == "request")
    first, second = spans.trips()
    assert (first.name, second.name) == ("BATCH EVALSHA", "ECHO")
    assert request.context is not None
    assert all(s.parent is not None and s.parent.span_id == request.context.span_id for s in (first, second))
    attributes = first.attributes or {}
    assert attributes["db.system.name"] == "redis" and attributes["followgraph.redis.via"] == "read_channel"
    assert attributes["db.operation.batch.size"] == 2 and attributes["db.namespace"] == "0"
    assert attributes["server.address"] == channel.address.path


async def test_a_round_trip_that_fails_is_a_span_in_error(channel: ReadChannel, spans: Spans) -> None:
    with spans.request, pytest.raises(ResponseError):
        await channel.run([("NOSUCHCOMMAND",)])
    [trip] = spans.trips()
    assert trip.status.status_code is StatusCode.ERROR
    assert (trip.attributes or {})["error.type"] == "ResponseError"


async def test_a_read_channel_without_a_tracer_makes_no_span(
    real_redis: aioredis.Redis, spans: Spans
) -> None:
    plain = ReadChannel.for_client(real_redis)
    assert plain is not None and plain.spans is None
    try:
        with spans.request:
            await plain.run([("PING",)])
    finally:
        await plain.aclose()
    assert spans.trips() == []


async def test_a_redis_py_client_spans_its_commands_and_pipelines_until_undone(
    real_redis: aioredis.Redis, spans: Spans
) -> None:
    other = aioredis.Redis(connection_pool=real_redis.connection_pool)
    await ECHO.load(real_redis)
    undo = trace_client(real_redis, spans.tracer)
    with spans.request:
        await real_redis.set("k", "v")
        await run_scripts(real_redis, [(ECHO, [], ["a"]), (ECHO, [], ["b"])])  # a pipeline
        pipe = real_redis.pipeline(transaction=False)
        pipe.get("k")
        pipe.incr("n")
        await pipe.execute()
        await other.get("k")  # another client: left alone
    await real_redis.get("k")  # outside any span
    assert [s.name for s in spans.trips()] == ["SET", "BATCH EVALSHA", "BATCH"]
    assert all((s.attributes or {})["followgraph.redis.via"] == "redis_py" for s in spans.trips())
    assert next(s for s in spans.trips() if s.name == "BATCH").attributes == {
        **dict(spans.trips()[0].attributes or {}),
        "db.operation.name": "BATCH",
        "db.operation.batch.size": 2,
    }
    undo()
    assert "execute_command" not in vars(real_redis) and "pipeline" not in vars(real_redis)
    spans.exporter.clear()
    with spans.request:
        await real_redis.get("k")
    assert spans.trips() == []


@pytest.fixture
async def cluster(redis_cluster: LocalCluster) -> AsyncIterator[RedisCluster]:
    client = connect(redis_cluster.url, timeout=10.0)
    assert isinstance(client, RedisCluster)
    await client.flushall()
    yield client
    await client.aclose()


async def test_a_cluster_read_is_one_span_whatever_nodes_it_goes_to(
    cluster: RedisCluster, spans: Spans
) -> None:
    reads = ClusterReadChannel.for_client(cluster, tracer=spans.tracer)
    assert reads is not None
    try:
        await cluster.hset("{a}", "name", "A")
        with spans.request:
            replies = await reads.run_scripts([(HGET, ["{a}", "{b}", "{c}"], [])])
    finally:
        await reads.aclose()
    assert replies == [["A", None, None]]
    [trip] = spans.trips()
    assert trip.name == "BATCH HGET"
    assert (trip.attributes or {})["followgraph.redis.via"] == "cluster_read_channel"
    assert (trip.attributes or {})["db.operation.batch.size"] == 3
