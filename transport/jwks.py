"""The signing keys of an identity provider, for the tokens it issues: found through OpenID Connect
discovery (`{issuer}/.well-known/openid-configuration`) or at a JWKS URL, parsed by PyJWT.

Keys are kept for as long as the response's `Cache-Control: max-age` says (DEFAULT_LIFETIME
without one, within MIN_LIFETIME and MAX_LIFETIME), then fetched again when a token next needs one.
A token whose key id (`kid`) is unknown fetches them at once, so a provider's new key works
without a restart, but at most once every MIN_REFETCH_SECONDS: tokens with made-up key ids cannot
turn the server into a client hammering the provider. While the provider cannot be reached, the
keys already fetched keep working (`stale` says they outlived their lifetime), and a token signed
with another key gets a clear 401 after at most FETCH_TIMEOUT, never a hang or a 500.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from typing import Any

import httpx
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError

log = logging.getLogger(__name__)

DISCOVERY = "/.well-known/openid-configuration"
DEFAULT_LIFETIME = 300.0
MIN_LIFETIME = 60.0
MAX_LIFETIME = 86_400.0
MIN_REFETCH_SECONDS = 10.0
FETCH_TIMEOUT = 2.0
# The signature algorithms accepted from a provider's keys (each key's own: never the token's word).
ALGORITHMS = frozenset({"RS256", "ES256", "EdDSA"})
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*(\d+)", re.IGNORECASE)


class KeysUnavailableError(Exception):
    """The provider's keys could not be fetched; the message says why."""


def lifetime(cache_control: str | None) -> float:
    """How long a key set may be kept, from its response's Cache-Control header."""
    if cache_control is None:
        return DEFAULT_LIFETIME
    if "no-store" in cache_control.lower() or "no-cache" in cache_control.lower():
        return MIN_LIFETIME
    found = _MAX_AGE.search(cache_control)
    if found is None:
        return DEFAULT_LIFETIME
    return min(MAX_LIFETIME, max(MIN_LIFETIME, float(found.group(1))))


class JwksKeys:
    """The keys of the provider at `issuer` (by discovery) or at `jwks_url`."""

    def __init__(
        self,
        *,
        issuer: str | None = None,
        jwks_url: str | None = None,
        timeout: float = FETCH_TIMEOUT,
        min_refetch: float = MIN_REFETCH_SECONDS,
    ) -> None:
        if (issuer is None) == (jwks_url is None):
            raise ValueError("JwksKeys needs an issuer or a JWKS URL, not both.")
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.timeout = timeout
        self.min_refetch = min_refetch
        self._keys: dict[str | None, PyJWK] = {}
        self._expires = 0.0
        self._fetched = 0.0
        self._attempted = -math.inf
        self._lock = asyncio.Lock()

    @property
    def stale(self) -> bool:
        """Whether the keys outlived their lifetime (or were never fetched)."""
        return time.monotonic() >= self._expires

    def state(self) -> dict[str, Any]:
        """What /readyz says of the keys."""
        if not self._fetched:
            return {"status": "not fetched"}
        age = round(time.monotonic() - self._fetched, 1)
        return {"status": "stale" if self.stale else "ok", "keys": len(self._keys), "age_seconds": age}

    async def key(self, kid: str | None) -> PyJWK | None:
        """The key a token with key id `kid` is signed with; None when the provider has none such
        (or its keys cannot be had)."""
        if self.stale or kid not in self._keys:
            await self._refresh()
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))  # a provider with one key may leave kid out
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        """Fetch the keys, unless they were tried less than `min_refetch` seconds ago (or are
        being fetched: then wait for that)."""
        async with self._lock:
            if time.monotonic() - self._attempted < self.min_refetch:
                return
            self._attempted = time.monotonic()
            try:
                keys, seconds = await self._fetch()
            except KeysUnavailableError as exc:
                log.warning("identity provider keys not fetched (%s); keeping %d known", exc, len(self._keys))
                return
            self._keys, self._fetched = keys, time.monotonic()
            self._expires = self._fetched + seconds

    async def _fetch(self) -> tuple[dict[str | None, PyJWK], float]:
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                url = self.jwks_url or await self._discover(client)
                response = await client.get(url, headers={"accept": "application/json"})
                response.raise_for_status()
                keyset = PyJWKSet.from_dict(response.json())
        except httpx.HTTPError as exc:
            raise KeysUnavailableError(f"{type(exc).__name__}: {exc}") from None
        except (ValueError, PyJWKError, PyJWKSetError) as exc:
            raise KeysUnavailableError(f"not a key set: {exc}") from None
        keys = {
            key.key_id: key
            for key in keyset.keys
            if key.algorithm_name in ALGORITHMS and key.public_key_use in (None, "sig")
        }
        if not keys:
            raise KeysUnavailableError(f"no signing key of {', '.join(sorted(ALGORITHMS))} in the set")
        return keys, lifetime(response.headers.get("cache-control"))

    async def _discover(self, client: httpx.AsyncClient) -> str:
        assert self.issuer is not None
        response = await client.get(self.issuer.rstrip("/") + DISCOVERY)
        response.raise_for_status()
        document = response.json()
        if document.get("issuer") != self.issuer:
            raise KeysUnavailableError(
                f"the discovery document names issuer {document.get('issuer')!r}, not {self.issuer!r}"
            )
        uri = document.get("jwks_uri")
        if not isinstance(uri, str):
            raise KeysUnavailableError("the discovery document has no jwks_uri")
        return uri
