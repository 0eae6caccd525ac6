"""Tracing: a request that carries a W3C traceparent gets its spans in the caller's trace (the
request's, its operation's, its Redis round trips'), its access line carries the trace id, and
nothing of it happens unless tracing is on. On the real Redis server and on the cluster, with the
SDK's in-memory exporter (tests/transport/test_tracing_export.py exports over OTLP/HTTP)."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from opentelemetry import trace
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanKind

from followgraph.server.settings import Settings
from followgraph.store.redis.lua import Client
from followgraph.transport.logs import configure_logging
from followgraph.transport.tracing import Tracing, unsampled_child_ids
from followgraph.transport.tracing_config import TracingConfigError, check_config, tracing_from_env, wanted
from tests.served import Served, serve

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
SAMPLED = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
NOT_SAMPLED = f"00-{CALLER_TRACE}-{CALLER_SPAN}-00"
FANS = (
    "query Fans($id: ID!) { user(userId: $id) { name fans(first: 10) { edges { node { userId name } } } } }"
)
FOLLOW = "mutation Follow($id: ID!) { follow(input: {userId: $id}) { changed } }"


@dataclass
class Traced:
    tracing: Tracing
    exporter: InMemorySpanExporter

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


@pytest.fixture
def traced() -> Traced:
    """Tracing on, its spans kept in memory (the process's global provider is left alone)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Traced(Tracing(provider), exporter)


@pytest.fixture
async def api(served_redis: Client, settings: Settings, traced: Traced) -> AsyncIterator[Served]:
    async with serve(settings, served_redis, tracing=traced.tracing) as served:
        await served.register("1", "2", "3")
        await served.store.follow(follower="2", followee="1")
        await served.store.follow(follower="3", followee="1")
        yield served


@pytest.fixture
def access_lines() -> Iterator[io.StringIO]:
    """The process's log (access lines included) written to a string."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    stream = io.StringIO()
    configure_logging("info")
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    yield stream
    root.handlers[:] = saved_handlers
    root.setLevel(saved_level)
    logging.getLogger("uvicorn.access").disabled = False


def access_line(stream: io.StringIO) -> dict[str, object]:
    logging.getLogger().handlers[0].flush()
    lines = [json.loads(text) for text in stream.getvalue().splitlines()]
    [line] = [line for line in lines if line["logger"] == "followgraph.http"]
    return dict(line)


def hex_id(span_id: int) -> str:
    return trace.format_span_id(span_id)


def one(spans: list[ReadableSpan], kind: SpanKind, **attributes: object) -> ReadableSpan:
    found = [
        s
        for s in spans
        if s.kind is kind and all((s.attributes or {}).get(k) == v for k, v in attributes.items())
    ]
    assert len(found) == 1, [(s.name, s.kind, dict(s.attributes or {})) for s in spans]
    return found[0]


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


async def test_a_request_joins_the_callers_trace(api: Served, traced: Traced) -> None:
    # The store's own calls above ran outside any span: none was made of them.
    assert traced.spans() == []
    response = await api.post(FANS, {"id": "1"}, as_user="2", headers={"traceparent": SAMPLED})
    assert response.status_code == 200 and len(response.json()["data"]["user"]["fans"]["edges"]) == 2
    spans = traced.spans()
    assert {trace.format_trace_id(s.context.trace_id) for s in spans if s.context} == {CALLER_TRACE}

    request = one(spans, SpanKind.SERVER)
    assert request.name == "POST /graphql"
    assert request.parent is not None and request.parent.is_remote
    assert hex_id(request.parent.span_id) == CALLER_SPAN
    attributes = request.attributes or {}
    assert attributes["http.request.method"] == "POST" and attributes["http.route"] == "/graphql"
    assert attributes["http.response.status_code"] == 200
    assert attributes["followgraph.request_id"] == response.headers["x-request-id"]
    assert str(attributes["user_agent.original"]).startswith("python-httpx/")

    [operation] = children(spans, request)
    assert operation.name == "query Fans"
    assert dict(operation.attributes or {}) == {
        "graphql.operation.name": "Fans",
        "graphql.operation.type": "query",
        "followgraph.graphql.executor": "strawberry",  # the document's first run
    }
    trips = children(spans, operation)
    assert trips and all(s.kind is SpanKind.CLIENT for s in trips)
    via = "cluster_read_channel" if api.store.cluster else "read_channel"
    for trip in trips:
        assert (trip.attributes or {})["db.system.name"] == "redis"
        assert (trip.attributes or {})["followgraph.redis.via"] == via
        assert trip.name == (trip.attributes or {})["db.operation.name"]
    assert set(spans) == {request, operation, *trips}


async def test_a_compiled_plan_says_so_and_its_page_is_two_round_trips(api: Served, traced: Traced) -> None:
    await api.post(FANS, {"id": "1"}, as_user="2")  # compiles the document's plan
    traced.exporter.clear()
    response = await api.post(FANS, {"id": "1"}, as_user="2", headers={"traceparent": SAMPLED})
    assert response.status_code == 200
    spans = traced.spans()
    operation = one(spans, SpanKind.INTERNAL)
    assert (operation.attributes or {})["followgraph.graphql.executor"] == "compiled"
    assert (operation.attributes or {})["graphql.operation.type"] == "query"
    assert operation.name == "query Fans"
    request = one(spans, SpanKind.SERVER)
    assert request.context is not None and operation.parent is not None
    assert operation.parent.span_id == request.context.span_id
    # The page, then the user's facts with its entries' (docs/architecture.md, compiled plans).
    assert len(children(spans, operation)) == 2


async def test_writes_through_redis_py_are_round_trips_of_the_operation(api: Served, traced: Traced) -> None:
    response = await api.post(FOLLOW, {"id": "1"}, as_user="3", headers={"traceparent": SAMPLED})
    assert response.status_code == 200 and response.json() == {"data": {"follow": {"changed": False}}}
    spans = traced.spans()
    operation = one(spans, SpanKind.INTERNAL)
    assert operation.name == "mutation Follow"
    assert (operation.attributes or {})["graphql.operation.type"] == "mutation"
    written = [
        s for s in children(spans, operation) if (s.attributes or {})["followgraph.redis.via"] == "redis_py"
    ]
    assert written, [(s.name, dict(s.attributes or {})) for s in spans]
    assert all(s.kind is SpanKind.CLIENT for s in written)


async def test_the_access_line_carries_the_trace_and_span_ids(
    api: Served, traced: Traced, access_lines: io.StringIO
) -> None:
    await api.post(FANS, {"id": "1"}, as_user="2", headers={"traceparent": SAMPLED})
    line = access_line(access_lines)
    request = one(traced.spans(), SpanKind.SERVER)
    assert request.context is not None
    assert line["trace_id"] == CALLER_TRACE
    assert line["span_id"] == hex_id(request.context.span_id)
    assert line["operation_name"] == "Fans"


async def test_a_request_its_caller_did_not_sample_records_nothing_but_keeps_its_trace_id(
    api: Served, traced: Traced, access_lines: io.StringIO
) -> None:
    response = await api.post(FANS, {"id": "1"}, as_user="2", headers={"traceparent": NOT_SAMPLED})
    assert response.status_code == 200
    assert traced.spans() == []
    assert access_line(access_lines)["trace_id"] == CALLER_TRACE


async def test_a_request_without_a_traceparent_starts_a_trace(api: Served, traced: Traced) -> None:
    await api.post(FANS, {"id": "1"}, as_user="2")
    spans = traced.spans()
    request = one(spans, SpanKind.SERVER)
    assert request.parent is None
    assert request.context is not None
    assert {s.context.trace_id for s in spans if s.context} == {request.context.trace_id}


async def test_a_request_refused_before_its_operation_ran_is_a_request_and_an_operation(
    api: Served, traced: Traced
) -> None:
    response = await api.post("{ user(userId: ", headers={"traceparent": SAMPLED})
    assert response.status_code == 200 and response.json()["errors"]
    spans = traced.spans()
    operation = one(spans, SpanKind.INTERNAL)
    assert operation.name == "GraphQL Operation"  # no type: the document did not parse
    assert (operation.attributes or {})["followgraph.graphql.errors"] == 1
    assert children(spans, operation) == []


def test_an_unsampled_caller_gets_the_ids_the_sdk_would_give_its_span() -> None:
    for flags in ("00", "02"):
        traceparent = f"00-{CALLER_TRACE}-{CALLER_SPAN}-{flags}"
        ours = unsampled_child_ids(traceparent)
        sdk = TracerProvider().get_tracer("t").start_span("x", context=extract({"traceparent": traceparent}))
        assert ours is not None and not sdk.is_recording()
        trace_id, span_id = ours
        assert trace_id == trace.format_trace_id(sdk.get_span_context().trace_id)
        assert len(span_id) == 16 and int(span_id, 16) and span_id != CALLER_SPAN
    # A sampled caller, another version, an invalid id: the propagator and the sampler decide.
    for other in (
        SAMPLED,
        f"01-{CALLER_TRACE}-{CALLER_SPAN}-00",
        f"00-{'0' * 32}-{CALLER_SPAN}-00",
        f"00-{CALLER_TRACE}-{'0' * 16}-00",
        "x",
    ):
        assert unsampled_child_ids(other) is None


def test_only_a_sampler_that_follows_the_caller_skips_the_sdk() -> None:
    assert Tracing(TracerProvider()).follows_callers  # parentbased_always_on, the default
    assert not Tracing(TracerProvider(sampler=ALWAYS_ON)).follows_callers


async def test_a_sampler_that_ignores_the_caller_records_an_unsampled_request(
    served_redis: Client, settings: Settings
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_ON)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with serve(settings, served_redis, tracing=Tracing(provider)) as api:
        await api.register("1")
        await api.post(FANS, {"id": "1"}, headers={"traceparent": NOT_SAMPLED})
    request = one(list(exporter.get_finished_spans()), SpanKind.SERVER)
    assert request.context is not None and trace.format_trace_id(request.context.trace_id) == CALLER_TRACE


# -- off by default ---------------------------------------------------------------------------------


async def test_tracing_is_off_by_default(
    served_redis: Client, settings: Settings, access_lines: io.StringIO
) -> None:
    async with serve(settings, served_redis) as api:
        await api.register("1")
        endpoint = api.app.state.endpoint
        assert endpoint.tracing is None and endpoint.executor.spans is None
        assert getattr(api.store.reads, "spans", None) is None
        assert "execute_command" not in vars(served_redis)  # redis-py's client not wrapped
        response = await api.post(FANS, {"id": "1"}, headers={"traceparent": SAMPLED})
        assert response.status_code == 200
    line = access_line(access_lines)
    assert "trace_id" not in line and "span_id" not in line
    # Nothing set the process's tracer provider: it is still the API's stand-in.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_without_an_otlp_endpoint_no_tracer_provider_is_configured_or_imported() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "FOLLOWGRAPH_"))}
    script = (
        "import sys\n"
        "from opentelemetry import trace\n"
        "from followgraph.server.app import app_from_env\n"
        "from followgraph.transport.tracing_config import tracing_from_env\n"
        "assert tracing_from_env() is None\n"
        "assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)\n"
        # (redis-py imports the SDK's metrics, when installed, for its own; not its tracing.)
        "tracing = ('opentelemetry.sdk.trace', 'opentelemetry.exporter')\n"
        "loaded = [m for m in sys.modules if m.startswith(tracing)]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_which_variables_turn_it_on() -> None:
    assert not wanted({})
    assert wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert not wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": " "})
    assert not wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"})
    assert tracing_from_env({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}) is None


def test_a_protocol_other_than_http_protobuf_is_refused_by_name() -> None:
    on = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}
    check_config({**on, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    check_config({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})  # tracing off: nothing to refuse
    with pytest.raises(TracingConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL=grpc"):
        check_config({**on, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    with pytest.raises(TracingConfigError, match="OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"):
        check_config({**on, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"})


def test_tracing_without_the_sdk_is_refused_with_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "opentelemetry.sdk" else real(name, *a)
    )
    with pytest.raises(TracingConfigError, match=r"pip install 'followgraph\[tracing\]'"):
        check_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    check_config({})  # off: nothing is needed
