"""The /graphql transport, per the GraphQL-over-HTTP spec as transport/graphql_http.py implements it."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.transport.auth import AuthConfig, mint_token
from tests.served import Served, serve
from tests.store.snapshot import Snapshot, dump

GRAPHQL_RESPONSE = "application/graphql-response+json"
USER_QUERY = "query($id: ID!) { user(userId: $id) { userId fansCount } }"
FOLLOW = 'mutation { follow(input: {userId: "bob"}) { changed } }'
HEX_ID = re.compile(r"[0-9a-f]{32}")


async def post(
    api: Served, body: Any, *, accept: str | None = None, headers: dict[str, str] | None = None
) -> httpx.Response:
    sent = {**(headers or {})}
    if accept is not None:
        sent["accept"] = accept
    return await api.client.post("/graphql", json=body, headers=sent)


def single_error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert list(body) == ["errors"], body
    assert len(body["errors"]) == 1, body
    error: dict[str, Any] = body["errors"][0]
    return error


async def snapshot(api: Served) -> Snapshot:
    """Everything in Redis (the change log included), to prove a request wrote nothing."""
    return await dump(api.store.redis)


@asynccontextmanager
async def client_for(settings: Settings, redis: aioredis.Redis) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app built for `settings`; an exception the app lets out is a 500, as in production."""
    async with serve(settings, redis, raise_app_exceptions=False) as served:
        yield served.client


# GET and POST


async def test_get_runs_a_query_with_variables_in_the_url(api: Served) -> None:
    await api.register("alice", "bob")
    await api.store.follow(follower="bob", followee="alice")

    response = await api.client.get(
        "/graphql", params={"query": USER_QUERY, "variables": json.dumps({"id": "alice"})}
    )

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"data": {"user": {"userId": "alice", "fansCount": 1}}}


async def test_get_with_an_operation_name(api: Served) -> None:
    await api.register("alice")
    document = 'query A { a: user(userId: "alice") { userId } } query B { b: viewer { userId } }'

    response = await api.client.get("/graphql", params={"query": document, "operationName": "A"})

    assert response.status_code == 200
    assert response.json() == {"data": {"a": {"userId": "alice"}}}


async def test_get_with_variables_that_are_not_json_is_400(api: Served) -> None:
    response = await api.client.get("/graphql", params={"query": USER_QUERY, "variables": "{id: alice"})

    assert response.status_code == 400
    assert single_error(response)["message"] == (
        "`variables` is not valid JSON (unexpected character, expected a string key, at character 1)."
    )


async def test_an_id_sent_as_a_number_past_64_bits_is_read_exactly(api: Served) -> None:
    big = "18446744073709551617"  # 2**64 + 1: a float would make it ...616
    await api.register(big)
    body = (
        b'{"query": "query($u: ID!) { user(userId: $u) { userId } }", "variables": {"u": %s}}' % big.encode()
    )
    for _ in range(2):  # the document's first run, then its compiled plan
        response = await api.client.post(
            "/graphql", content=body, headers={"content-type": "application/json"}
        )
        assert response.json() == {"data": {"user": {"userId": big}}}


async def test_get_mutation_is_405_and_changes_nothing(api: Served) -> None:
    await api.register("alice", "bob")
    before = await snapshot(api)

    response = await api.client.get(
        "/graphql", params={"query": FOLLOW}, headers={"authorization": f"Bearer {api.token('alice')}"}
    )

    assert response.status_code == 405
    assert "POST" in response.headers["allow"]
    assert single_error(response)["message"] == "Mutations need POST."
    assert await snapshot(api) == before


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
async def test_other_methods_are_405(api: Served, method: str) -> None:
    response = await api.client.request(method, "/graphql", json={"query": "{ viewer { userId } }"})

    assert response.status_code == 405
    assert "POST" in response.headers["allow"]
    assert single_error(response)["extensions"]["code"] == "BAD_REQUEST"


async def test_post_runs_a_mutation(api: Served) -> None:
    await api.register("alice", "bob")

    response = await post(api, {"query": FOLLOW}, headers={"authorization": f"Bearer {api.token('alice')}"})

    assert response.status_code == 200
    assert response.json() == {"data": {"follow": {"changed": True}}}


