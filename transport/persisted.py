"""Apollo's automatic persisted queries (APQ), and trusted documents.

With APQ a client sends a document's SHA-256 instead of the document, and the document only when
the server answers that it does not know the hash.

    {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "<64 hex digits>"}}}

A hash with its document (checked against it) is kept in Redis for TTL_SECONDS, so every server
process knows it, and in the process for the documents it meets again (MEMORY entries): a known
hash costs no Redis round trip. A hash nobody sent the document of gets PersistedQueryNotFound
(`PERSISTED_QUERY_NOT_FOUND`), which Apollo's link answers by sending the document. What Redis
keeps is bounded by the TTL and by the request body limit of each document; a hash is kept only
once its document was sent whole, never made up by a client.

Trusted documents are a manifest of the operations a company's clients may send, in the format of
`@apollo/generate-persisted-query-manifest` (`{"format": "apollo-persisted-query-manifest",
"version": 1, "operations": [{"id": sha256, "name", "type", "body"}]}`). A request may name a
document of the manifest by its id whatever the mode, so that a client built with the manifest
(the web app) never waits for a PersistedQueryNotFound: with `off` and `allow` anything else runs
too (`allow` only insists that there is a manifest); with `require`
(what OWASP recommends for a production API whose clients are known) a document outside the
manifest is refused (`PERSISTED_QUERY_NOT_IN_LIST`), whether sent whole or by hash, and APQ adds
nothing to it. With `allow` and `require` the manifest's documents are compiled into plans at
start (the endpoint's); with `off`, at their first run, as any other document.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from cachetools import LRUCache

from followgraph.store import FollowStore

TTL_SECONDS = 86_400
MEMORY = 4096
NOT_FOUND = "PersistedQueryNotFound"
_HASH = re.compile(r"[0-9a-f]{64}")


class PersistedQueryError(Exception):
    """A persisted-query request that cannot be run; `code` is its extensions.code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def requested_hash(extensions: Mapping[str, Any] | None) -> str | None:
    """The hash a request's extensions ask for; None when they ask for none."""
    persisted = None if extensions is None else extensions.get("persistedQuery")
    if persisted is None:
        return None
    if not isinstance(persisted, dict) or persisted.get("version") != 1:
        raise PersistedQueryError("Unsupported persisted query version: send version 1.", "BAD_REQUEST")
    digest = persisted.get("sha256Hash")
    if not isinstance(digest, str) or not _HASH.fullmatch(digest):
        raise PersistedQueryError("persistedQuery.sha256Hash must be 64 lowercase hex digits.", "BAD_REQUEST")
    return digest


class TrustedMode(enum.Enum):
    OFF = "off"
    ALLOW = "allow"
    REQUIRE = "require"


class ManifestError(ValueError):
    """A manifest of trusted documents that cannot be used; the message says why."""


@dataclass(frozen=True)
class Operation:
    id: str
    name: str | None
    body: str


def load_manifest(path: Path) -> dict[str, Operation]:
    """The operations of a persisted-query manifest by id; ManifestError for one that is not."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path} cannot be read as JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != "apollo-persisted-query-manifest":
        raise ManifestError(f"{path} is not an apollo-persisted-query-manifest.")
    operations: dict[str, Operation] = {}
    for entry in data.get("operations") or []:
        body, digest = entry.get("body"), entry.get("id")
        if not isinstance(body, str) or not isinstance(digest, str):
            raise ManifestError(f"{path}: every operation needs a string id and body.")
        if hashlib.sha256(body.encode()).hexdigest() != digest:
            raise ManifestError(f"{path}: operation {digest} is not the SHA-256 of its body.")
        name = entry.get("name")
        operations[digest] = Operation(digest, name if isinstance(name, str) else None, body)
    return operations


class PersistedQueries:
    """The documents known by hash: the trusted ones, then those kept in this process and in
    Redis."""

    def __init__(
        self,
        *,
        ttl: int = TTL_SECONDS,
        memory: int = MEMORY,
        trusted: Mapping[str, Operation] | None = None,
        mode: TrustedMode = TrustedMode.OFF,
    ) -> None:
        self.ttl = ttl
        self._known: LRUCache[str, str] = LRUCache(memory)
        self.trusted = dict(trusted or {})
        self.mode = mode

    @property
    def required(self) -> bool:
        """Whether every document must be a trusted one."""
        return self.mode is TrustedMode.REQUIRE

    def checked(self, query: str) -> str:
        """A document sent whole, when trusted documents are required: it must be one of them."""
        if hashlib.sha256(query.encode()).hexdigest() not in self.trusted:
            raise PersistedQueryError(
                "This server runs only the operations of its clients' manifest (trusted documents).",
                "PERSISTED_QUERY_NOT_IN_LIST",
            )
        return query

    async def document(self, store: FollowStore, digest: str, query: str | None) -> str:
        """The document of `digest`: `query` once checked against it (and kept), else the one
        kept; PersistedQueryError when it does not match or is not known."""
        trusted = self.trusted.get(digest)
        if trusted is not None:
            return trusted.body
        if self.required:
            raise PersistedQueryError(
                "This server runs only the operations of its clients' manifest (trusted documents).",
                "PERSISTED_QUERY_NOT_IN_LIST",
            )
        if query is not None:
            if hashlib.sha256(query.encode()).hexdigest() != digest:
                raise PersistedQueryError(
                    "provided sha does not match query", "PERSISTED_QUERY_HASH_MISMATCH"
                )
            if digest not in self._known:
                await store.redis.set(store.keys.persisted_query(digest), query, ex=self.ttl)
                self._known[digest] = query
            return query
        known = self._known.get(digest)
        if known is None:
            known = cast("str | None", await store.redis.get(store.keys.persisted_query(digest)))
            if known is None:
                raise PersistedQueryError(NOT_FOUND, "PERSISTED_QUERY_NOT_FOUND")
            self._known[digest] = known
        return known
