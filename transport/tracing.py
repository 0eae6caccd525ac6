"""Tracing with OpenTelemetry (turned on by transport/tracing_config.py): the spans of requests,
and what the rest of the server needs to make its own.

Each request on /graphql gets a span, the child of the caller's when the request carries a W3C
`traceparent` (as a gateway sends it), so that the server's spans join the caller's trace; its
operations' spans (executor/spans.py) and their Redis round trips' (store/redis/spans.py) are its
children, and each batch of the SQL copy is a span of its own. The access line of a request carries
its trace and span ids (GraphQLEndpoint).

Off, nothing here runs: the endpoint, the executor, the read channels and the SQL copy each test a
`None`. The request's span is made here rather than by opentelemetry-instrumentation-asgi, whose
middleware cost some 50 µs more a request (its metrics, and the attributes of two versions of the
conventions at once): more than the rest of the tracing together.
"""

from __future__ import annotations

import random
import re
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from contextvars import Token
from importlib.metadata import PackageNotFoundError, version

from opentelemetry import trace
from opentelemetry.context import attach, detach
from opentelemetry.propagate import extract, get_global_textmap
from opentelemetry.trace import Span, SpanKind, StatusCode, TracerProvider
from starlette.types import Scope

from followgraph.store.redis.spans import UNRECORDED

# The status, body and headers of an answer (GraphQLEndpoint.handle).
Answer = tuple[int, bytes, list[tuple[bytes, bytes]]]

# The methods HTTP's conventions name as they are; any other is `_OTHER`.
_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"})
# What a parentbased_* sampler's description says when it records nothing of an unsampled caller.
_DROPS_UNSAMPLED = "remoteParentNotSampled:AlwaysOffSampler"
# A W3C traceparent of version 00: the trace id, the caller's span id, the flags.
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_NO_TRACE, _NO_SPAN = "0" * 32, "0" * 16
# SQLAlchemy's dialect names, as the database conventions name the systems.
_SQL_SYSTEMS = {"postgresql": "postgresql", "mysql": "mysql", "mariadb": "mariadb", "sqlite": "sqlite"}


class Tracing:
    """Tracing on: the spans of requests, operations, Redis round trips and SQL batches, made by
    the tracer of `provider`."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        try:
            release: str | None = version("followgraph")
        except PackageNotFoundError:
            release = None
        self.tracer = provider.get_tracer("followgraph", release)
        # The request headers the process's propagator reads (traceparent, tracestate and baggage
        # unless OTEL_PROPAGATORS names others).
        self.fields = frozenset(field.encode("latin-1") for field in get_global_textmap().fields)
        # Whether the sampler records nothing of a request its caller did not sample, as the SDK's
        # parentbased_* samplers (the default among them) say in their description.
        sampler = getattr(provider, "sampler", None)
        self.follows_callers = sampler is not None and _DROPS_UNSAMPLED in sampler.get_description()

    def unrecorded(self, scope: Scope) -> Token[tuple[str, str] | None] | None:
        """When the caller of the HTTP request of `scope` did not sample it and the sampler follows
        callers: the request marked as recording nothing (UNRECORDED, with its trace and span ids,
        until the token returned is reset). None otherwise: `request` makes its span."""
        if not self.follows_callers:
            return None
        traceparent = next((value for name, value in scope["headers"] if name == b"traceparent"), None)
        ids = None if traceparent is None else unsampled_child_ids(traceparent.decode("latin-1"))
        return None if ids is None else UNRECORDED.set(ids)

    async def request(self, scope: Scope, answer: Awaitable[Answer], route: str) -> Answer:
        """`answer` awaited in the span of the HTTP request of `scope` to `route`."""
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        fields = self.fields
        carrier = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in headers if name in fields
        }
        span = self._request_span(scope, carrier, route)
        token = attach(trace.set_span_in_context(span))
        try:
            answered = await answer
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(StatusCode.ERROR, str(exc))
            raise
        else:
            if span.is_recording():
                _answered(span, answered)
            return answered
        finally:
            detach(token)
            span.end()

    def _request_span(self, scope: Scope, carrier: dict[str, str], route: str) -> Span:
        method: str = scope["method"]
        known = method in _METHODS
        # What a sampler may look at; the rest only on a span that is recorded.
        attributes = {
            "http.request.method": method if known else "_OTHER",
            "http.route": route,
            "url.path": scope["path"],
            "url.scheme": scope.get("scheme", "http"),
        }
        span = self.tracer.start_span(
            f"{method if known else 'HTTP'} {route}",
            context=extract(carrier) if carrier else None,
            kind=SpanKind.SERVER,
            attributes=attributes,
        )
        if span.is_recording():
            _described(span, scope, known)
        return span

    @contextmanager
    def sql_batch(self, system: str, events: int) -> Iterator[None]:
        """A span around applying a batch of `events` to the SQL copy on `system` (the dialect)."""
        attributes: dict[str, str | int] = {
            "db.system.name": _SQL_SYSTEMS.get(system, system),
            "db.operation.name": "BATCH",
            "followgraph.sql.events": events,
        }
        with self.tracer.start_as_current_span("sql batch", kind=SpanKind.CLIENT, attributes=attributes):
            yield

    def flush(self) -> None:
        """Export the spans ended so far (the SDK's provider; another has nothing to do)."""
        force_flush = getattr(self.provider, "force_flush", None)
        if force_flush is not None:
            force_flush()


def unsampled_child_ids(traceparent: str) -> tuple[str, str] | None:
    """The trace and span ids of a request whose caller did not sample it (a traceparent of
    version 00 with the sampled flag off), as a sampler that follows the caller would give its
    span: not recorded, in the caller's trace, with an id of its own. No span is made, by the SDK
    or here: a span that records nothing cost some 90,000 instructions a request through the
    propagator and the SDK, and its context's upkeep most of the rest. None for any other
    traceparent: the propagator and the sampler decide."""
    found = _TRACEPARENT.fullmatch(traceparent)
    if found is None:
        return None
    trace_id, parent_id, flags = found[1], found[2], int(found[3], 16)
    if trace_id == _NO_TRACE or parent_id == _NO_SPAN or flags & trace.TraceFlags.SAMPLED:
        return None
    return trace_id, f"{random.getrandbits(64) or 1:016x}"


def _described(span: Span, scope: Scope, known: bool) -> None:
    """The attributes of a recorded request's span that no sampler needs."""
    span.set_attribute("network.protocol.version", scope.get("http_version", "1.1"))
    if not known:
        span.set_attribute("http.request.method_original", scope["method"])
    if client := scope.get("client"):
        span.set_attribute("client.address", client[0])
    for name, value in scope["headers"]:
        if name == b"user-agent":
            span.set_attribute("user_agent.original", value.decode("latin-1"))
            break


def _answered(span: Span, answered: Answer) -> None:
    """The answer's status and request id on a recorded request's span."""
    status, _, sent = answered
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_attribute("error.type", str(status))
        span.set_status(StatusCode.ERROR)
    for name, value in sent:
        if name == b"x-request-id":
            span.set_attribute("followgraph.request_id", value.decode("latin-1"))


def trace_ids() -> tuple[str, str] | None:
    """The trace and span ids of the request being served, as W3C writes them (None outside any)."""
    unrecorded = UNRECORDED.get()
    if unrecorded is not None:
        return unrecorded
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)
