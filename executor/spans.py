"""The span of a GraphQL operation, for tracing (OpenTelemetry; transport/tracing_config.py turns
it on).

Executor.execute makes one per operation when it has a tracer: the operation's name and type, as
OpenTelemetry's GraphQL conventions name them, and which executor answered it
(`followgraph.graphql.executor`: `compiled`, a plan of executor/; `strawberry`, the general
executor). The Redis round trips of the operation are its children. Only Strawberry knows the type
of an operation the general executor runs: the schema extension `OperationTypeOnSpan`, which the
schema carries when tracing is on, writes it on the span.

An operation of a request that is not recorded (its caller did not sample it) gets no span of its
own; one with no request around it (over WebSocket) starts a trace of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from graphql import ExecutionResult
from opentelemetry.context import attach, detach
from opentelemetry.trace import Span, StatusCode, Tracer, get_current_span, set_span_in_context
from strawberry.extensions import SchemaExtension

from followgraph.store.redis.spans import UNRECORDED

OPERATION_NAME = "graphql.operation.name"
OPERATION_TYPE = "graphql.operation.type"
EXECUTOR = "followgraph.graphql.executor"
ERRORS = "followgraph.graphql.errors"
COMPILED = "compiled"
STRAWBERRY = "strawberry"


class OperationSpans:
    """Runs operations in spans of `tracer`."""

    __slots__ = ("tracer",)

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def around(
        self, run: Callable[[Span | None], Coroutine[Any, Any, ExecutionResult]], operation_name: str | None
    ) -> Coroutine[Any, Any, ExecutionResult]:
        """The result of `run`, given the operation's span; given None, and no coroutine around it,
        inside a request that is not recorded."""
        if UNRECORDED.get() is not None:
            return run(None)
        parent = get_current_span()
        if parent.get_span_context().is_valid and not parent.is_recording():
            return run(None)
        return self._traced(run, operation_name)

    async def _traced(
        self, run: Callable[[Span | None], Coroutine[Any, Any, ExecutionResult]], operation_name: str | None
    ) -> ExecutionResult:
        # Named once its type is known (ran_plan, OperationTypeOnSpan); a document refused before
        # that keeps the conventions' name for an operation of unknown type.
        span = self.tracer.start_span(
            "GraphQL Operation", attributes={OPERATION_NAME: operation_name} if operation_name else None
        )
        token = attach(set_span_in_context(span))
        try:
            result = await run(span)
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(StatusCode.ERROR, str(exc))
            raise
        else:
            if result.errors:
                span.set_attribute(ERRORS, len(result.errors))
            return result
        finally:
            detach(token)
            span.end()


def ran_plan(span: Span, operation_type: str, operation_name: str | None) -> None:
    """Say that a compiled plan answered, an operation of `operation_type`."""
    span.set_attribute(EXECUTOR, COMPILED)
    _describe(span, operation_type, operation_name)


def ran_general(span: Span) -> None:
    """Say that the general executor answered (OperationTypeOnSpan gives the type)."""
    span.set_attribute(EXECUTOR, STRAWBERRY)


def _describe(span: Span, operation_type: str, operation_name: str | None) -> None:
    """The operation's type and name on its span, named as the conventions say ("query Name")."""
    span.set_attribute(OPERATION_TYPE, operation_type)
    if operation_name:
        span.set_attribute(OPERATION_NAME, operation_name)
    span.update_name(f"{operation_type} {operation_name}" if operation_name else operation_type)


class OperationTypeOnSpan(SchemaExtension):
    """Writes the type and name of the operation the general executor runs on its span."""

    def on_validate(self) -> Iterator[None]:
        # Strawberry has found the operation's type just before validating it.
        span = get_current_span()
        if span.is_recording():
            context = self.execution_context
            _describe(span, context.operation_type.value, context.operation_name)
        yield
