"""GraphQL over HTTP (https://graphql.github.io/graphql-over-http/): the /graphql endpoint.

Strawberry's own views answer transport errors as plain text and do not speak
`application/graphql-response+json`; this endpoint follows the specification and hands the
operation to the Strawberry schema.

- GET runs queries only (a mutation over GET is 405, Allow: POST); POST needs a JSON body.
- `Accept: application/graphql-response+json`: request errors (bad JSON, parse, validation,
  variables) are 400 without `data`; executed operations are 200. `application/json` (the
  default without Accept): 200 for every well-formed request, as the legacy format says.
- A bad bearer token is 401 with a JSON GraphQL error; no token means an anonymous viewer.
- A subscription is 400: subscriptions run over WebSocket (transport/subscriptions.py).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from redis.exceptions import RedisError
from starlette.datastructures import QueryParams
from starlette.types import Receive, Scope, Send

from followgraph.executor.execute import (
    Executor,
    NoOperationError,
    OperationNotAllowedError,
    SubscriptionOverHttpError,
    rejected,
)
from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import INTERNAL_SERVER_ERROR, SERVICE_UNAVAILABLE, UNAUTHENTICATED
from followgraph.schema import FollowGraphSchema
from followgraph.store import FollowStore
from followgraph.store.graph.ratelimit import FollowLimit
from followgraph.store.redis.replicas import WRITE_NOT_REPLICATED
from followgraph.store.redis.spans import UNRECORDED
from followgraph.transport.auth import AuthConfig, AuthError, Principal, VerifiedTokens
from followgraph.transport.deadlines import Deadlines
from followgraph.transport.graphql_request import (
    GRAPHQL_RESPONSE,
    JSON,
    GraphQLParams,
    RequestError,
    content_media_type,
    json_object,
    negotiate,
    parse_params,
    read_body,
    too_large,
)
from followgraph.transport.logs import AccessLog
from followgraph.transport.logs import request_id as request_id_var
from followgraph.transport.metrics import Metrics
from followgraph.transport.persisted import PersistedQueries, PersistedQueryError, TrustedMode
from followgraph.transport.tracing import Tracing, trace_ids
from followgraph.transport.web import GRAPHIQL_NOT_BUILT

HTML = b"text/html; charset=utf-8"
_CONTENT_TYPES = {media: f"{media}; charset=utf-8".encode() for media in (GRAPHQL_RESPONSE, JSON)}
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
# The request headers the endpoint reads; the others are not decoded.
_READ_HEADERS = {
    name.encode(): name
    for name in ("accept", "authorization", "content-length", "content-type", "x-request-id")
}


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    auth: AuthConfig
    graphiql: bool = True
    # The GraphiQL page to serve: the bundled one, or one saying it is not built (transport/web.py).
    graphiql_html: str = GRAPHIQL_NOT_BUILT
    max_body_bytes: int = 1_000_000
    # Automatic persisted queries and trusted documents (transport/persisted.py).
    persisted: PersistedQueries = field(default_factory=PersistedQueries)
    # Operations per JSON-array request; 0 refuses batches.
    max_batch: int = 0
    request_timeout: float = 10.0
    # Run a query document that already ran without error from its compiled plan.
    compiled_queries: bool = True


class GraphQLEndpoint:
    """The handler of /graphql, bound to one schema, configuration and metrics."""

    def __init__(
        self,
        schema: FollowGraphSchema,
        config: EndpointConfig,
        metrics: Metrics,
        *,
        tracing: Tracing | None = None,
    ) -> None:
        self.schema = schema
        self.config = config
        self.metrics = metrics
        self._tokens = VerifiedTokens(config.auth)
        # Requests and their operations in spans, when tracing is on (transport/tracing.py).
        self.tracing = tracing
        self.executor = Executor(
            schema, compiled=config.compiled_queries, tracer=None if tracing is None else tracing.tracer
        )
        self.access = AccessLog("followgraph.http")
        # One budget for reading the body and running the operations: a body trickled in slowly
        # cannot make the request outlive it.
        self.deadlines = Deadlines(config.request_timeout)
        # What the application's start-up made (serve()).
        self._store: FollowStore | None = None
        self.persisted = config.persisted
        # A company's manifest is compiled at start (its first requests cost what later ones do);
        # with trusted documents off, the web app's documents are learnt as any other, at their first
        # run, which keeps the start (of every worker, and of every test's server) 30 ms shorter.
        if self.persisted.mode is not TrustedMode.OFF:
            for operation in self.persisted.trusted.values():
                self.executor.precompile(operation.body, operation.name)
        self._follow_limit: FollowLimit | None = None

    def serve(self, store: FollowStore, follow_limit: FollowLimit | None) -> None:
        """Answer with `store` and `follow_limit` from now on (the application's start-up)."""
        self._store, self._follow_limit = store, follow_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI application of the path: answered without Starlette's Request and Response
        objects."""
        answer = self.handle(scope, receive)
        unrecorded = None
        if self.tracing is not None:
            # A request its caller did not sample records nothing: no span, and no coroutine around it.
            unrecorded = self.tracing.unrecorded(scope)
            if unrecorded is None:
                answer = self.tracing.request(scope, answer, "/graphql")
        try:
            status, body, headers = await answer
        finally:
            if unrecorded is not None:
                UNRECORDED.reset(unrecorded)
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def handle(self, scope: Scope, receive: Receive) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        """The status, body and headers of the answer to the HTTP request of `scope`."""
        headers = _headers(scope)
        request_id = headers.get("x-request-id", "")
        if not _REQUEST_ID.fullmatch(request_id):
            # 128 random bits from the process's generator, not os.urandom: an id needs to be
            # unique, not secret, and this saves a system call a request.
            request_id = f"{random.getrandbits(128):032x}"
        started = time.perf_counter()
        request_id_var.set(request_id)
        media_type = JSON
        operation_name: str | None = None  # once known
        reading = True
        try:
            if self._wants_graphiql(scope, headers):
                page = self.config.graphiql_html
                return 200, page.encode(), _response_headers(HTML, request_id)
            media_type = negotiate(headers.get("accept"))
            try:
                with self.deadlines.within() as due:
                    payload = await self._resolved(await self._payload(scope, receive, headers))
                    reading = False
                    principal = await self._principal(headers)
                    if isinstance(payload, list):
                        bodies = []
                        for params in payload:
                            context = self._context(principal, request_id, due)
                            bodies.append(await self._run_one(scope, params, context, media_type))
                        self._finish(scope, 200, "batch", None, started, request_id, label="batch")
                        return self._respond(200, bodies, media_type, request_id)
                    run = self._context(principal, request_id, due)
                    operation_name = payload.operation_name
                    status, body, outcome = await self._execute(scope, payload, run, media_type)
                    operation_name = run.operation_name or payload.operation_name
            except TimeoutError:
                raise self._late(reading) from None
        except RequestError as exc:
            status, body = exc.status, exc.body()
            outcome = "unauthenticated" if exc.status == 401 else "rejected"
            answer = self._respond(status, body, media_type, request_id)
            answer[2].extend((name.encode(), value.encode()) for name, value in exc.headers.items())
            self._finish(scope, status, outcome, operation_name, started, request_id)
            return answer
        self._finish(scope, status, outcome, operation_name, started, request_id)
        return self._respond(status, body, media_type, request_id)

    def _context(self, principal: Principal | None, request_id: str, due: float) -> Context:
        store = self._store
        if store is None:
            raise RuntimeError(
                "/graphql was asked before the application started (its lifespan calls serve())."
            )
        return Context.create(
            store,
            viewer_id=principal.user_id if principal else None,
            scopes=principal.scopes if principal else frozenset(),
            request_id=request_id,
            observe=self.metrics.observe_batch,
            follow_limit=self._follow_limit,
            max_page_size=self.schema.limits.max_page_size,
            deadline=due,
        )

    def _late(self, reading: bool) -> RequestError:
        timeout = self.config.request_timeout
        if reading:
            return RequestError(
                408, f"The request body did not arrive within {timeout:g} s.", code="REQUEST_TIMEOUT"
            )
        return RequestError(
            503, f"The request did not finish within {timeout:g} s and was cancelled.", code="REQUEST_TIMEOUT"
        )

    async def _run_one(
        self, scope: Scope, params: GraphQLParams, context: Context, media_type: str
    ) -> dict[str, Any]:
        """One operation of a batch: its request errors become its own response."""
        try:
            return (await self._execute(scope, params, context, media_type))[1]
        except RequestError as exc:
            return exc.body()

    def _wants_graphiql(self, scope: Scope, headers: Mapping[str, str]) -> bool:
        return (
            self.config.graphiql
            and scope["method"] == "GET"
            and "text/html" in headers.get("accept", "")
            and "query" not in QueryParams(scope["query_string"])
        )

    async def _resolved(
        self, payload: GraphQLParams | list[GraphQLParams]
    ) -> GraphQLParams | list[GraphQLParams]:
        """The payload with the documents of persisted queries found (or RequestError)."""
        if isinstance(payload, list):
            return [await self._document(params) for params in payload]
        return await self._document(payload)

    async def _document(self, params: GraphQLParams) -> GraphQLParams:
        if params.persisted is None:
            if self.persisted.required:
                try:
                    self.persisted.checked(params.query)
                except PersistedQueryError as exc:
                    raise RequestError(400, str(exc), code=exc.code) from None
            return params
        assert self._store is not None
        try:
            query = await self.persisted.document(self._store, params.persisted, params.query or None)
        except PersistedQueryError as exc:
            # Not found is what Apollo's link waits for to send the document: not a client error.
            raise RequestError(
                200 if exc.code == "PERSISTED_QUERY_NOT_FOUND" else 400, str(exc), code=exc.code
            ) from None
        return params._replace(query=query)

    async def _payload(
        self, scope: Scope, receive: Receive, headers: Mapping[str, str]
    ) -> GraphQLParams | list[GraphQLParams]:
        method = scope["method"]
        if method == "GET":
            raw: dict[str, Any] = dict(QueryParams(scope["query_string"]))
            for name in ("variables", "extensions"):
                if name in raw:
                    raw[name] = json_object(raw[name], f"`{name}`")
            return parse_params(raw, persisted=True)
        if method != "POST":
            raise RequestError(
                405, "Use GET for queries or POST for any operation.", headers={"allow": "GET, POST"}
            )
        content_type = content_media_type(headers.get("content-type", ""))
        if content_type != JSON:
            raise RequestError(
                415,
                f"Send the request body as {JSON} (got {content_type or 'no content type'}).",
                code="UNSUPPORTED_MEDIA_TYPE",
            )
        declared = headers.get("content-length")
        limit = self.config.max_body_bytes
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise too_large(limit)
        data = json_object(await read_body(receive, limit), "The request body")
        if isinstance(data, list):
            return self._batch(data)
        if not isinstance(data, dict):
            raise RequestError(400, "The request body must be a JSON object with a `query`.")
        return parse_params(data, persisted=True)

    def _batch(self, items: list[Any]) -> list[GraphQLParams]:
        most = self.config.max_batch
        if most == 0:
            raise RequestError(
                400, "Batched requests (a JSON array) are not accepted: send one operation per request."
            )
        if not 0 < len(items) <= most:
            raise RequestError(400, f"A batch holds 1 to {most} operations, got {len(items)}.")
        if not all(isinstance(item, dict) for item in items):
            raise RequestError(400, "Every operation of a batch must be a JSON object with a `query`.")
        return [parse_params(item, persisted=True) for item in items]

    async def _principal(self, headers: Mapping[str, str]) -> Principal | None:
        try:
            return await self._tokens.authenticate(headers.get("authorization"))
        except AuthError as exc:
            raise RequestError(
                401,
                exc.reason,
                code=UNAUTHENTICATED,
                headers={"www-authenticate": 'Bearer error="invalid_token"'},
            ) from None

    async def _execute(
        self, scope: Scope, params: GraphQLParams, context: Context, media_type: str
    ) -> tuple[int, dict[str, Any], str]:
        try:
            result = await self.executor.execute(
                params.query,
                variables=params.variables,
                operation_name=params.operation_name,
                context=context,
                mutations=scope["method"] == "POST",
            )
        except SubscriptionOverHttpError:
            raise RequestError(
                400,
                "Subscriptions run over WebSocket on this path "
                "(the graphql-transport-ws protocol), not HTTP.",
            ) from None
        except OperationNotAllowedError:
            raise RequestError(405, "Mutations need POST.", headers={"allow": "POST"}) from None
        except NoOperationError as exc:
            raise RequestError(
                400 if media_type == GRAPHQL_RESPONSE else 200, str(exc), code="GRAPHQL_VALIDATION_FAILED"
            ) from None
        if not result.errors:  # the usual answer
            return 200, {"data": result.data}, "ok"
        raw_errors = result.errors
        for error in raw_errors:
            if isinstance(error.original_error, RedisError):
                self.metrics.redis_errors.labels(type(error.original_error).__name__).inc()
        errors = [error.formatted for error in raw_errors]
        body: dict[str, Any] = {"errors": errors} if errors else {}
        if rejected(result):
            return (400 if media_type == GRAPHQL_RESPONSE else 200), body, "rejected"
        body["data"] = result.data
        if any(e["extensions"]["code"] == INTERNAL_SERVER_ERROR for e in errors):
            return 200, body, "internal"
        if any(e["extensions"]["code"] == SERVICE_UNAVAILABLE for e in errors):
            return 200, body, "unavailable"
        if any(e["extensions"]["code"] == WRITE_NOT_REPLICATED for e in errors):
            # A GraphQL response like any other (as the specification asks of an executed
            # operation), counted apart: writes the replicas did not confirm.
            return 200, body, "not_replicated"
        return 200, body, "error" if errors else "ok"

    @staticmethod
    def _respond(
        status: int, body: dict[str, Any] | list[Any], media_type: str, request_id: str
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        return status, orjson.dumps(body), _response_headers(_CONTENT_TYPES[media_type], request_id)

    def _finish(
        self,
        scope: Scope,
        status: int,
        outcome: str,
        operation_name: str | None,
        started: float,
        request_id: str,
        label: str | None = None,
    ) -> None:
        """Count the request under `label`, else under its operation's name made a bounded label, and
        log its access line with the name as it is (None: the document names no operation; a name
        longer than MAX_OPERATION_NAME was refused before it got here)."""
        seconds = time.perf_counter() - started
        self.metrics.observe_request(label or self.metrics.operation(operation_name), outcome, seconds)
        self.access(
            scope["method"],
            scope["path"],
            status,
            outcome,
            seconds,
            request_id=request_id,
            operation_name=operation_name,
            trace=None if self.tracing is None else trace_ids(),
        )


def _headers(scope: Scope) -> dict[str, str]:
    """The request headers the endpoint reads, by lower-case name; the first of repeated ones."""
    headers: dict[str, str] = {}
    for raw, value in scope["headers"]:
        name = _READ_HEADERS.get(raw)
        if name is not None and name not in headers:
            headers[name] = value.decode("latin-1")
    return headers


def _response_headers(content_type: bytes, request_id: str) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", content_type), (b"x-request-id", request_id.encode())]