FOLLOW_JSON = json.dumps({"query": FOLLOW})


@pytest.mark.parametrize(
    ("content_type", "content"),
    [
        ("text/plain", FOLLOW_JSON),
        ("text/plain;charset=utf-8", FOLLOW_JSON),
        ("application/x-www-form-urlencoded", "query=" + FOLLOW.replace(" ", "+")),
        (
            "multipart/form-data; boundary=x",
            f'--x\r\nContent-Disposition: form-data; name="query"\r\n\r\n{FOLLOW}\r\n--x--',
        ),
        ("application/graphql", FOLLOW),
        ("", FOLLOW_JSON),
    ],
)
async def test_post_without_a_json_body_is_415(api: Served, content_type: str, content: str) -> None:
    await api.register("alice", "bob")
    before = await snapshot(api)

    response = await api.client.post(
        "/graphql",
        content=content,
        headers={"content-type": content_type, "authorization": f"Bearer {api.token('alice')}"},
    )

    assert response.status_code == 415
    assert single_error(response)["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert await snapshot(api) == before


async def test_json_with_a_charset_is_accepted(api: Served) -> None:
    response = await api.client.post(
        "/graphql",
        content=b'{"query": "{ viewer { userId } }"}',
        headers={"content-type": "application/json; charset=utf-8"},
    )

    assert response.status_code == 200
    assert response.json() == {"data": {"viewer": None}}


@pytest.mark.parametrize("accept", [None, GRAPHQL_RESPONSE])
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"query": ', "The request body is not valid JSON (unexpected end of data, at character 10)."),
        (b"", "The request body is not valid JSON"),
        (b"\xff\xfe", "The request body is not valid JSON"),
        (b"[" * 2000 + b"]" * 2000, "The request body is not valid JSON (depth limit exceeded"),
        (
            b'{"query": "{ viewer { userId } }", "variables": {"n": NaN}}',
            "not valid JSON (unexpected character",
        ),
        (b'{"query": "1234567890123456789012", "variables": {"n": NaN}}', "(NaN is not a JSON value)"),
        (b'[{"query": "{ viewer { userId } }"}]', "Batched requests"),
        (b'{"variables": {}}', "The request has no GraphQL document"),
        (b'{"query": "   "}', "The request has no GraphQL document"),
        (b'{"query": 7}', "The request has no GraphQL document"),
        (b'"{ viewer { userId } }"', "must be a JSON object"),
        (b'{"query": "{ viewer { userId } }", "variables": [1]}', "`variables` must be a JSON object."),
        (b'{"query": "{ viewer { userId } }", "operationName": 1}', "`operationName` must be a string."),
        *(
            (
                b'{"query": "{ viewer { userId } }", "extensions": ' + value + b"}",
                "`extensions` must be a JSON object.",
            )
            for value in (b'"x"', b"1", b"true", b"[1]")
        ),
    ],
)
async def test_malformed_requests_are_400_with_a_json_error(
    api: Served, content: bytes, message: str, accept: str | None
) -> None:
    headers = {"content-type": "application/json"}
    if accept is not None:
        headers["accept"] = accept

    response = await api.client.post("/graphql", content=content, headers=headers)

    assert response.status_code == 400
    assert response.headers["content-type"].startswith(accept or "application/json")
    error = single_error(response)
    assert message in error["message"]
    assert error["extensions"]["code"] == "BAD_REQUEST"


# Media types: application/graphql-response+json and application/json


