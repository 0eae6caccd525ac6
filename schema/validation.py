"""Request checks that graphql-core leaves to the transport."""

import re
from collections.abc import Iterator

from graphql import GraphQLError, OperationDefinitionNode
from strawberry.extensions import SchemaExtension


class RecordOperationName(SchemaExtension):
    """Tells the context which operation of the document runs (for logs and metrics)."""

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context.context
        if hasattr(context, "operation_name"):
            context.operation_name = self.execution_context.operation_name
        yield


class RequireOperationName(SchemaExtension):
    """A document with several operations must say which to run (Strawberry would run the first)."""

    def on_validate(self) -> Iterator[None]:
        self._check()
        yield

    def _check(self) -> None:
        context = self.execution_context
        # ExecutionContext.operation_name falls back to the first operation's name; the name the
        # client sent is kept privately.
        document = context.graphql_document
        if context._provided_operation_name is not None or document is None:
            return
        operations = sum(isinstance(d, OperationDefinitionNode) for d in document.definitions)
        if operations > 1:
            error = GraphQLError(
                "The document has several operations: give the operation name to run in `operationName`."
            )
            # Set before validation runs, so the document is refused without being validated.
            context.pre_execution_errors = [error]


_SUGGESTION = re.compile(r"\s*Did you mean [^?]*\?")


class HideSuggestions(SchemaExtension):
    """Removes graphql-core's "Did you mean ...?" hints from every error (they name schema members
    that introspection, when off, would hide)."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [_without_suggestion(error) for error in result.errors]


def _without_suggestion(error: GraphQLError) -> GraphQLError:
    if "Did you mean" not in error.message:
        return error
    return GraphQLError(
        _SUGGESTION.sub("", error.message),
        nodes=error.nodes,
        path=error.path,
        original_error=error.original_error,
        extensions=error.extensions,
    )
