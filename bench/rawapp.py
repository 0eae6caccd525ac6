"""The comparison servers C and D: the same "fans page with my relationship" without GraphQL.

(B, the plain-Python reference, is bench/plain.py: a process of its own.)

One Starlette app, two routes, each answering POST {"userId": ..., "first": n[, "offset": k]}
with the JSON the GraphQL query of scenario A returns
(`{"data": {"user": {"fans": {"edges": [{cursor, followedAt, relationship, node {userId, name}}]}}}}`):

- /c  the seed document's algorithm (PHP getChunkSets) in Python: offset paging with ZREVRANGE,
      then per request DEL of four temporary keys, one ZADD per entry into find:viewer,
      ZINTERSTORE into find_inter_fofa / find_inter_follow / find_inter_fans, ZREVRANGE of each,
      one awaited command at a time as phpredis does; then the profiles in one pipeline.
- /d  naive N+1: ZREVRANGE the page, then per entry ZSCORE following:viewer, ZSCORE fans:viewer
      and HGETALL of the profile, each awaited in turn.

Every route verifies the bearer token like the real server does, so the comparison with A
isolates GraphQL (parsing, validation, execution, DataLoaders) rather than authentication.

Run as `python -m bench.rawapp --port P --redis-url URL` (env BENCH_JWT_SECRET): uvicorn with
uvloop and httptools, as `followgraph serve` runs.
"""

from __future__ import annotations

import argparse
import base64
import os
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, cast

import orjson
import redis.asyncio as aioredis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.processes import serve_quietly
from followgraph.server.redis_client import connect
from followgraph.store import Keys, validate_user_id
from followgraph.store.graph.cursor import Cursor
from followgraph.store.redis.lua import AnyPipeline, run_pipeline
from followgraph.transport.auth import AuthConfig, AuthError, authenticate

SECRET_ENV = "BENCH_JWT_SECRET"
PROFILE_FIELDS = ["name", "avatarUrl", "createdAt"]


def iso_ms(ms: int) -> str:
    """Epoch ms as the API's DateTime: ISO-8601 UTC with milliseconds."""
    seconds, millis = divmod(ms, 1000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=millis * 1000)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def relationship(user_id: str, viewer: str | None, follows: bool, followed_by: bool) -> str:
    if user_id == viewer:
        return "SELF"
    if follows:
        return "MUTUAL" if followed_by else "FOLLOWING"
    return "FOLLOWED_BY" if followed_by else "NONE"


def edge(cursor: str, at: int, rel: str, user_id: str, name: str | None) -> dict[str, Any]:
    return {
        "cursor": cursor,
        "followedAt": iso_ms(at),
        "relationship": rel,
        "node": {"userId": user_id, "name": name},
    }


def answer(edges: list[dict[str, Any]] | None) -> Response:
    user = None if edges is None else {"fans": {"edges": edges}}
    return Response(orjson.dumps({"data": {"user": user}}), media_type="application/json")


def unauthorized(reason: str) -> Response:
    return Response(orjson.dumps({"errors": [{"message": reason}]}), 401, media_type="application/json")


def offset_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).rstrip(b"=").decode()


