"""B, the plain-Python reference: the fans page as fast as we could write it without GraphQL.

What it does per request (POST /b, body {"userId": ..., "first": n[, "after": cursor]}, answering
the JSON FollowGraph gives to bench.queries.FANS_QUERY, byte for byte):

- a raw ASGI callable (no Starlette, no routing table) on uvicorn with uvloop and httptools, through
  the HTTP protocol A runs on (transport/http_protocol.py, which sends a response's head and body in
  one write);
- the bearer JWT verified with PyJWT (HS256, the same claims FollowGraph requires) once per token,
  then served from a dict until the token's `exp`;
- two Redis round trips, the minimum: the store's PAGE script on the owner's fans set, which for a
  viewer other than the owner also reads what decides whether the owner shows the list to the
  viewer (the owner's hideFans and locked settings, whether the owner blocks the viewer, whether
  the viewer is a fan), as FollowGraph's page does; then a ZMSCORE of the viewer's following set
  and one of its fans set, and the profiles (the owner, whose missing profile means `user: null`,
  and the page's users), in one write. A list the owner does not show the viewer is answered as
  FollowGraph answers it: no edges. The scripts are the store's own (followgraph.store.graph.scripts),
  loaded with SCRIPT LOAD and called with EVALSHA;
- the profiles kept as FollowGraph keeps them, on its own read channel's second connection
  (store/redis/keeping_channel.py, store/redis/tracking.py) until Redis says they changed: a hot
  page's profiles cost a PING. On redis-py (below), which keeps none, they are the store's
  PROFILES script, as FollowGraph reads them when it keeps none;
- cursors and times made by FollowGraph's own functions (store/graph/cursor.py, schema/scalars.py, which
  keep the strings of recent entries), relationships computed inline, the answer written with
  orjson (UTF-8, no \\u escapes).

Redis client: by default FollowGraph's own read channel (`--client resp`, store/redis/channel.py): an
asyncio connection, commands packed and replies parsed by hiredis, and every command queued in one
turn of the event loop written in one send (what ioredis calls auto-pipelining). `--client
redis-py` runs the same reads on redis-py's asyncio client with hiredis (a pool of connections, a
pipeline for the second round trip) for comparison.

`rules=False` (`--no-rules`) leaves the owner's settings and blocks out of the PAGE call: the page
as it would be without them, to show what they cost (bench/layers.py).

Run as `python -m bench.plain --port P --redis-url URL` (env BENCH_JWT_SECRET).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from itertools import chain
from typing import Any, Protocol
from urllib.parse import urlsplit

import jwt
import orjson
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError

from bench.processes import serve_quietly
from followgraph.schema.scalars import serialize_datetime
from followgraph.store import Keys
from followgraph.store.graph.columns import PROFILE_WIDTH, times_of
from followgraph.store.graph.cursor import Cursor, cursor_of
from followgraph.store.graph.errors import InvalidCursorError
from followgraph.store.graph.ids import is_valid_user_id
from followgraph.store.graph.scripts import PAGE, PROFILE_FIELDS, PROFILE_READS, PROFILES, RELATION_READ
from followgraph.store.redis.channel import Address
from followgraph.store.redis.keeping_channel import KeepingReadChannel

SECRET_ENV = "BENCH_JWT_SECRET"
MAX_PAGE_SIZE = 100
LEEWAY_SECONDS = 30
KNOWN_TOKENS = 4096
SCRIPTS = {"page": PAGE, "profiles": PROFILES}
SHAS = {name: hashlib.sha1(source.encode()).hexdigest() for name, source in SCRIPTS.items()}
_NAME = PROFILE_FIELDS.index("name")
_CREATED_AT = PROFILE_FIELDS.index("createdAt")
RELATIONSHIPS = {(True, True): "MUTUAL", (True, False): "FOLLOWING", (False, True): "FOLLOWED_BY"}

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Command = tuple[str | int, ...]


class RequestError(Exception):
    """A request the endpoint refuses: `status` and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Reads(Protocol):
    """Runs commands in one round trip and returns their replies."""

    async def run(self, commands: Sequence[Command]) -> list[Any]: ...

    async def details(
        self, profile_keys: list[str], relation_keys: list[str], ids: list[str]
    ) -> tuple[list[Any], list[list[Any]]]:
        """In one round trip: the PROFILE_FIELDS of `profile_keys`, flat, and a ZMSCORE of `ids` in
        each of `relation_keys`."""
        ...

    async def close(self) -> None: ...


