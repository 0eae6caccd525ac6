"""Apollo's automatic persisted queries (APQ): a client sends a document's SHA-256 instead of the
document, and the document only when the server answers that it does not know the hash.

    {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "<64 hex digits>"}}}

A hash with its document (checked against it) is kept in Redis for TTL_SECONDS, so every server
process knows it, and in the process for the documents it meets again (MEMORY entries): a known
hash costs no Redis round trip. A hash nobody sent the document of gets PersistedQueryNotFound
(`PERSISTED_QUERY_NOT_FOUND`), which Apollo's link answers by sending the document. What Redis
keeps is bounded by the TTL and by the request body limit of each document; a hash is kept only
once its document was sent whole, never made up by a client.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
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


class PersistedQueries:
    """The documents known by hash: in this process, then in Redis."""

    def __init__(self, *, ttl: int = TTL_SECONDS, memory: int = MEMORY) -> None:
        self.ttl = ttl
        self._known: LRUCache[str, str] = LRUCache(memory)

    async def document(self, store: FollowStore, digest: str, query: str | None) -> str:
        """The document of `digest`: `query` once checked against it (and kept), else the one
        kept; PersistedQueryError when it does not match or is not known."""
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
