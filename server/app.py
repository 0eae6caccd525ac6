"""The Starlette application: /graphql (HTTP, and subscriptions over WebSocket), /healthz, /readyz,
(unless on its own port) /metrics and the web front (transport/web.py)."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from redis.asyncio import RedisCluster
from redis.exceptions import RedisError
from starlette.applications import Starlette
from starlette.datastructures import State
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from followgraph.executor.spans import OperationTypeOnSpan
from followgraph.schema import build_schema
from followgraph.schema.federation import build_subgraph_schema
from followgraph.server.background import Worker, running
from followgraph.server.embedded import SharedRedis
from followgraph.server.redis_client import (
    cluster_replicas,
    connect,
    connect_replicas,
    sentinel_replicas,
    warm_up,
)
from followgraph.server.search import SearchIndexer
from followgraph.server.settings import Settings
from followgraph.server.sync import SqlSync
from followgraph.server.watchdog import RedisWatchdog
from followgraph.store import FollowStore, StoreError
from followgraph.store.log.hub import EventHub
from followgraph.store.log.stream import EventLog
from followgraph.store.redis.channel import Reads
from followgraph.store.redis.channels import open_reads
from followgraph.store.redis.cluster_channel import ClusterReadChannel
from followgraph.store.redis.keeping_channel import KeepingReadChannel
from followgraph.store.redis.lua import Client
from followgraph.store.redis.replica_reads import ClientReads, ReplicaReads
from followgraph.store.redis.replicas import wait_for_replicas
from followgraph.store.redis.spans import trace_client
from followgraph.transport.account import account_routes
from followgraph.transport.graphql_http import EndpointConfig, GraphQLEndpoint
from followgraph.transport.jwks import JwksKeys
from followgraph.transport.logs import configure_logging
from followgraph.transport.metrics import Metrics
from followgraph.transport.subscriptions import SubscriptionEndpoint
from followgraph.transport.tracing import Tracing
from followgraph.transport.tracing_config import tracing_from_env
from followgraph.transport.web import WEB_PROJECT, WebBuild, graphiql_page, web_routes

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

log = logging.getLogger(__name__)

READY_TIMEOUT = 2.0
# How long a stopping server waits for the acceptances of follow requests to end their batch.
ACCEPTANCE_GRACE = 5.0
# Seconds between two exports of the read channel's counts to the metrics.
CACHE_EXPORT_SECONDS = 5.0


def create_app(
    settings: Settings,
    *,
    redis: Client | None = None,
    watchdog: RedisWatchdog | None = None,
    shared: SharedRedis | None = None,
    tracing: Tracing | None = None,
) -> FollowGraphApp:
    """The application for `settings`; `redis` (not closed by the app) replaces settings.redis_url.

    `watchdog` keeps the embedded Redis this process started: /healthz fails when it gives up, and
    /metrics counts its restarts. `shared` is the embedded Redis another process started (the
    parent of `serve --workers`' workers): /healthz fails once it is gone with its owner.
    `tracing` (transport/tracing.py) puts requests, operations, Redis round trips and SQL batches
    in spans; without it, none is made.
    """
    if redis is None and settings.redis_url is None:
        raise ValueError("create_app needs a Redis: pass redis= or set redis_url (FOLLOWGRAPH_REDIS_URL).")
    build = build_subgraph_schema if settings.federation else build_schema
    schema = build(
        limits=settings.query_limits,
        introspection=settings.introspection,
        suggestions=settings.suggestions,
        # The general executor's operations tell their type to their spans.
        extensions=() if tracing is None else (OperationTypeOnSpan,),
    )
    auth = settings.auth_config()
    web = WebBuild.find(settings.web_dist or WEB_PROJECT / "dist")
    config = EndpointConfig(
        auth=auth,
        graphiql=settings.graphiql,
        graphiql_html=graphiql_page(web),
        compiled_queries=settings.compiled_queries,
        max_body_bytes=settings.max_body_bytes,
        persisted=settings.persisted_queries(),
        max_batch=settings.max_batch,
        request_timeout=settings.request_timeout,
    )
    metrics = Metrics()
    if watchdog is not None:
        metrics.registry.register(watchdog)
    endpoint = GraphQLEndpoint(schema, config, metrics, tracing=tracing)
    subscriptions = SubscriptionEndpoint(
        schema,
        auth,
        settings.socket_limits,
        metrics,
        executor=endpoint.executor,
        allowed_origins=settings.cors_origins,
        persisted=config.persisted,
    )
    routes = [
        # FollowGraphApp answers /graphql's HTTP requests before the router; the router's route
        # redirects /graphql/ here and names the path beside the WebSocket route.
        Route("/graphql", endpoint, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
        WebSocketRoute("/graphql", subscriptions),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        *account_routes(auth, max_bytes=settings.max_body_bytes),
        *web_routes(web, demo_auth=auth if settings.demo else None),
    ]
    if settings.metrics_port is None:
        routes.append(Route("/metrics", metrics_endpoint, methods=["GET"]))
    middleware = _middleware(settings)
    app = FollowGraphApp(routes=routes, middleware=middleware, lifespan=lifespan)
    # /graphql's fast route goes through the same middleware as every other route.
    app.graphql = _wrapped(endpoint, middleware)
    app.state.settings = settings
    app.state.given_redis = redis
    app.state.endpoint = endpoint
    app.state.metrics = metrics
    app.state.keeper = watchdog or shared
    app.state.tracing = tracing
    return app


def _middleware(settings: Settings) -> list[Middleware]:
    if not settings.cors_origins:
        return []
    cors = Middleware(
        CORSMiddleware,
        allow_origins=list(settings.cors_origins),
        allow_methods=["GET", "POST"],
        allow_headers=["authorization", "content-type", "x-request-id"],
        expose_headers=["x-request-id"],
        max_age=600,
    )
    return [cors]


def _wrapped(app: ASGIApp, middleware: list[Middleware]) -> ASGIApp:
    """`app` behind `middleware`, the first outermost, as Starlette builds its stack."""
    for layer in reversed(middleware):
        app = layer.cls(app, *layer.args, **layer.kwargs)
    return app


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """The process's Redis client, store, SQL copy feeder and change log hub, from start to stop."""
    state = app.state
    settings: Settings = state.settings
    given: Client | None = state.given_redis
    client = given if given is not None else connect(settings.redis_url or "", timeout=settings.redis_timeout)
    state.redis = client
    tracing: Tracing | None = state.tracing
    tracer = None if tracing is None else tracing.tracer
    # What goes through redis-py gets its spans on this client alone (a given one is put back).
    untrace = None if tracer is None else trace_client(client, tracer)
    # Each write of the graph waits for the replicas asked for (store/redis/replicas.py).
    wait = settings.replica_wait
    unwait = None if wait is None else wait_for_replicas(client, wait, settings.keys.replicated)
    reads: Reads | None = (
        open_reads(client, timeout=settings.redis_timeout, cache=settings.profile_cache, tracer=tracer)
        if settings.read_channel
        else None
    )
    if settings.read_from_replicas:
        reads = _replica_reads(settings, client, reads, tracer)
    state.store = store = FollowStore(client, keys=settings.keys, reads=reads)
    state.follow_limit = settings.follow_limit
    state.endpoint.serve(store, settings.follow_limit)
    await warm_up(client)
    _start_log_readers(state, settings)
    _collect_less()
    metrics: Metrics = state.metrics
    store.watch_jobs(metrics.account_change)
    # Each process adds its read channel's counts of kept profiles to the metrics now and then (with
    # several workers, each writes its own values; /metrics adds them up).
    exporting: asyncio.Task[None] | None = None
    if isinstance(reads, ClusterReadChannel | KeepingReadChannel):
        metrics.watch_cache(reads.cache_stats)
        exporting = asyncio.create_task(_export_cache(metrics))
    # The acceptances of unlocked accounts' requests that the last stop or a crash cut short.
    resuming = asyncio.create_task(_resume_acceptances(store))
    # The account changes in batches (big accounts, a cluster) that the last stop cut short.
    lifecycles = asyncio.create_task(_resume_lifecycle(store))
    try:
        workers: list[Worker] = [w for w in (state.sync, state.indexer) if w is not None]
        async with running(workers):
            yield
    finally:
        await _finish_acceptances(store)
        resuming.cancel()
        lifecycles.cancel()
        if exporting is not None:
            exporting.cancel()
        await state.hub.stop()
        if reads is not None:
            await reads.aclose()
        if unwait is not None:
            unwait()
        if untrace is not None:
            untrace()
        if given is None:
            await client.aclose()
        if tracing is not None:
            # The spans of the last requests, before the process goes (a collector away costs
            # the exporter's timeout at most).
            await asyncio.to_thread(tracing.flush)


def _replica_reads(settings: Settings, client: Client, primary: Reads | None, tracer: Tracer | None) -> Reads:
    """Pages and facts read from the replicas (store/redis/replica_reads.py), traced as the primary's
    reads are; the primary's read channel (a cluster's) or client (Sentinel's) behind them."""
    if isinstance(client, RedisCluster):
        replicas = ClusterReadChannel.for_client(
            client, timeout=settings.redis_timeout, cache=0, tracer=tracer, replica=True
        )
        assert replicas is not None, "a cluster over TLS reads from its masters (Settings.validate)"
        return ReplicaReads(
            replicas,
            primary or ClientReads(client, owns=False),
            waited=settings.write_replicas,
            count=lambda: cluster_replicas(client),
        )
    sentinel = connect_replicas(settings.redis_url or "", timeout=settings.redis_timeout)
    if tracer is not None:
        trace_client(sentinel, tracer)
    return ReplicaReads(
        ClientReads(sentinel, owns=True),
        # Sentinel's primary (the only one it takes) has no read channel: `primary` is None.
        ClientReads(client, owns=False),
        waited=settings.write_replicas,
        count=lambda: sentinel_replicas(sentinel),
    )


def _start_log_readers(state: State, settings: Settings) -> None:
    """The SQL copy's and the search index's consumers and the subscriptions' hub, sharing what
    they know of the log."""
    events = EventLog(state.store)
    url = settings.sql_url if settings.sync else None
    state.sync = (
        None
        if url is None
        else SqlSync(
            state.store,
            url,
            registry=state.metrics.registry,
            batch=settings.sync_batch,
            keep_seconds=settings.event_log_keep,
            events=events,
            tracing=state.tracing,
        )
    )
    state.indexer = (
        SearchIndexer(state.store, keep_seconds=settings.event_log_keep, events=events)
        if settings.search_index
        else None
    )
    # One reader of the change log per process feeds every subscription it holds; the first
    # subscription starts it.
    state.hub = EventHub(
        events, buffer=settings.subscription_buffer, observe=state.metrics.dispatch_delay.observe
    )


def _collect_less() -> None:
    # Everything built so far lives as long as the process: out of the collector's sight. And
    # collect less often: with 1,000 sockets open, the default thresholds stalled the process
    # for 0.4-0.7 s at a time under 200 follows/s (delivery p99 353-626 ms); with these,
    # p99 21-28 ms, max 58 ms (make bench, subscriptions, on a quiet machine). With 10,000 open,
    # each young-generation pass takes 80-105 ms, which sets the delivery p99 (47 ms); a closed
    # subscription leaves the collector nothing (tests/transport/test_subscription_cycles.py).
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


async def _finish_acceptances(store: FollowStore) -> None:
    # An acceptance stops between its batches; what it leaves, the next start takes up.
    late = await store.finish_acceptances(ACCEPTANCE_GRACE)
    if late:
        log.warning(
            "%d acceptance(s) of follow requests still running at shutdown: a batch may be "
            "left half done (`followgraph repair` completes it)",
            late,
        )


async def healthz(request: Request) -> JSONResponse:
    """Liveness: 503 when the embedded Redis is gone for good (its watchdog gave up, or the process
    that owned it has exited)."""
    keeper: RedisWatchdog | SharedRedis | None = request.app.state.keeper
    problem = keeper.problem() if keeper is not None else None
    if problem is not None:
        return JSONResponse({"status": "failing", "problem": problem}, status_code=503)
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> JSONResponse:
    """Readiness: Redis answers; the SQL copy's state, and the identity provider's keys', are
    reported, not judged (cached keys keep working while the provider is away)."""
    try:
        async with asyncio.timeout(READY_TIMEOUT):
            await request.app.state.redis.ping()
    except (RedisError, OSError, TimeoutError) as exc:
        return JSONResponse({"status": "unavailable", "redis": type(exc).__name__}, status_code=503)
    body: dict[str, object] = {"status": "ok", "redis": "ok"}
    # A lagging copy does not stop the API.
    sync: SqlSync | None = request.app.state.sync
    if sync is not None:
        body["sync"] = sync.state.body()
    jwks: JwksKeys | None = request.app.state.endpoint.config.auth.jwks
    if jwks is not None:
        body["keys"] = jwks.state()
    return JSONResponse(body)


async def metrics_endpoint(request: Request) -> Response:
    metrics: Metrics = request.app.state.metrics
    return Response(metrics.render(), media_type=metrics.content_type)


class FollowGraphApp(Starlette):
    """Starlette, with the HTTP requests of /graphql handed straight to the endpoint (behind the
    CORS middleware when there is one). The error middleware, the router's matching and the
    middleware stack's calls cost some 8 µs a request, 3% of a page's CPU time; the endpoint
    answers its own errors."""

    graphql: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.graphql is not None and scope["type"] == "http" and scope["path"] == "/graphql":
            scope["app"] = self
            await self.graphql(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


async def _resume_lifecycle(store: FollowStore) -> None:
    try:
        users = await store.resume_lifecycle()
    except (RedisError, OSError, StoreError) as exc:
        log.warning("Could not take up the unfinished account changes (the next start will): %s", exc)
        return
    if users:
        log.info("Took up the unfinished changes of %d account(s): %s.", len(users), ", ".join(users))


async def _resume_acceptances(store: FollowStore) -> None:
    try:
        users = await store.marked_acceptances()
        if users:
            log.info(
                "Taking up the unfinished acceptance of the follow requests of %d account(s).", len(users)
            )
        await store.resume_acceptances(users)
    except (RedisError, OSError) as exc:
        log.warning(
            "Could not take up the unfinished acceptances of follow requests (the next start "
            "will, or the owner unlocking again): %s",
            exc,
        )
        return
    if users:
        log.info("Took up the unfinished acceptance of the follow requests of %d account(s).", len(users))


async def _export_cache(metrics: Metrics) -> None:
    while True:
        await asyncio.sleep(CACHE_EXPORT_SECONDS)
        metrics.export_cache()


def app_from_env() -> FollowGraphApp:
    """The application configured by FOLLOWGRAPH_* variables (uvicorn's factory for worker processes)."""
    settings = Settings.from_env()
    configure_logging(settings.log_level)
    return create_app(settings, shared=SharedRedis.from_env(settings), tracing=tracing_from_env())