# -- the clients -----------------------------------------------------------------------------


class ChannelReads:
    """FollowGraph's own read channel (store/redis/keeping_channel.py): an auto-pipelined
    connection, and a second one keeping the profiles read."""

    def __init__(self, address: Address) -> None:
        self.channel = KeepingReadChannel(address, on_send=self.count)
        self.writes = 0

    @classmethod
    def open(cls, url: str) -> ChannelReads:
        parts = urlsplit(url)
        db = parts.path.strip("/") or "0"
        return cls(Address(parts.hostname or "127.0.0.1", parts.port or 6379, db=int(db)))

    def count(self) -> None:
        self.writes += 1

    async def run(self, commands: Sequence[Command]) -> list[Any]:
        return await self.channel.run(commands)

    async def details(
        self, profile_keys: list[str], relation_keys: list[str], ids: list[str]
    ) -> tuple[list[Any], list[list[Any]]]:
        relations = [(RELATION_READ, [key], ids) for key in relation_keys]
        profiles, *scores = await self.channel.run_scripts([(PROFILE_READS, profile_keys, []), *relations])
        return list(chain.from_iterable(profiles)), scores

    async def close(self) -> None:
        await self.channel.aclose()


class RedisPyReads:
    def __init__(self, client: aioredis.Redis) -> None:
        self.client = client

    async def run(self, commands: Sequence[Command]) -> list[Any]:
        if len(commands) == 1:
            return [await self.client.execute_command(*commands[0])]  # type: ignore[no-untyped-call]
        pipe = self.client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        replies: list[Any] = await pipe.execute()
        return replies

    async def details(
        self, profile_keys: list[str], relation_keys: list[str], ids: list[str]
    ) -> tuple[list[Any], list[list[Any]]]:
        profiles: Command = ("EVALSHA", SHAS["profiles"], len(profile_keys), *profile_keys)
        profiles_reply, *scores = await self.run(
            [profiles, *(("ZMSCORE", key, *ids) for key in relation_keys)]
        )
        return profiles_reply, scores

    async def close(self) -> None:
        await self.client.aclose()


# -- the endpoint ------------------------------------------------------------------------------


