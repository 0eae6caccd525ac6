"""Error masking: expected errors reach clients as they are, anything else is logged and masked.
Two failures of the moment say what they are, since a client should send the operation again: a
write its replicas did not confirm is WRITE_NOT_REPLICATED (store/redis/replicas.py), and Redis out
of reach (down, restarting, failing over: no connection, no answer in time, a cluster without a
master for a slot, a primary turned replica) is SERVICE_UNAVAILABLE."""

import logging
from collections.abc import Iterator

from graphql import ExecutionResult as GraphQLExecutionResult
from graphql import GraphQLError
from redis.exceptions import ClusterError, ConnectionError, ReadOnlyError, TimeoutError, TryAgainError
from strawberry.extensions import SchemaExtension
from strawberry.types.execution import ExecutionResult, StreamExecutionResult

from followgraph.resolvers.errors import INTERNAL_SERVER_ERROR, SERVICE_UNAVAILABLE, ApiError
from followgraph.store.redis.replicas import WRITE_NOT_REPLICATED, WriteNotReplicatedError

log = logging.getLogger("followgraph.errors")

MASKED_MESSAGE = "Internal server error."
UNAVAILABLE_MESSAGE = (
    "The graph's store is out of reach for the moment (down, restarting or failing over): send the "
    "operation again shortly. Mutations are idempotent, so sending one again is safe."
)
# Redis out of reach: redis-py's ConnectionError covers a refused or lost connection, a Redis still
# loading its data and a Sentinel that names no primary; ClusterError a cluster with a slot down.
UNAVAILABLE = (ConnectionError, TimeoutError, ClusterError, TryAgainError, ReadOnlyError)


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
        where = ".".join(map(str, error.path or [])) or "the operation"
        context = {"request_id": request_id}
        if isinstance(original, WriteNotReplicatedError):
            # Made on the primary, not confirmed by its replicas: the client may send it again.
            log.warning("write not replicated in %s: %s", where, original, extra=context)
            return _replaced(error, str(original), WRITE_NOT_REPLICATED)
        if isinstance(original, UNAVAILABLE):
            # No traceback: a failover brings one per request for seconds, all alike.
            log.warning(
                "Redis out of reach in %s: %s: %s", where, type(original).__name__, original, extra=context
            )
            return _replaced(error, UNAVAILABLE_MESSAGE, SERVICE_UNAVAILABLE, request_id)
        log.error("unexpected error in %s", where, exc_info=original, extra=context)
        return _replaced(error, MASKED_MESSAGE, INTERNAL_SERVER_ERROR, request_id)


def _replaced(error: GraphQLError, message: str, code: str, request_id: str | None = None) -> GraphQLError:
    """`error` as the client sees it: `message` and `code` (and the request id that finds its log
    line) at its place. The original error is kept for the server's own accounting (metrics), never
    serialized to the client."""
    extensions = {"code": code} if request_id is None else {"code": code, "requestId": request_id}
    nodes, path, original = error.nodes, error.path, error.original_error
    return GraphQLError(message, nodes=nodes, path=path, extensions=extensions, original_error=original)
