"""Compiled plans of mutations at run time: a `follow` or `unfollow` document answered without
graphql-core (executor/compiler.py makes them, as it makes the read plans of executor/plan.py).

A mutation plan checks everything a request could get wrong before it writes (its variables, the
token, the user id given) and raises Fallback for the general executor to answer with its error.
Once the write has started it never falls back: running a write twice would count a follow twice
against the rate limit. It calls the same resolver function as the general executor (the write,
and the payload's users read in the write's round trip), and builds the payload directly, with
the values and serializers the schema declares; a failure of Redis is answered as the general
executor answers it (a masked error, and no data: the payload is not nullable).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import ExecutionResult, FieldNode, GraphQLError, GraphQLSchema

from followgraph.executor.plan import Fallback, coerce_variables
from followgraph.executor.variables import Variables
from followgraph.resolvers.context import Context
from followgraph.resolvers.mutations import FollowOutcome
from followgraph.schema.document import Argument
from followgraph.schema.errors import MaskUnexpectedErrors
from followgraph.schema.limits import QueryLimits
from followgraph.store import Parts, UserFacts

# The write and the payload's users: (context, other user, parts) -> (outcome, other's, viewer's).
Written = tuple[FollowOutcome, UserFacts | None, UserFacts]
Action = Callable[[Context, str, Parts], Awaitable[Written]]
Build = Callable[[FollowOutcome, UserFacts | None, UserFacts], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class MutationPlan:
    """One `follow` or `unfollow` root field and its payload's selection."""

    operation_name: str | None
    variables: Variables
    key: str
    action: Action
    user_id: Argument
    parts: Parts
    build: Build
    node: FieldNode

    async def run(
        self,
        context: Context,
        variables: Mapping[str, Any] | None,
        schema: GraphQLSchema,
        limits: QueryLimits,
    ) -> ExecutionResult:
        """The response; Fallback, before anything is written, when the general executor must
        answer instead."""
        values = coerce_variables(self.variables, variables)
        if context.viewer_id is None:
            raise Fallback
        user_id = self.user_id.get(values)
        if not isinstance(user_id, str):
            raise Fallback
        context.operation_name = self.operation_name
        try:
            written = await self.action(context, user_id, self.parts)
        except Exception as exc:  # after the write started: answered here, never run twice
            error = GraphQLError(str(exc), nodes=[self.node], path=[self.key], original_error=exc)
            return ExecutionResult(None, [MaskUnexpectedErrors.mask(error, context.request_id)])
        return ExecutionResult({self.key: self.build(*written)})
