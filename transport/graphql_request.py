"""Reading a GraphQL-over-HTTP request before it runs: the media type to answer in, the JSON body
(read up to its limit), and the operation's parameters (a persisted query's hash included); every
refusal is a RequestError with its status (transport/graphql_http.py answers it)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson
from starlette.types import Receive

from followgraph.transport.persisted import PersistedQueryError, requested_hash

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
MAX_OPERATION_NAME = 256


class RequestError(Exception):
    """The HTTP request is not a GraphQL request we can run: answered before execution."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str = "BAD_REQUEST",
        headers: Mapping[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return {"errors": [{"message": str(self), "extensions": {"code": self.code}}]}


class GraphQLParams(NamedTuple):
    """One operation of a request (a tuple: made once a request, it costs less than a dataclass)."""

    query: str
    variables: dict[str, Any] | None
    operation_name: str | None
    # The SHA-256 of an automatic persisted query (transport/persisted.py); query is "" until the
    # endpoint finds the document when the request sent only the hash.
    persisted: str | None = None


@functools.lru_cache(maxsize=256)
def negotiate(accept: str | None) -> str:
    """The response media type for an Accept header; RequestError 406 when we can offer none.
    Clients send the same few values again and again: the answers are kept (a refusal is not)."""
    if not accept:
        return JSON
    best: tuple[float, int, str] | None = None
    for position, part in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        if q <= 0:
            continue
        media = media.lower()
        if media in (GRAPHQL_RESPONSE, JSON):
            offered = media
        elif media in ("*/*", "application/*"):
            offered = JSON
        else:
            continue
        candidate = (q, -position, offered)
        if best is None or candidate[:2] > best[:2]:
            best = candidate
    if best is None:
        raise RequestError(
            406, f"Not acceptable: this endpoint answers {GRAPHQL_RESPONSE} or {JSON}.", code="NOT_ACCEPTABLE"
        )
    return best[2]


@functools.lru_cache(maxsize=64)
def content_media_type(content_type: str) -> str:
    """The media type of a Content-Type header, in lower case, without its parameters. Clients
    send the same one again and again: the answers are kept."""
    return content_type.split(";")[0].strip().lower()


# orjson reads an integer past 64 bits as a float and drops its last digits, so that an ID sent
# as a number of 20 digits would name another user. A text with 19 digits in a row or more (where
# such integers begin, minus signs included) is read by the standard library, whose integers are
# exact; the usual request pays one search.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def json_object(raw: str | bytes, what: str) -> Any:
    data = raw.encode() if isinstance(raw, str) else raw  # str: a GET parameter
    try:
        return (
            json.loads(data, parse_constant=_no_constant) if _LONG_DIGITS.search(data) else orjson.loads(data)
        )
    except ValueError as exc:  # orjson's and json's JSONDecodeError, bad UTF-8, NaN
        reason = f"{exc.msg}, at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise RequestError(400, f"{what} is not valid JSON ({reason}).") from None
    except RecursionError:
        raise RequestError(400, f"{what} is not valid JSON (nested too deeply).") from None


def _no_constant(name: str) -> Any:
    """NaN and Infinity, which the standard library reads and JSON does not have."""
    raise ValueError(f"{name} is not a JSON value")


def parse_params(data: Mapping[str, Any], *, persisted: bool = False) -> GraphQLParams:
    """The operation of a request; with `persisted`, one may name its document by hash only."""
    query = data.get("query")
    digest = _persisted_hash(data.get("extensions")) if persisted else None
    if digest is not None and query is None:
        query = ""  # found by the endpoint
    elif not isinstance(query, str) or not query or query.isspace():  # no copy of the document
        raise RequestError(400, "The request has no GraphQL document: send it as `query`.")
    variables = data.get("variables")
    if variables is not None and not isinstance(variables, dict):
        raise RequestError(400, "`variables` must be a JSON object.")
    operation_name = data.get("operationName")
    if operation_name is not None and not isinstance(operation_name, str):
        raise RequestError(400, "`operationName` must be a string.")
    extensions = data.get("extensions")
    if extensions is not None and not isinstance(extensions, dict):
        raise RequestError(400, "`extensions` must be a JSON object.")
    if operation_name is not None and len(operation_name) > MAX_OPERATION_NAME:
        # Refused here, it reaches no error message, log line or metric label.
        raise RequestError(400, f"`operationName` is longer than {MAX_OPERATION_NAME} characters.")
    return GraphQLParams(query, variables, operation_name, digest)


def _persisted_hash(extensions: Any) -> str | None:
    if not isinstance(extensions, dict):
        return None
    try:
        return requested_hash(extensions)
    except PersistedQueryError as exc:
        raise RequestError(400, str(exc), code=exc.code) from None


def too_large(limit: int) -> RequestError:
    return RequestError(413, f"The request body exceeds {limit} bytes.", code="PAYLOAD_TOO_LARGE")


async def read_body(receive: Receive, limit: int) -> bytes:
    """The request body; RequestError 413 as soon as it exceeds `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect
            raise RequestError(400, "The client went away before its request body arrived.")
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)  # one chunk, the usual case: that chunk itself
