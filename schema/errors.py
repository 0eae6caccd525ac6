"""Error masking: expected errors reach clients as they are, anything else is logged and masked;
a write its replicas did not confirm is WRITE_NOT_REPLICATED (store/redis/replicas.py), to retry."""

import logging
from collections.abc import Iterator

from graphql import ExecutionResult as GraphQLExecutionResult
from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.execution import ExecutionResult, StreamExecutionResult

from followgraph.resolvers.errors import INTERNAL_SERVER_ERROR, ApiError
from followgraph.store.redis.replicas import WRITE_NOT_REPLICATED, WriteNotReplicatedError

log = logging.getLogger("followgraph.errors")

MASKED_MESSAGE = "Internal server error."


def is_expected(error: GraphQLError) -> bool:
    """Errors of the request itself (parse, validation, variables) and ApiErrors are shown."""
    original = error.original_error
    return original is None or isinstance(original, ApiError | GraphQLError)


class MaskUnexpectedErrors(SchemaExtension):
    """Replaces unexpected errors by a fixed message with INTERNAL_SERVER_ERROR and the request id."""

    # Whether results went out one by one (on_stream_result): a stream's, over WebSocket.
    _streamed = False

    def on_operation(self) -> Iterator[None]:
        yield
        # A stream's results were masked one by one as they went out (the last one is this one).
        if self._streamed:
            return
        self._mask_result(self.execution_context.result)

    def on_stream_result(self, result: StreamExecutionResult) -> Iterator[None]:
        # A subscription's results are sent as they come, long before its operation ends.
        self._streamed = True
        self._mask_result(result)
        yield

    def _mask_result(self, result: object) -> None:
        if not isinstance(result, ExecutionResult | GraphQLExecutionResult) or not result.errors:
            return
        request_id = getattr(self.execution_context.context, "request_id", "-")
        result.errors = [self.mask(error, request_id) for error in result.errors]

    @staticmethod
    def mask(error: GraphQLError, request_id: str) -> GraphQLError:
        if is_expected(error):
            return error
        original = error.original_error
        if isinstance(original, WriteNotReplicatedError):
            # Made on the primary, not confirmed by its replicas: the client may send it again.
            log.warning(
                "write not replicated in %s: %s",
                ".".join(map(str, error.path or [])) or "the operation",
                original,
                extra={"request_id": request_id},
            )
            return GraphQLError(
                str(original),
                nodes=error.nodes,
                path=error.path,
                extensions={"code": WRITE_NOT_REPLICATED},
                original_error=original,
            )
        log.error(
            "unexpected error in %s",
            ".".join(map(str, error.path or [])) or "the operation",
            exc_info=error.original_error,
            extra={"request_id": request_id},
        )
        return GraphQLError(
            MASKED_MESSAGE,
            nodes=error.nodes,
            path=error.path,
            extensions={"code": INTERNAL_SERVER_ERROR, "requestId": request_id},
            # Kept for the server's own accounting (metrics); never serialized to the client.
            original_error=error.original_error,
        )