class PlainApp:
    """The ASGI callable. `reads` is set by the lifespan (or by `start`, in process)."""

    def __init__(
        self,
        secret: str,
        redis_url: str,
        client: str = "resp",
        keys: Keys | None = None,
        *,
        rules: bool = True,
    ) -> None:
        self.secret = secret.encode()
        self.redis_url = redis_url
        self.client = client
        self.keys = keys or Keys()
        self.rules = rules
        self.reads: Reads | None = None
        self.tokens: dict[str, tuple[str, float]] = {}

    async def start(self) -> None:
        if self.client == "resp":
            self.reads = ChannelReads.open(self.redis_url)
        else:
            self.reads = RedisPyReads(aioredis.Redis.from_url(self.redis_url, decode_responses=True))
        await self._load_scripts()

    async def _load_scripts(self) -> None:
        assert self.reads is not None
        await self.reads.run([("SCRIPT", "LOAD", source) for source in SCRIPTS.values()])

    async def _run(self, commands: Sequence[Command]) -> list[Any]:
        """One round trip; on NOSCRIPT (Redis restarted or flushed its scripts) load and run again."""
        assert self.reads is not None, "the app has not started"
        try:
            return await self.reads.run(commands)
        except NoScriptError:
            await self._load_scripts()
            return await self.reads.run(commands)

    async def _details(
        self, profile_keys: list[str], relation_keys: list[str], ids: list[str]
    ) -> tuple[list[Any], list[list[Any]]]:
        """Reads.details, loading the scripts on NOSCRIPT."""
        assert self.reads is not None, "the app has not started"
        try:
            return await self.reads.details(profile_keys, relation_keys, ids)
        except NoScriptError:
            await self._load_scripts()
            return await self.reads.details(profile_keys, relation_keys, ids)

    async def stop(self) -> None:
        if self.reads is not None:
            await self.reads.close()
            self.reads = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] == "/healthz":
            await _respond(send, 200, b'{"status":"ok"}')
            return
        if scope["path"] != "/b" or scope["method"] != "POST":
            await _respond(send, 404, b'{"errors":[{"message":"Not found."}]}')
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            viewer = self._viewer(scope)
            arguments = orjson.loads(body)
            answer = await self.page(
                viewer, str(arguments["userId"]), int(arguments.get("first", 20)), arguments.get("after")
            )
        except RequestError as exc:
            await _respond(send, exc.status, orjson.dumps({"errors": [{"message": exc.message}]}))
            return
        await _respond(send, 200, answer)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _viewer(self, scope: Scope) -> str | None:
        header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if header is None:
            return None
        now = time.time()
        token = header.decode("latin-1")
        known = self.tokens.get(token)
        if known is not None and known[1] > now:
            return known[0]
        parts = token.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            raise RequestError(401, "Malformed Authorization header: expected 'Bearer <token>'.")
        try:
            claims = jwt.decode(
                parts[1],
                self.secret,
                algorithms=["HS256"],
                options={"require": ["exp", "sub"]},
                leeway=LEEWAY_SECONDS,
            )
        except jwt.PyJWTError as exc:
            raise RequestError(401, f"Invalid token: {exc}") from None
        viewer = claims["sub"]
        if not isinstance(viewer, str) or not is_valid_user_id(viewer):
            raise RequestError(401, "The token's subject (sub) is not a valid user id.")
        if len(self.tokens) >= KNOWN_TOKENS:
            self.tokens.clear()
        self.tokens[token] = (viewer, float(claims["exp"]))
        return viewer

    async def page(self, viewer: str | None, owner: str, first: int, after: Any = None) -> bytes:
        """The answer to one fans page: two round trips."""
        if not is_valid_user_id(owner):
            raise RequestError(400, "Invalid user id.")
        if not 0 <= first <= MAX_PAGE_SIZE:
            raise RequestError(400, f"`first` must be between 0 and {MAX_PAGE_SIZE}, got {first}.")
        k = self.keys
        list_id = f"fans:{owner}"
        page_args: tuple[str | int, ...] = ("first", "0", "", "", first)
        if after is not None:
            page_args = ("first", "1", *_after(str(after), list_id), first)
        page_keys: tuple[str, ...] = (k.fans(owner),)
        if self.rules and viewer != owner:  # the owner's settings and blocks decide what others see
            page_keys += (k.profile(owner), k.fans(owner), k.blocking(owner))
            page_args += (viewer or "", "hideFans")
        page: Command = ("EVALSHA", SHAS["page"], len(page_keys), *page_keys, *page_args)
        [(_total, _start, _stop, flat, _hidden)] = await self._run([page])
        ids: list[str] = flat[0::2]
        relation_keys = [k.following(viewer), k.fans(viewer)] if viewer is not None and ids else []
        profiles, scores = await self._details(k.profiles([owner, *ids]), relation_keys, ids)
        if profiles[_CREATED_AT] is None:  # the owner is not registered
            return orjson.dumps({"data": {"user": None}})
        out, back = scores if scores else ([None] * len(ids), [None] * len(ids))
        names = profiles[PROFILE_WIDTH + _NAME :: PROFILE_WIDTH]
        edges = [
            {
                "cursor": cursor_of(list_id, at, member),
                "followedAt": serialize_datetime(at),
                "relationship": "SELF"
                if member == viewer
                else RELATIONSHIPS.get((followed is not None, fan is not None), "NONE"),
                "node": {"userId": member, "name": name},
            }
            for member, at, followed, fan, name in zip(
                ids, times_of(flat[1::2]), out, back, names, strict=True
            )
        ]
        return orjson.dumps({"data": {"user": {"fans": {"edges": edges}}}})


def _after(token: str, list_id: str) -> tuple[str, str]:
    try:
        position = Cursor.decode(token, list_id)
    except InvalidCursorError as exc:
        raise RequestError(400, str(exc)) from None
    return str(position.at), position.member


async def _respond(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--client", choices=["resp", "redis-py"], default="resp")
    parser.add_argument(
        "--no-rules", action="store_true", help="page without the owner's settings and blocks"
    )
    args = parser.parse_args()
    app = PlainApp(os.environ[SECRET_ENV], args.redis_url, args.client, rules=not args.no_rules)
    serve_quietly(app, args.host, args.port)


if __name__ == "__main__":
    main()
