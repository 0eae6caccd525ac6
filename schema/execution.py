"""The execution context Strawberry runs the schema's operations in, without graphql-core's own
reference cycle.

graphql-core (3.3) keeps on each executor the helpers it hands to resolvers (`info.async_helpers`),
made of the executor's own bound methods: the executor refers to itself, so it is freed only by the
cyclic collector, with everything it holds (the operation's context and DataLoaders, its field
caches). A subscription keeps its executor for as long as it runs; each one that ended left some 40
objects to the collector. Here the helpers reach the executor through a weak reference, and the
executor is freed as soon as its operation is done with it.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Sequence
from typing import Any

from graphql.type.definition import GraphQLResolveInfoHelpers
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext


class AcyclicExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's execution context whose resolver helpers refer to it weakly."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.async_helpers = _helpers(weakref.ref(self))


def _helpers(executor: weakref.ref[AcyclicExecutionContext]) -> GraphQLResolveInfoHelpers:
    # A resolver runs while its operation's executor does: the reference is alive whenever called.
    def gather(values: Sequence[Awaitable[Any]]) -> Awaitable[list[Any]]:
        return _alive(executor).gather_async_work(values)

    def track(values: Sequence[Any]) -> None:
        _alive(executor).track_async_work(values)

    return GraphQLResolveInfoHelpers(gather=gather, track=track)


def _alive(executor: weakref.ref[AcyclicExecutionContext]) -> AcyclicExecutionContext:
    alive = executor()
    if alive is None:
        raise RuntimeError("a resolver used info.async_helpers after its operation ended")
    return alive
