"""Fuzzing /graphql: generated operations from the served schema, and random HTTP requests.

Whatever arrives, the server answers: never a 5xx, never an unexpected (masked) error, every error
with an `extensions.code`; and the graph keeps its invariants after generated mutations.

Hypothesis drives a plain test function; the app, its Redis client and the httpx client live on a
private event loop (asyncio.Runner) that every example reuses.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import graphql
import httpx
import redis.asyncio as aioredis
from hypothesis import HealthCheck, Phase, example, given, note
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis_graphql import Mode, mutations, queries

from followgraph.resolvers.node import to_global_id
from followgraph.schema import schema
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import Keys
from tests.conftest import TEST_SECRET, clean_redis
from tests.security.helpers import GRAPHQL_RESPONSE, MASKED_MESSAGE, graph_dump, serve
from tests.served import Served

SDL = schema.as_str()
USERS = [f"u{i}" for i in range(10)]
# A small graph: a few celebrities, some mutual pairs, a chain.
FOLLOWS = [
    *((user, "u0") for user in USERS[1:]),
    *((user, "u1") for user in USERS[2:7]),
    ("u0", "u1"),
    ("u1", "u2"),
    ("u2", "u1"),
    ("u3", "u4"),
    ("u4", "u5"),
    ("u5", "u3"),
    ("u9", "u8"),
    ("u8", "u9"),
]
FUZZ = hypothesis_settings(
    deadline=None,
    # Shrinking against a server takes long: a failure prints its (unshrunk) example instead.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def id_values() -> st.SearchStrategy[graphql.ValueNode]:
    """IDs that hit the graph (user ids, global ids) more often than not, and junk."""
    known = st.sampled_from([*USERS, "ghost"])
    global_ids = st.sampled_from([to_global_id("User", user) for user in USERS])
    junk = st.text(max_size=12)
    return st.one_of(known, known, global_ids, junk).map(lambda value: graphql.StringValueNode(value=value))


CUSTOM = {"ID": id_values()}
VIEWERS = st.sampled_from([None, "u0", "u1", "u3", "ghost"])


@dataclass
class Harness:
    """The app on a private loop, with a populated graph."""

    runner: asyncio.Runner
    app: Served
    redis: aioredis.Redis
    stack: AsyncExitStack
    answered: dict[int, int] = field(default_factory=dict)

    def run(self, coroutine: Any) -> Any:
        return self.runner.run(coroutine)

    async def send(self, document: str, viewer: str | None, *, admin: bool = False) -> None:
        headers = {"accept": GRAPHQL_RESPONSE}
        if viewer is not None:
            headers.update(self.app.auth(viewer, admin=admin))
        response = await self.app.client.post("/graphql", json={"query": document}, headers=headers)
        self.answered[response.status_code] = self.answered.get(response.status_code, 0) + 1
        note(f"{response.status_code} {response.text[:2000]}")
        assert response.status_code < 500, response.text
        body = response.json()
        for error in body.get("errors", []):
            assert error["message"] != MASKED_MESSAGE, body
            assert "code" in error.get("extensions", {}), body
            assert error["extensions"]["code"] != "INTERNAL_SERVER_ERROR", body

    async def invariants(self) -> None:
        """following/fans mirror each other with the same scores; mutual = following ∩ fans, both ways;
        blocks and follow requests mirror each other, and no follow or pending request crosses a block;
        accounts that are off are in no active user's follows or requests."""
        keys = Keys()
        users = {keys.user_of(str(key)) for key in await self.redis.keys(keys.pattern())}
        # An account that is off keeps its own sets, and is in no active user's (lifecycle.py).
        off = {keys.user_of(str(key)) for key in await self.redis.keys(keys.pattern("account"))}
        users -= off
        following: dict[str, dict[str, float]] = {}
        fans: dict[str, dict[str, float]] = {}
        mutual: dict[str, set[str]] = {}
        blocking: dict[str, set[str]] = {}
        blocked_by: dict[str, set[str]] = {}
        asked: dict[str, set[str]] = {}
        asked_by: dict[str, set[str]] = {}

        async def scored(key: str) -> dict[str, float]:
            return dict(cast("list[tuple[str, float]]", await self.redis.zrange(key, 0, -1, withscores=True)))

        for user in users | off:
            following[user] = await scored(keys.following(user))
            fans[user] = await scored(keys.fans(user))
            mutual[user] = set(await scored(keys.mutual(user)))
            blocking[user] = set(await scored(keys.blocking(user)))
            blocked_by[user] = set(await scored(keys.blocked_by(user)))
            asked[user] = set(await scored(keys.requests_out(user)))
            asked_by[user] = set(await scored(keys.requests_in(user)))
        for a in users:
            listed = set(following[a]) | set(fans[a]) | mutual[a] | asked[a] | asked_by[a]
            assert not listed & off, f"{a}'s sets name accounts that are off: {listed & off}"
            assert a not in following[a], f"{a} follows themselves"
            for b, at in following[a].items():
                assert fans.get(b, {}).get(a) == at, f"{a} follows {b} at {at}, fans:{b} says {fans.get(b)}"
            for b, at in fans[a].items():
                assert following.get(b, {}).get(a) == at, f"{b} is a fan of {a}, following:{b} disagrees"
            assert mutual[a] == set(following[a]) & set(fans[a]), f"mutual:{a} = {mutual[a]}"
            for b in mutual[a]:
                assert a in mutual.get(b, set()), f"{a} and {b} are mutual one way only"
            for b in blocking[a]:
                assert a in blocked_by.get(b, set()), f"{a} blocks {b}, blocked_by:{b} disagrees"
                assert b not in following[a] and a not in following.get(b, {}), (
                    f"a follow crosses {a}'s block of {b}"
                )
                assert b not in asked[a] and a not in asked.get(b, set()), (
                    f"a request crosses {a}'s block of {b}"
                )
            for b in blocked_by[a]:
                assert a in blocking.get(b, set()), f"blocked_by:{a} names {b}, who does not block them"
            for b in asked[a]:
                assert a in asked_by.get(b, set()), f"{a} asked to follow {b}, requests_in:{b} disagrees"
                assert b not in following[a], f"{a} both follows {b} and asks to"
            for b in asked_by[a]:
                assert a in asked.get(b, set()), f"requests_in:{a} names {b}, who did not ask"