class Handlers:
    def __init__(self, auth: AuthConfig, keys: Keys) -> None:
        self.auth = auth
        self.keys = keys
        self.redis: aioredis.Redis | None = None

    @property
    def r(self) -> aioredis.Redis:
        assert self.redis is not None, "the app's lifespan has not started"
        return self.redis

    async def _arguments(self, request: Request) -> tuple[str | None, str, int, int]:
        viewer_principal = authenticate(request.headers.get("authorization"), self.auth)
        body = orjson.loads(await request.body())
        target = validate_user_id(str(body["userId"]))
        first = int(body.get("first", 20))
        offset = int(body.get("offset", 0))
        viewer = None if viewer_principal is None else viewer_principal.user_id
        return viewer, target, first, offset

    # -- C: the seed's getChunkSets + getUserInfoList ------------------------------------------

    async def page_c(self, request: Request) -> Response:
        try:
            viewer, target, first, offset = await self._arguments(request)
        except AuthError as exc:
            return unauthorized(exc.reason)
        if viewer is None:
            return unauthorized("The seed's algorithm needs a viewer.")
        r, k = self.r, self.keys
        fans_key, follow_key = k.fans(viewer), k.following(viewer)
        find_key = f"find:{viewer}"
        fofa_key = f"find_inter_fofa:{viewer}"
        inter_follow_key = f"find_inter_follow:{viewer}"
        inter_fans_key = f"find_inter_fans:{viewer}"
        # findSet = zRevRange(target, start, end, WITHSCORES)
        find_set = cast(
            "list[tuple[str, float]]",
            await r.zrevrange(k.fans(target), offset, offset + first - 1, withscores=True),
        )
        await r.delete(find_key)
        await r.delete(fofa_key)
        await r.delete(inter_follow_key)
        await r.delete(inter_fans_key)
        for uid, score in find_set:
            await r.zadd(find_key, {uid: score})
        inter_follow: set[str] = set()
        inter_fans: set[str] = set()
        if viewer != target:
            await cast("Awaitable[int]", r.zinterstore(fofa_key, [find_key, fans_key, follow_key]))
            await cast("Awaitable[int]", r.zinterstore(inter_follow_key, [find_key, follow_key]))
            await cast("Awaitable[int]", r.zinterstore(inter_fans_key, [find_key, fans_key]))
            inter_follow = set(cast("list[str]", await r.zrevrange(inter_follow_key, 0, -1)))
            inter_fans = set(cast("list[str]", await r.zrevrange(inter_fans_key, 0, -1)))
        else:
            await cast("Awaitable[int]", r.zinterstore(fofa_key, [find_key, follow_key]))
        fofa = set(cast("list[str]", await r.zrevrange(fofa_key, 0, -1)))

        # $userInfoArr: the profiles of the page, fetched together.
        def fill(pipe: AnyPipeline) -> None:
            for uid, _ in find_set:
                pipe.hmget(k.profile(uid), PROFILE_FIELDS)

        profiles = await run_pipeline(r, fill) if find_set else []
        edges = []
        for index, ((uid, score), profile) in enumerate(zip(find_set, profiles, strict=True)):
            if profile[2] is None:  # not in $userInfoArr: skipped, as the PHP does
                continue
            if uid == viewer:
                rel = "SELF"
            elif uid in fofa:
                rel = "MUTUAL"  # favoFlag 3
            elif viewer == target:
                rel = "FOLLOWED_BY"  # own fans list: favoFlag = findType
            elif uid in inter_fans:
                rel = "FOLLOWED_BY"  # favoFlag 2
            elif uid in inter_follow:
                rel = "FOLLOWING"  # favoFlag 1
            else:
                rel = "NONE"  # favoFlag 0
            edges.append(edge(offset_cursor(offset + index + 1), int(score), rel, uid, profile[0]))
        return answer(edges)

    # -- D: naive N+1 ----------------------------------------------------------------------------

    async def page_d(self, request: Request) -> Response:
        try:
            viewer, target, first, _ = await self._arguments(request)
        except AuthError as exc:
            return unauthorized(exc.reason)
        r, k = self.r, self.keys
        rows = cast(
            "list[tuple[str, float]]", await r.zrevrange(k.fans(target), 0, first - 1, withscores=True)
        )
        list_id = f"fans:{target}"
        edges = []
        for uid, score in rows:
            follows = followed_by = False
            if viewer is not None:
                follows = await r.zscore(k.following(viewer), uid) is not None
                followed_by = await r.zscore(k.fans(viewer), uid) is not None
            profile = cast("dict[str, str]", await r.hgetall(k.profile(uid)))
            at = int(score)
            rel = relationship(uid, viewer, follows, followed_by)
            edges.append(edge(Cursor(at, uid).encode(list_id), at, rel, uid, profile.get("name")))
        return answer(edges)


def create_bench_app(
    *,
    secret: str,
    redis: aioredis.Redis | None = None,
    redis_url: str | None = None,
    keys: Keys | None = None,
) -> Starlette:
    """The C/D app; `redis` (not closed by the app) replaces `redis_url`."""
    if redis is None and redis_url is None:
        raise ValueError("create_bench_app needs redis= or redis_url=")
    handlers = Handlers(AuthConfig("HS256", secret=secret.encode()), keys or Keys())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        client = redis if redis is not None else connect(redis_url or "")
        if not isinstance(client, aioredis.Redis):
            raise ValueError("the hand-written endpoints run on a single Redis, not a cluster")
        handlers.redis = client
        try:
            yield
        finally:
            if redis is None:
                await client.aclose()

    async def healthz(request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    routes = [
        Route("/c", handlers.page_c, methods=["POST"]),
        Route("/d", handlers.page_d, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--redis-url", required=True)
    args = parser.parse_args()
    secret = os.environ[SECRET_ENV]
    serve_quietly(create_bench_app(secret=secret, redis_url=args.redis_url), args.host, args.port)


if __name__ == "__main__":
    main()