async def test_graphql_response_json_syntax_error_is_400_without_data(api: Served) -> None:
    response = await post(api, {"query": "{ viewer { userId "}, accept=GRAPHQL_RESPONSE)

    assert response.status_code == 400
    assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    error = single_error(response)
    assert error["message"].startswith("Syntax Error")
    assert error["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    assert "locations" in error


async def test_graphql_response_json_validation_error_is_400(api: Served) -> None:
    response = await post(api, {"query": "{ viewer { userId noSuchField } }"}, accept=GRAPHQL_RESPONSE)

    assert response.status_code == 400
    error = single_error(response)
    assert "noSuchField" in error["message"]
    assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


@pytest.mark.parametrize(
    ("variables", "fragment"),
    [({"id": 7.5}, "$id"), ({}, "$id"), ({"id": None}, "$id"), ({"id": ["a"]}, "$id")],
)
async def test_graphql_response_json_bad_variable_is_400_bad_user_input(
    api: Served, variables: dict[str, Any], fragment: str
) -> None:
    response = await post(api, {"query": USER_QUERY, "variables": variables}, accept=GRAPHQL_RESPONSE)

    assert response.status_code == 400
    error = single_error(response)
    assert fragment in error["message"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


@pytest.mark.parametrize(("accept", "status"), [(GRAPHQL_RESPONSE, 400), ("application/json", 200)])
@pytest.mark.parametrize(
    "body",
    [
        {"query": "query A { viewer { userId } }", "operationName": "B"},
        {"query": "fragment F on Query { viewer { userId } }"},
    ],
)
async def test_a_document_without_the_operation_to_run_is_a_request_error(
    real_redis: aioredis.Redis, settings: Settings, body: dict[str, Any], accept: str, status: int
) -> None:
    async with client_for(settings, real_redis) as client:
        response = await client.post("/graphql", json=body, headers={"accept": accept})
        get = await client.get("/graphql", params=body, headers={"accept": accept})

    for answer in (response, get):
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"] == f"{accept}; charset=utf-8"
        assert "data" not in answer.json()
        assert answer.json()["errors"][0]["message"]


async def test_a_huge_operation_name_is_refused_and_not_echoed_back(
    real_redis: aioredis.Redis, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    body = {"query": "query A { viewer { userId } }", "operationName": "N" * 900_000}
    async with client_for(settings, real_redis) as client:
        response = await client.post("/graphql", json=body)
        get = await client.get("/graphql", params={**body, "operationName": "N" * 257})

    for answer in (response, get):
        assert answer.status_code == 400
        assert len(answer.content) < 300, answer.content[:300]
        assert answer.json()["errors"][0]["message"] == "`operationName` is longer than 256 characters."
    assert all(len(record.getMessage()) < 1000 for record in caplog.records)


async def test_an_unknown_operation_name_is_echoed_cut(
    real_redis: aioredis.Redis, settings: Settings
) -> None:
    body = {"query": "query A { viewer { userId } }", "operationName": "N" * 256}
    async with client_for(settings, real_redis) as client:
        response = await client.post("/graphql", json=body)

    assert "'" + "N" * 64 + "...'" in response.json()["errors"][0]["message"]
    assert len(response.content) < 300


async def test_several_operations_need_an_operation_name(api: Served) -> None:
    document = "query A { viewer { userId } } query B { __typename }"

    response = await post(api, {"query": document}, accept=GRAPHQL_RESPONSE)
    chosen = await post(api, {"query": document, "operationName": "B"}, accept=GRAPHQL_RESPONSE)

    # GraphQL spec, GetOperation(): without operationName a document must hold exactly one operation.
    assert chosen.json() == {"data": {"__typename": "Query"}}
    assert response.status_code == 400, response.text
    assert "data" not in response.json()
    assert "operation name" in single_error(response)["message"].lower()


async def test_get_without_a_query_is_400(api: Served) -> None:
    response = await api.client.get("/graphql", headers={"accept": "application/json"})

    assert response.status_code == 400
    assert single_error(response)["message"] == "The request has no GraphQL document: send it as `query`."


async def test_graphql_response_json_success_is_200(api: Served) -> None:
    await api.register("alice")

    response = await post(api, {"query": USER_QUERY, "variables": {"id": "alice"}}, accept=GRAPHQL_RESPONSE)

    assert response.status_code == 200
    assert response.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
    assert response.json() == {"data": {"user": {"userId": "alice", "fansCount": 0}}}


async def test_graphql_response_json_field_error_is_200_with_data(api: Served) -> None:
    response = await post(api, {"query": '{ user(userId: "bad id") { userId } }'}, accept=GRAPHQL_RESPONSE)

    assert response.status_code == 200
    body = response.json()
    assert body["data"] == {"user": None}
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


@pytest.mark.parametrize(
    "accept", [None, "application/json", "*/*", "application/*", "text/html;q=0.9, */*;q=0.1"]
)
async def test_json_syntax_error_is_200_with_errors(api: Served, accept: str | None) -> None:
    response = await post(api, {"query": "{ viewer { userId "}, accept=accept)

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    error = single_error(response)
    assert error["message"].startswith("Syntax Error")


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        (f"application/json, {GRAPHQL_RESPONSE}", "application/json"),
        (f"application/json;q=0.9, {GRAPHQL_RESPONSE}", GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE};q=0.5, application/json;q=0.8", "application/json"),
        (f"text/csv, {GRAPHQL_RESPONSE};q=0.1", GRAPHQL_RESPONSE),
    ],
)
async def test_accept_negotiation(api: Served, accept: str, media_type: str) -> None:
    response = await post(api, {"query": "{ viewer { userId } }"}, accept=accept)

    assert response.status_code == 200
    assert response.headers["content-type"] == f"{media_type}; charset=utf-8"


@pytest.mark.parametrize(
    "accept", ["text/csv", "text/html", "application/xml, text/plain", "application/json;q=0"]
)
async def test_unacceptable_accept_is_406(api: Served, accept: str) -> None:
    response = await post(api, {"query": "{ viewer { userId } }"}, accept=accept)

    assert response.status_code == 406
    error = single_error(response)
    assert error["extensions"]["code"] == "NOT_ACCEPTABLE"
    assert GRAPHQL_RESPONSE in error["message"]


# Limits and headers


async def test_body_over_the_limit_is_413(api: Served) -> None:
    await api.register("alice", "bob")
    padding = " " * api.settings.max_body_bytes
    before = await snapshot(api)

    response = await post(
        api, {"query": FOLLOW + padding}, headers={"authorization": f"Bearer {api.token('alice')}"}
    )

    assert response.status_code == 413
    assert single_error(response)["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    assert await snapshot(api) == before


async def test_streamed_body_over_the_limit_is_413(api: Served) -> None:
    chunk = b" " * 65536
    chunks = api.settings.max_body_bytes // len(chunk) + 2

    async def body() -> AsyncIterator[bytes]:
        yield b'{"query": "{ viewer { userId } }'
        for _ in range(chunks):
            yield chunk
        yield b'"}'

    # No content-length: the limit must hold while reading, not only on the declared size.
    response = await api.client.post("/graphql", content=body(), headers={"content-type": "application/json"})

    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    assert single_error(response)["extensions"]["code"] == "PAYLOAD_TOO_LARGE"


async def test_a_body_of_exactly_the_limit_is_accepted(api: Served) -> None:
    prefix, suffix = b'{"query": "{ viewer { userId } }', b'"}'
    content = prefix + b" " * (api.settings.max_body_bytes - len(prefix) - len(suffix)) + suffix

    response = await api.client.post(
        "/graphql", content=content, headers={"content-type": "application/json"}
    )

    assert len(response.request.content) == api.settings.max_body_bytes
    assert response.status_code == 200
    assert response.json() == {"data": {"viewer": None}}
    one_more = await api.client.post(
        "/graphql", content=content[:-2] + b' "}', headers={"content-type": "application/json"}
    )
    assert len(one_more.request.content) == api.settings.max_body_bytes + 1
    assert one_more.status_code == 413


async def test_a_sane_request_id_is_echoed(api: Served) -> None:
    for request_id in ["abc-123_X.y", "r" * 64]:
        response = await post(api, {"query": "{ viewer { userId } }"}, headers={"x-request-id": request_id})
        assert response.headers["x-request-id"] == request_id
    failed = await api.client.post(
        "/graphql", content=b"{", headers={"content-type": "application/json", "x-request-id": "req-1"}
    )
    assert failed.status_code == 400
    assert failed.headers["x-request-id"] == "req-1"


@pytest.mark.parametrize("request_id", [None, "", "has space", "r" * 65, "semi;colon", "new\\nline"])
async def test_a_missing_or_odd_request_id_is_replaced(api: Served, request_id: str | None) -> None:
    headers = {} if request_id is None else {"x-request-id": request_id}

    first = await post(api, {"query": "{ viewer { userId } }"}, headers=headers)
    second = await post(api, {"query": "{ viewer { userId } }"}, headers=headers)

    assert HEX_ID.fullmatch(first.headers["x-request-id"])
    assert HEX_ID.fullmatch(second.headers["x-request-id"])
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


# GraphiQL and introspection

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


async def test_graphiql_for_a_browser(api: Served) -> None:
    response = await api.client.get("/graphql", headers={"accept": BROWSER_ACCEPT})

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "graphiql" in response.text.lower()
    assert "<html" in response.text.lower()


async def test_a_browser_with_a_query_gets_the_result(api: Served) -> None:
    response = await api.client.get(
        "/graphql", params={"query": "{ viewer { userId } }"}, headers={"accept": BROWSER_ACCEPT}
    )

    assert response.status_code == 200
    assert response.json() == {"data": {"viewer": None}}


async def test_no_graphiql_when_disabled(real_redis: aioredis.Redis, settings: Settings) -> None:
    async with client_for(replace(settings, graphiql=False), real_redis) as client:
        response = await client.get("/graphql", headers={"accept": BROWSER_ACCEPT})

    assert response.status_code in {400, 404}
    assert not response.headers["content-type"].startswith("text/html")
    assert "graphiql" not in response.text.lower()
    assert response.json()["errors"][0]["message"]


async def test_introspection_can_be_disabled(real_redis: aioredis.Redis, settings: Settings) -> None:
    query = {"query": "{ __schema { types { name } } }"}
    async with client_for(replace(settings, introspection=False), real_redis) as client:
        disabled = await client.post("/graphql", json=query)
        typename = await client.post("/graphql", json={"query": "{ __typename }"})
        by_type = await client.post("/graphql", json={"query": '{ __type(name: "User") { name } }'})
    async with client_for(settings, real_redis) as client:
        enabled = await client.post("/graphql", json=query)

    assert disabled.status_code == 200
    body = disabled.json()
    assert "data" not in body
    assert "introspection" in body["errors"][0]["message"].lower()
    assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert "introspection" in by_type.json()["errors"][0]["message"].lower()
    assert typename.json() == {"data": {"__typename": "Query"}}
    names = {t["name"] for t in enabled.json()["data"]["__schema"]["types"]}
    assert {"User", "FollowConnection", "Relationship"} <= names


# Authentication over HTTP


def bad_tokens(settings: Settings) -> dict[str, tuple[str, str]]:
    """Authorization headers that must be refused, with the reason the client is told."""
    config = settings.auth_config()
    other = AuthConfig(algorithm="HS256", secret=b"another-secret-that-is-long-enough-for-hs256")
    past = datetime.now(UTC) - timedelta(hours=2)
    forged = jwt.encode({"sub": "alice", "exp": 2_000_000_000, "scope": "admin"}, "x" * 32, algorithm="HS256")
    return {
        "garbage": ("Bearer garbage", "The token is malformed."),
        "expired": (f"Bearer {mint_token(config, 'alice', now=past)}", "The token has expired."),
        "other secret": (f"Bearer {mint_token(other, 'alice')}", "The token's signature is invalid."),
        "forged admin": (f"Bearer {forged}", "The token's signature is invalid."),
        "wrong scheme": (
            f"Basic {mint_token(config, 'alice')}",
            "Malformed Authorization header: expected 'Bearer <token>'.",
        ),
        "no token": ("Bearer", "Malformed Authorization header: expected 'Bearer <token>'."),
    }


@pytest.mark.parametrize(
    "case", ["garbage", "expired", "other secret", "forged admin", "wrong scheme", "no token"]
)
@pytest.mark.parametrize(
    "query",
    [FOLLOW, "mutation { markFansSeen { seenAt } }", "{ viewer { userId } }"],
)
async def test_a_bad_token_is_401_and_writes_nothing(api: Served, case: str, query: str) -> None:
    await api.register("alice", "bob")
    header, reason = bad_tokens(api.settings)[case]
    before = await snapshot(api)

    response = await post(api, {"query": query}, headers={"authorization": header})

    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"errors": [{"message": reason, "extensions": {"code": "UNAUTHENTICATED"}}]}
    assert await snapshot(api) == before


async def test_a_bad_token_on_get_is_401(api: Served) -> None:
    header, reason = bad_tokens(api.settings)["expired"]

    response = await api.client.get(
        "/graphql", params={"query": "{ viewer { userId } }"}, headers={"authorization": header}
    )

    assert response.status_code == 401
    assert "www-authenticate" in response.headers
    assert single_error(response) == {"message": reason, "extensions": {"code": "UNAUTHENTICATED"}}


async def test_a_good_token_is_the_viewer(api: Served) -> None:
    await api.register("alice")

    response = await post(
        api, {"query": "{ viewer { userId } }"}, headers={"authorization": f"bearer {api.token('alice')}"}
    )

    assert response.status_code == 200
    assert response.json() == {"data": {"viewer": {"userId": "alice"}}}


# Unexpected errors are masked


async def fail(self: FollowStore, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("secret detail")


@pytest.mark.parametrize("request_id", [None, "trace-42"])
async def test_an_unexpected_error_is_masked(
    api: Served, monkeypatch: pytest.MonkeyPatch, request_id: str | None
) -> None:
    await api.register("alice", "bob")
    monkeypatch.setattr(FollowStore, "facts", fail)
    headers = {} if request_id is None else {"x-request-id": request_id}

    response = await post(
        api, {"query": '{ user(userId: "alice") { userId fansCount } viewer { userId } }'}, headers=headers
    )

    assert response.status_code == 200
    assert "secret detail" not in response.text
    assert "RuntimeError" not in response.text
    body = response.json()
    sent_id = response.headers["x-request-id"]
    if request_id is not None:
        assert sent_id == request_id
    assert body["data"] == {"user": None, "viewer": None}
    assert len(body["errors"]) == 1
    error = body["errors"][0]
    assert error["message"] == "Internal server error."
    assert error["path"] == ["user"]  # the counts are loaded with the user
    assert error["extensions"] == {"code": "INTERNAL_SERVER_ERROR", "requestId": sent_id}


async def test_an_unexpected_error_in_a_mutation_is_masked(
    api: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    await api.register("alice", "bob")

    async def broken_follow(self: FollowStore, *, follower: str, followee: str, at: int | None = None) -> Any:
        raise RuntimeError(f"secret detail about {follower}")

    monkeypatch.setattr(FollowStore, "follow", broken_follow)

    response = await post(
        api,
        {"query": FOLLOW},
        accept=GRAPHQL_RESPONSE,
        headers={"authorization": f"Bearer {api.token('alice')}"},
    )

    assert response.status_code == 200
    assert "secret detail" not in response.text
    body = response.json()
    assert body["data"] is None
    assert [e["extensions"]["code"] for e in body["errors"]] == ["INTERNAL_SERVER_ERROR"]
    assert body["errors"][0]["message"] == "Internal server error."
    assert body["errors"][0]["extensions"]["requestId"] == response.headers["x-request-id"]


async def test_expected_errors_are_not_masked(api: Served) -> None:
    response = await post(api, {"query": '{ user(userId: "bad id") { userId } }'})

    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "Invalid user id" in error["message"]
    assert "requestId" not in error["extensions"]


# Health


async def test_healthz(api: Served) -> None:
    response = await api.client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz(api: Served) -> None:
    response = await api.client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "redis": "ok"}


async def test_readyz_is_503_when_redis_is_gone(
    real_redis: aioredis.Redis, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    socket = tmp_path_factory.mktemp("gone") / "no.sock"
    unreachable = aioredis.Redis(unix_socket_path=str(socket), retry=Retry(NoBackoff(), 0))
    try:
        async with client_for(settings, unreachable) as client:
            response = await client.get("/readyz")
            health = await client.get("/healthz")
    finally:
        await unreachable.aclose()

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "redis": "ConnectionError"}
    assert health.status_code == 200