@contextmanager
def harness(redis_server: RedisServer, data_dir: Path, **changes: Any) -> Iterator[Harness]:
    settings = Settings(data_dir=data_dir, jwt_secret=TEST_SECRET, **changes)
    with asyncio.Runner() as runner:

        async def start() -> Harness:
            stack = AsyncExitStack()
            redis = await clean_redis(redis_server, stack)
            app = await stack.enter_async_context(serve(settings, redis))
            await app.register(*USERS)
            for follower, followee in FOLLOWS:
                await app.store.follow(follower=follower, followee=followee)
            return Harness(runner, app, redis, stack)

        fixture = runner.run(start())
        try:
            fixture.run(fixture.invariants())
            yield fixture
        finally:
            runner.run(fixture.stack.aclose())


# Generated operations


def test_generated_queries(redis_server: RedisServer, tmp_path: Path) -> None:
    with harness(redis_server, tmp_path / "data") as h:

        @hypothesis_settings(FUZZ, max_examples=300)
        @given(document=queries(SDL, custom_scalars=CUSTOM), viewer=VIEWERS)
        def check(document: str, viewer: str | None) -> None:
            h.run(h.send(document, viewer))

        check()
        h.run(h.invariants())


# Writes that certainly change the small graph, tried first (Phase.explicit).
WRITES = [
    ('mutation { follow(input: {userId: "u7"}) { changed relationship } }', "u0", False),
    ('mutation { removeFan(input: {userId: "u2"}) { changed viewer { fansCount } } }', "u1", False),
    ('mutation { unfollow(input: {userId: "u4"}) { changed user { fans { totalCount } } } }', "u3", False),
    ('mutation { upsertUser(input: {userId: "u10", name: "New"}) { user { userId } } }', "u0", True),
    # A block between mutual fans, and a pending request to a locked account that a block then ends.
    ('mutation { block(input: {userId: "u2"}) { changed } }', "u1", False),
    ("mutation { updateSettings(input: {locked: true}) { settings { locked } } }", "u3", False),
    ('mutation { follow(input: {userId: "u3"}) { changed relationship } }', "u0", False),
    ('mutation { block(input: {userId: "u0"}) { changed } }', "u3", False),
]


def test_generated_mutations(redis_server: RedisServer, tmp_path: Path) -> None:
    with harness(redis_server, tmp_path / "data", follow_rate_limit="off") as h:
        initial = h.run(graph_dump(h.redis))

        @hypothesis_settings(FUZZ, max_examples=300)
        @given(document=mutations(SDL, custom_scalars=CUSTOM), viewer=VIEWERS, admin=st.booleans())
        def check(document: str, viewer: str | None, admin: bool) -> None:
            h.run(h.send(document, viewer, admin=admin))
            h.run(h.invariants())

        for document, viewer, admin in WRITES:
            check = example(document=document, viewer=viewer, admin=admin)(check)
        check()
        # The graph has changed, so the invariants checked after every write meant something.
        assert h.run(graph_dump(h.redis)) != initial


