"""GraphQL subscriptions over WebSocket on /graphql: the graphql-transport-ws protocol (Strawberry's),
authenticated by the bearer token in connection_init's payload.

Close codes beyond the protocol's own (4400 bad message, 4401 subscribe before ack, 4408 no
connection_init in time, 4409 duplicate id, 4429 second connection_init):

- 4401 Unauthorized, "A token is needed to stay connected past N s: send Authorization in
  connection_init's payload.": a socket whose connection_init carries no token, once
  `anonymous_seconds` (FOLLOWGRAPH_WS_ANONYMOUS_SECONDS) have passed since it; at connection_init
  itself when that setting is 0 ("A token is needed to stay connected: ...");
- 4403 Forbidden: the token in connection_init is bad or expired, or expires while connected;
- 4429 with its reason: the user already has `max_connections_per_user` sockets on this process,
  or `max_anonymous` sockets without a token are open on it (FOLLOWGRAPH_WS_MAX_ANONYMOUS_CONNECTIONS);
- 1001 going away: the server is shutting down (transport/ws_protocol.py);
- 1009 message too big: a message past `max_body_bytes`, the HTTP body limit (uvicorn's
  `ws_max_size`, set by `serve`).

A socket without a token may run queries and mutations, as an anonymous HTTP request may, until its
grace ends; viewerEvents fails for it with UNAUTHENTICATED. Such sockets cost a flood nothing to
open, so they get a grace and a cap: without them, sockets that sent an empty connection_init held
every connection of the process for as long as they stayed (#36). graphql-ws clients do not
reconnect after 4401 or 4429, so an anonymous client is not sent round in a loop. (An upgrade
beyond the process's connection cap is answered 503 before it gets here: transport/http_protocol.py.)
Beyond `max_subscriptions` operations on one socket, a new subscribe gets an error message naming
the limit.

A subscribe payload gets the checks of an HTTP request (graphql_http.parse_params); one that fails
them gets an error message for its id, with the HTTP error. A message that is not a protocol message
at all closes the socket with 4400. Close reasons are cut to the 123 bytes a close frame holds.
Queries and mutations run through the HTTP endpoint's executor (its compiled plans included), each
with its own DataLoaders; only subscriptions run through Strawberry's stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from graphql import GraphQLError
from prometheus_client import Gauge
from starlette.requests import Request
from starlette.websockets import WebSocket
from starlette.websockets import WebSocketDisconnected as SocketClosedError
from strawberry.asgi import GraphQL
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    ConnectionInitMessage,
    Message,
    SubscribeMessage,
)
from strawberry.types import ExecutionResult

from followgraph.executor.execute import Executor, NoOperationError, OperationNotAllowedError, rejected
from followgraph.resolvers.context import Context
from followgraph.schema import FollowGraphSchema
from followgraph.schema.validation import GRAPHQL_VALIDATION_FAILED
from followgraph.transport.auth import AuthConfig, AuthError, Principal, VerifiedTokens
from followgraph.transport.graphql_request import RequestError, parse_params
from followgraph.transport.metrics import Metrics
from followgraph.transport.persisted import PersistedQueries, PersistedQueryError

log = logging.getLogger("followgraph.ws")

UNAUTHORIZED = 4401
FORBIDDEN = 4403
TOO_MANY = 4429
SEND_TOKEN = "send Authorization in connection_init's payload."
# A WebSocket close reason is at most 123 bytes.
MAX_REASON = 123
# An operation still running this long after its socket cancelled it is cancelled again.
RECANCEL_SECONDS = 0.5

# In an operation's task, its own context (Strawberry runs a subscription with `handler.context`).
_operation: ContextVar[Context | None] = ContextVar("followgraph_ws_operation", default=None)


@dataclass(frozen=True, slots=True)
class SocketLimits:
    """The WebSocket endpoint's limits (Settings: FOLLOWGRAPH_WS_*)."""

    max_subscriptions: int = 10
    max_connections_per_user: int = 20
    # Seconds between the server's protocol pings; 0: none (clients may still ping).
    ping_seconds: float = 15.0
    init_timeout: float = 10.0
    # How long a socket without a token stays after its connection_init (0: refused at it), and
    # how many such sockets one process keeps.
    anonymous_seconds: float = 10.0
    max_anonymous: int = 1000


