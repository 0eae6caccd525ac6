"""Running one GraphQL operation: from its compiled plan when there is one, through Strawberry and
graphql-core otherwise, learning a plan from every document that ran without an error."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Final

from cachetools import LRUCache
from graphql import ExecutionResult, GraphQLError
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types.graphql import OperationType

from followgraph.executor.compiler import NotCompilable, compile_document
from followgraph.executor.mutation_plan import MutationPlan
from followgraph.executor.plan import Fallback, Plan
from followgraph.executor.spans import OperationSpans, ran_general, ran_plan
from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import INTERNAL_SERVER_ERROR
from followgraph.schema import FollowGraphSchema
from followgraph.schema.document import core_schema
from followgraph.schema.validation import capped

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

# Distinct documents kept (compiled, or known not to compile).
PLAN_CACHE_SIZE = 512

_QUERIES = frozenset({OperationType.QUERY})
_QUERIES_AND_MUTATIONS = frozenset({OperationType.QUERY, OperationType.MUTATION})
_UNSEEN: Final = object()


class OperationNotAllowedError(Exception):
    """The operation's type may not run in this request (a mutation over GET)."""


class SubscriptionOverHttpError(OperationNotAllowedError):
    """A subscription sent over HTTP: subscriptions run over WebSocket."""


class NoOperationError(Exception):
    """The document has no operation to run of the name given (or none at all)."""


def rejected(result: ExecutionResult) -> bool:
    """Whether the request was refused before execution (parse, validation, limits, variables)."""
    errors = result.errors or []
    return result.data is None and bool(errors) and all(e.path is None for e in errors)


class Executor:
    """Executes operations on one schema; owns the plans compiled from its documents."""

    def __init__(
        self, schema: FollowGraphSchema, *, compiled: bool = True, tracer: Tracer | None = None
    ) -> None:
        self.schema = schema
        self.types = core_schema(schema)
        # (document, operation name) -> its plan, or None when it does not compile.
        self.plans: LRUCache[tuple[str, str | None], Plan | MutationPlan | None] | None = (
            LRUCache(PLAN_CACHE_SIZE) if compiled else None
        )
        # Each operation gets a span when tracing is on (executor/spans.py).
        self.spans = None if tracer is None else OperationSpans(tracer)

    def execute(
        self,
        query: str,
        *,
        variables: Mapping[str, Any] | None,
        operation_name: str | None,
        context: Context,
        mutations: bool,
    ) -> Coroutine[Any, Any, ExecutionResult]:
        """The result, every error with an `extensions.code`; OperationNotAllowedError or
        NoOperationError when the request names nothing it may run. (The coroutine itself when the
        operation gets no span: a coroutine around it would cost every operation a frame.)"""
        if self.spans is None:
            return self._execute(query, variables, operation_name, context, mutations, None)
        return self.spans.around(
            lambda span: self._execute(query, variables, operation_name, context, mutations, span),
            operation_name,
        )

    async def _execute(
        self,
        query: str,
        variables: Mapping[str, Any] | None,
        operation_name: str | None,
        context: Context,
        mutations: bool,
        span: Span | None,
    ) -> ExecutionResult:
        key = (query, operation_name)
        plan = _UNSEEN if self.plans is None else self.plans.get(key, _UNSEEN)
        # A mutation's plan runs only where mutations may (POST): elsewhere the general executor
        # refuses the operation.
        if isinstance(plan, Plan) or (isinstance(plan, MutationPlan) and mutations):
            try:
                result = await plan.run(context, variables, self.types, self.schema.limits)
            except Fallback:
                pass  # the general executor answers, errors included
            else:
                if span is not None:
                    ran_plan(span, "query" if isinstance(plan, Plan) else "mutation", plan.operation_name)
                return _capped(result, self.schema.limits.max_errors)
        if span is not None:
            ran_general(span)
        result = await self._general(query, variables, operation_name, context, mutations)
        for error in result.errors or ():
            if not (error.extensions or {}).get("code"):
                error.extensions = {**(error.extensions or {}), "code": INTERNAL_SERVER_ERROR}
        if plan is _UNSEEN and self.plans is not None and not result.errors:
            self.plans[key] = self._compile(query, operation_name)
        return _capped(result, self.schema.limits.max_errors)

    def precompile(self, query: str, operation_name: str | None) -> None:
        """Compile a document now (a trusted one, known before any request), so that its first
        request costs what later ones do; by its name and, for a one-operation document, by none."""
        if self.plans is None:
            return
        plan = self._compile(query, operation_name)
        self.plans[(query, operation_name)] = plan
        if operation_name is not None:
            self.plans[(query, None)] = plan if plan is not None else self._compile(query, None)

    def plan(self, query: str, operation_name: str | None) -> Plan | MutationPlan | None:
        """The plan learnt for a document, if any."""
        return None if self.plans is None else self.plans.get((query, operation_name))

    def _compile(self, query: str, operation_name: str | None) -> Plan | MutationPlan | None:
        try:
            return compile_document(self.types, query, operation_name, self.schema.limits)
        except NotCompilable:
            return None

    async def _general(
        self,
        query: str,
        variables: Mapping[str, Any] | None,
        operation_name: str | None,
        context: Context,
        mutations: bool,
    ) -> ExecutionResult:
        try:
            result = await self.schema.execute(
                query,
                variable_values=dict(variables) if variables is not None else None,
                context_value=context,
                operation_name=operation_name,
                allowed_operation_types=_QUERIES_AND_MUTATIONS if mutations else _QUERIES,
            )
        except InvalidOperationTypeError as exc:
            if exc.operation_type is OperationType.SUBSCRIPTION:
                raise SubscriptionOverHttpError from None
            raise OperationNotAllowedError from None
        except CannotGetOperationTypeError:
            shown = operation_name or ""
            shown = shown if len(shown) <= 64 else f"{shown[:64]}..."
            named = f"named {shown!r} " if operation_name else ""
            raise NoOperationError(f"The document has no operation {named}to run.") from None
        return ExecutionResult(result.data, _listed(result.errors))


def _capped(result: ExecutionResult, most: int) -> ExecutionResult:
    if result.errors and len(result.errors) > most:
        result.errors = capped(result.errors, most)
    return result


def _listed(errors: list[GraphQLError] | None) -> list[GraphQLError] | None:
    return list(errors) if errors else None