def test_generated_invalid_operations(redis_server: RedisServer, tmp_path: Path) -> None:
    """Operations with one schema violation each (wrong argument type, missing argument...)."""

    with harness(redis_server, tmp_path / "data") as h:

        @hypothesis_settings(FUZZ, max_examples=150)
        @given(
            document=st.one_of(
                queries(SDL, custom_scalars=CUSTOM, mode=Mode.NEGATIVE),
                mutations(SDL, custom_scalars=CUSTOM, mode=Mode.NEGATIVE),
            ),
            viewer=VIEWERS,
        )
        def check(document: str, viewer: str | None) -> None:
            h.run(h.send(document, viewer))

        check()
        h.run(h.invariants())


# Raw HTTP

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
# JSON objects shaped like GraphQL requests, with anything in each member.
REQUEST_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "query": st.one_of(st.text(max_size=60), st.sampled_from(["{ viewer { userId } }", "{", "mutation"])),
        "variables": JSON_VALUES,
        "operationName": JSON_VALUES,
        "extensions": JSON_VALUES,
    },
)
HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
MEDIA_TYPES = st.one_of(
    st.sampled_from(
        [
            "application/json",
            GRAPHQL_RESPONSE,
            "application/json; charset=utf-8",
            "text/html",
            "*/*",
            "application/*;q=0",
            "application/graphql",
            "multipart/form-data; boundary=x",
            "",
        ]
    ),
    HEADER_TEXT,
)


def to_json(value: object) -> bytes:
    # The standard library writes any integer (orjson stops at 64 bits), and Infinity, which is not JSON.
    return json.dumps(value).encode()


def bodies() -> st.SearchStrategy[bytes]:
    return st.one_of(
        JSON_VALUES.map(to_json),
        REQUEST_LIKE.map(to_json),
        st.lists(REQUEST_LIKE, max_size=4).map(to_json),
        st.binary(max_size=200),
    )


def test_random_http_requests(redis_server: RedisServer, tmp_path: Path) -> None:
    with harness(redis_server, tmp_path / "data", max_batch=3) as h:
        client: httpx.AsyncClient = h.app.client

        async def send(
            method: str,
            params: dict[str, str],
            body: bytes,
            content_type: str,
            accept: str,
            auth: bytes | None,
        ) -> httpx.Response:
            headers = [(b"content-type", content_type.encode()), (b"accept", accept.encode())]
            if auth is not None:
                headers.append((b"authorization", auth))
            return await client.request(
                method, "/graphql", params=params, content=body if method != "GET" else None, headers=headers
            )

        @hypothesis_settings(FUZZ, max_examples=500)
        @given(
            method=st.sampled_from(["GET", "POST", "POST", "POST", "PUT", "DELETE", "OPTIONS"]),
            params=st.dictionaries(
                st.sampled_from(["query", "variables", "operationName", "extensions", "x"]),
                st.text(max_size=40),
                max_size=3,
            ),
            body=bodies(),
            content_type=MEDIA_TYPES,
            accept=MEDIA_TYPES,
            auth=st.one_of(
                st.none(),
                st.binary(max_size=60).map(
                    lambda raw: b"Bearer " + raw.replace(b"\r", b"").replace(b"\n", b"")
                ),
                st.just(f"Bearer {h.app.auth('u0')['authorization'].split()[1]}".encode()),
                HEADER_TEXT.map(str.encode),
            ),
        )
        def check(
            method: str,
            params: dict[str, str],
            body: bytes,
            content_type: str,
            accept: str,
            auth: bytes | None,
        ) -> None:
            response = cast("httpx.Response", h.run(send(method, params, body, content_type, accept, auth)))
            note(f"{response.status_code} {response.text[:1000]}")
            assert response.status_code < 500, response.text
            if response.headers.get("content-type", "").startswith(("application/json", GRAPHQL_RESPONSE)):
                answer = response.json()
                for item in answer if isinstance(answer, list) else [answer]:
                    for error in item.get("errors", []):
                        assert error["message"] != MASKED_MESSAGE, answer
                        assert "code" in error.get("extensions", {}), answer

        check()
        h.run(h.invariants())