class Sockets:
    """The open sockets of this process, per user (None: the sockets without a token, under a cap
    of their own), and the gauges that count them."""

    def __init__(self, limits: SocketLimits, metrics: Metrics) -> None:
        self.limits = limits
        self.by_user: Counter[str | None] = Counter()
        self.connections: Gauge = metrics.ws_connections
        self.subscriptions: Gauge = metrics.subscriptions

    def admit(self, user_id: str | None) -> bool:
        limits = self.limits
        most = limits.max_anonymous if user_id is None else limits.max_connections_per_user
        if self.by_user[user_id] >= most:
            return False
        self.by_user[user_id] += 1
        return True

    def release(self, user_id: str | None) -> None:
        self.by_user[user_id] -= 1
        if self.by_user[user_id] <= 0:
            del self.by_user[user_id]


def _token(payload: dict[str, Any]) -> str | None:
    """The Authorization value of a connection_init payload (any case of the key)."""
    for key, value in payload.items():
        if isinstance(key, str) and key.lower() == "authorization":
            return value if isinstance(value, str) else ""
    return None


def _reason(text: str) -> str:
    return text.encode()[:MAX_REASON].decode(errors="ignore")


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """Strawberry's graphql-transport-ws handler with authentication, caps, pings and gauges."""

    view: SubscriptionEndpoint

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user_id: str | None = None
        self._admitted = False  # counted among the sockets of user_id (None: without a token)
        self._tasks: list[asyncio.Task[None]] = []
        # Every operation's task until it ends, those a `complete` cancelled included.
        self._running: set[asyncio.Task[None]] = set()

    async def handle(self) -> None:
        sockets = self.view.sockets
        sockets.connections.inc()
        try:
            await super().handle()
        finally:
            for task in self._tasks:
                task.cancel()
            # A cancelled task keeps its CancelledError, whose traceback's frames hold this handler:
            # held here too, the socket's whole state would wait for the cyclic collector.
            self._tasks.clear()
            if self._admitted:
                sockets.release(self.user_id)
            sockets.connections.dec()

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        if self.connection_timed_out or self.connection_init_received:
            await super().handle_connection_init(message)
            return
        payload = message.get("payload") or {}
        if isinstance(payload, dict):
            try:
                principal = await self.view.tokens.authenticate(_token(payload))
            except AuthError as exc:
                await self._refuse(FORBIDDEN, exc.reason)
                return
            limits = self.view.sockets.limits
            if principal is None:
                if limits.anonymous_seconds <= 0:
                    await self._refuse(UNAUTHORIZED, f"A token is needed to stay connected: {SEND_TOKEN}")
                    return
                if not self.view.sockets.admit(None):
                    await self._refuse(
                        TOO_MANY,
                        f"Too many connections without a token: at most {limits.max_anonymous} per "
                        f"server process: {SEND_TOKEN}",
                    )
                    return
                self._admitted = True
                self._start(self._end_grace(limits.anonymous_seconds))
            elif not self._admit(principal):
                await self._refuse(
                    TOO_MANY,
                    f"Too many connections for this user: at most {limits.max_connections_per_user} "
                    "per server process.",
                )
                return
        await super().handle_connection_init(message)
        if self.connection_acknowledged:
            self._start(self._ping())

    async def _refuse(self, code: int, reason: str) -> None:
        """Close the socket at its connection_init with `code` and `reason`."""
        if self.connection_init_timeout_task:
            self.connection_init_timeout_task.cancel()
        await self.websocket.close(code, _reason(reason))

    def _admit(self, principal: Principal) -> bool:
        if not self.view.sockets.admit(principal.user_id):
            return False
        self._admitted = True
        self.user_id = principal.user_id
        context = self.context
        context.viewer_id = principal.user_id
        context.scopes = principal.scopes
        context.forget_loaders()  # the viewer's own, when first used
        if principal.expires_at is not None:
            self._start(self._expire(principal.expires_at + self.view.tokens.config.leeway_seconds))
        return True

    def _start(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        task.add_done_callback(self._task_done)
        self._tasks.append(task)

    async def _ping(self) -> None:
        """The server's pings (the protocol's ping/pong): idle proxies keep the socket open."""
        every = self.view.sockets.limits.ping_seconds
        if every <= 0:
            return
        with contextlib.suppress(WebSocketDisconnected, RuntimeError):
            while True:
                await asyncio.sleep(every)
                await self.send_message({"type": "ping"})

    async def _end_grace(self, seconds: float) -> None:
        """Close a socket without a token `seconds` after its connection_init."""
        await asyncio.sleep(seconds)
        with contextlib.suppress(WebSocketDisconnected, RuntimeError):
            await self.websocket.close(
                UNAUTHORIZED, _reason(f"A token is needed to stay connected past {seconds:g} s: {SEND_TOKEN}")
            )

    async def _expire(self, at: float) -> None:
        await asyncio.sleep(max(0.0, at - time.time()))
        with contextlib.suppress(WebSocketDisconnected, RuntimeError):
            await self.websocket.close(FORBIDDEN, "The token has expired.")

    async def handle_message(self, message: Message) -> None:
        # Strawberry reads `type`, `id` and a subscribe's `payload` without checking what they are.
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            await self.handle_invalid_message("A message must be a JSON object with a string `type`.")
            return
        kind = message["type"]
        if kind in ("subscribe", "complete") and not isinstance(message.get("id"), str):
            await self.handle_invalid_message(f"A {kind} message needs a string `id`.")
            return
        if kind == "subscribe" and not isinstance(message.get("payload"), dict):
            await self.handle_invalid_message("A subscribe message needs an object `payload`.")
            return
        await super().handle_message(message)

    async def send_message(self, message: Message) -> None:
        # An operation that ends after the server closed the socket (a second connection_init,
        # a bad message) has nobody left to tell.
        with contextlib.suppress(WebSocketDisconnected, SocketClosedError):
            await super().send_message(message)

    async def handle_invalid_message(self, error_message: str) -> None:
        await self.websocket.close(4400, _reason(error_message))

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        if not self.connection_acknowledged:
            await super().handle_subscribe(message)  # 4401
            return
        operation_id = message["id"]
        if operation_id in self.operations:
            await self.websocket.close(4409, _reason(f"Subscriber for {operation_id} already exists"))
            return
        try:
            params = parse_params(message["payload"])
        except RequestError as exc:
            await self.send_message({"id": operation_id, "type": "error", "payload": exc.body()["errors"]})
            return
        persisted = self.view.persisted
        if persisted.required:
            try:
                persisted.checked(params.query)
            except PersistedQueryError as exc:
                error = GraphQLError(str(exc), extensions={"code": exc.code})
                await self.send_message({"id": operation_id, "type": "error", "payload": [error.formatted]})
                return
        most = self.view.sockets.limits.max_subscriptions
        if len(self.operations) >= most:
            error = GraphQLError(
                f"Too many subscriptions on this connection: at most {most}. Complete one first.",
                extensions={"code": "TOO_MANY_SUBSCRIPTIONS"},
            )
            await self.send_message({"id": message["id"], "type": "error", "payload": [error.formatted]})
            return
        await super().handle_subscribe(message)
        operation = self.operations.get(message["id"])
        if operation is not None and operation.task is not None:
            gauge = self.view.sockets.subscriptions
            gauge.inc()
            operation.task.add_done_callback(lambda _task: gauge.dec())
            self._running.add(operation.task)
            operation.task.add_done_callback(self._operation_done)

    def _operation_done(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if task.cancelled():
            # Taking the cancellation out of the task drops it: kept, its traceback's frames hold
            # the operation, which holds the task, a reference cycle that left the operation's
            # whole state to the cyclic collector when a `complete` ended it.
            with contextlib.suppress(asyncio.CancelledError):
                task.result()

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        """A query or mutation through the executor, as over HTTP; a subscription through Strawberry."""
        context = self._operation_context()
        try:
            result = await self.view.executor.execute(
                operation.query,
                variables=operation.variables,
                operation_name=operation.operation_name,
                context=context,
                mutations=True,
            )
        except OperationNotAllowedError:
            result = None  # the only operations left: subscriptions
        except NoOperationError as exc:
            error = GraphQLError(str(exc), extensions={"code": GRAPHQL_VALIDATION_FAILED})
            await operation.send_initial_errors([error])
            return
        except Exception as exc:  # as Strawberry's run_operation does
            await self.handle_task_exception(exc)
            with contextlib.suppress(Exception):
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
            self.operations.pop(operation.id, None)
            raise
        if result is None:
            # Its own context (its request id in masked errors and logs), set in this task only.
            _operation.set(context)
            await super().run_operation(operation)
            return
        if rejected(result):
            await operation.send_initial_errors(list(result.errors or ()))
            return
        await operation.send_next(ExecutionResult(data=result.data, errors=result.errors))
        await operation.send_operation_message({"id": operation.id, "type": "complete"})

    def _operation_context(self) -> Context:
        """The socket's context with DataLoaders of its own: an operation reads what is stored now,
        not what an earlier operation on the socket loaded."""
        context = dataclasses.replace(self.context, request_id=uuid.uuid4().hex, operation_name=None)
        context.forget_loaders()
        return context

    @property
    def context(self) -> Context:
        """The socket's context; in an operation's task, the operation's own."""
        context = _operation.get()
        return self._socket_context if context is None else context

    @context.setter
    def context(self, context: Context) -> None:
        self._socket_context = context

    async def shutdown(self) -> None:
        """End every operation started on the socket before the socket's slot is given back.

        Strawberry cancels the operations the socket still holds and waits for them; one that a
        `complete` cancelled is no longer held, and a cancel that lands as an awaited call finishes
        can be lost in a library (redis-py's wait_for on Python 3.11): such a task waited forever,
        and so did this socket's slot (#36). So each is cancelled again until it has ended.
        """
        await _end(self._running)
        await super().shutdown()


async def _end(tasks: Iterable[asyncio.Task[None]]) -> None:
    """Cancel `tasks` and return once all have ended, cancelling again those still running after
    RECANCEL_SECONDS."""
    while pending := [task for task in tasks if not task.done()]:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=RECANCEL_SECONDS)


class SubscriptionEndpoint(GraphQL[Context, None]):
    """The WebSocket side of /graphql (Starlette routes HTTP to transport/graphql_http.py)."""

    graphql_transport_ws_handler_class = TransportWSHandler

    def __init__(
        self,
        schema: FollowGraphSchema,
        auth: AuthConfig,
        limits: SocketLimits,
        metrics: Metrics,
        *,
        executor: Executor | None = None,
        allowed_origins: Sequence[str] = (),
        persisted: PersistedQueries | None = None,
    ) -> None:
        # A browser page on another origin may open a socket only from the CORS origins, as it
        # may call the API over HTTP only from them (Strawberry checks the handshake's Origin).
        super().__init__(
            schema,
            graphql_ide=None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=limits.init_timeout),
            max_subscriptions_per_connection=None,
            allowed_origins=allowed_origins,
        )
        self.tokens = VerifiedTokens(auth)
        self.metrics = metrics
        # Queries and mutations over WebSocket; the HTTP endpoint's, to share its compiled plans.
        self.executor = executor or Executor(schema)
        self.sockets = Sockets(limits, metrics)
        # With trusted documents required, an operation over WebSocket must be one of them too.
        self.persisted = persisted or PersistedQueries()

    async def get_context(self, request: Request | WebSocket, response: Any) -> Context:
        state = request.app.state
        context = Context.create(
            state.store,
            observe=self.metrics.observe_batch,
            follow_limit=state.follow_limit,
            max_page_size=self.schema.limits.max_page_size,  # type: ignore[attr-defined]
        )
        context.hub = state.hub
        return context
