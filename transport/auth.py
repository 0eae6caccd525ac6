"""Bearer-JWT authentication: verify the Authorization header into a Principal, and mint tokens.

Knows nothing of GraphQL or HTTP frameworks: it takes the raw header value and returns a result.
The algorithm is pinned by the configuration, never taken from the token.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import jwt
from cachetools import LRUCache
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey, RSAPublicKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from jwt.algorithms import HMACAlgorithm
from jwt.exceptions import (
    DecodeError,
    ExpiredSignatureError,
    ImmatureSignatureError,
    InvalidAlgorithmError,
    InvalidAudienceError,
    InvalidIssuedAtError,
    InvalidIssuerError,
    InvalidKeyError,
    InvalidSignatureError,
    InvalidSubjectError,
    MissingRequiredClaimError,
    PyJWTError,
)

from followgraph.resolvers.context import ADMIN_SCOPE
from followgraph.store.graph.errors import InvalidInputError
from followgraph.store.graph.ids import validate_user_id
from followgraph.transport.jwks import JwksKeys

MIN_SECRET_BYTES = 32
MIN_RSA_KEY_BITS = 2048
MAX_TTL = timedelta(days=366)

_CLAIM_NAMES = {
    "sub": "subject (sub)",
    "exp": "expiry time (exp)",
    "iss": "issuer (iss)",
    "aud": "audience (aud)",
}


class AuthError(Exception):
    """A request's credentials were rejected; `reason` is safe to show to the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class AuthConfigError(Exception):
    """The authentication settings are missing or unusable."""


# The longest lifetime a token may have, unless configured otherwise (FOLLOWGRAPH_JWT_MAX_LIFETIME).
DEFAULT_MAX_LIFETIME = 30 * 86400


@dataclass(frozen=True)
class AuthConfig:
    """How tokens are verified and minted: HS256 with a shared secret, RS256 with a key pair, or
    (JWKS) with the keys of an identity provider, which mints them itself."""

    algorithm: Literal["HS256", "RS256", "JWKS"]
    secret: bytes | None = field(default=None, repr=False)
    public_key: str | None = None
    private_key: str | None = field(default=None, repr=False)
    issuer: str | None = None
    audience: str | None = None
    leeway_seconds: int = 30
    max_token_bytes: int = 4096
    # Tokens whose exp lies further ahead than this are refused.
    max_lifetime_seconds: int = DEFAULT_MAX_LIFETIME
    # The identity provider's keys (algorithm JWKS).
    jwks: JwksKeys | None = field(default=None, repr=False, compare=False)
    # The claim holding the user id, and the one holding the scopes (None: scope, else scp).
    subject_claim: str = "sub"
    scope_claim: str | None = None
    _verify_key: bytes | RSAPublicKey | None = field(init=False, repr=False, compare=False)
    _signing_key: bytes | RSAPrivateKey | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.issuer == "":
            raise AuthConfigError("FOLLOWGRAPH_JWT_ISSUER is empty: leave it unset to accept any issuer.")
        if self.audience == "":
            raise AuthConfigError("FOLLOWGRAPH_JWT_AUDIENCE is empty: leave it unset to accept no audience.")
        if self.leeway_seconds < 0:
            raise AuthConfigError(f"The JWT leeway must not be negative (got {self.leeway_seconds}).")
        if self.max_lifetime_seconds <= 0:
            raise AuthConfigError(f"The token lifetime must be positive (got {self.max_lifetime_seconds}).")
        if self.max_token_bytes <= 0:
            raise AuthConfigError(f"The maximum token size must be positive (got {self.max_token_bytes}).")
        verify_key: bytes | RSAPublicKey | None
        signing_key: bytes | RSAPrivateKey | None
        if self.algorithm == "JWKS":
            verify_key, signing_key = self._jwks_keys()
        elif self.algorithm == "HS256":
            verify_key, signing_key = self._hs256_keys()
        elif self.algorithm == "RS256":
            verify_key, signing_key = self._rs256_keys()
        else:
            raise AuthConfigError(f"Unsupported JWT algorithm {self.algorithm!r}: use HS256 or RS256.")
        object.__setattr__(self, "_verify_key", verify_key)
        object.__setattr__(self, "_signing_key", signing_key)

    def _jwks_keys(self) -> tuple[None, None]:
        if self.jwks is None:
            raise AuthConfigError("Tokens of an identity provider need its issuer or JWKS URL.")
        if self.secret is not None or self.public_key is not None:
            raise AuthConfigError(
                "Set an identity provider (FOLLOWGRAPH_OIDC_ISSUER or FOLLOWGRAPH_JWKS_URL) or a JWT "
                "secret or key file, not both."
            )
        if self.audience is None:
            # An identity provider issues tokens for many applications: without an audience, a
            # token it issued for another one would be taken here.
            raise AuthConfigError(
                "FOLLOWGRAPH_JWT_AUDIENCE is required with an identity provider: the aud its tokens "
                "carry for this API."
            )
        return None, None

    def _hs256_keys(self) -> tuple[bytes, bytes]:
        if self.public_key is not None or self.private_key is not None:
            raise AuthConfigError("HS256 uses FOLLOWGRAPH_JWT_SECRET only: unset the RS256 key files.")
        if self.secret is None:
            raise AuthConfigError("FOLLOWGRAPH_JWT_SECRET is missing: HS256 needs a shared secret.")
        if len(self.secret) < MIN_SECRET_BYTES:
            raise AuthConfigError(
                f"FOLLOWGRAPH_JWT_SECRET must be at least {MIN_SECRET_BYTES} bytes long "
                f"(it is {len(self.secret)})."
            )
        try:
            HMACAlgorithm(HMACAlgorithm.SHA256).prepare_key(self.secret)
        except InvalidKeyError:
            # Using a public key as the HMAC secret is the classic algorithm-confusion mistake.
            raise AuthConfigError(
                "FOLLOWGRAPH_JWT_SECRET looks like a key or certificate, not a random secret: "
                "for RS256 use FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE."
            ) from None
        return self.secret, self.secret

    def _rs256_keys(self) -> tuple[RSAPublicKey, RSAPrivateKey | None]:
        if self.secret is not None:
            raise AuthConfigError("RS256 uses key files only: unset FOLLOWGRAPH_JWT_SECRET.")
        if self.public_key is None:
            raise AuthConfigError(
                "FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE is missing: RS256 needs a public key to verify tokens."
            )
        public = _load_public_key(self.public_key)
        if self.private_key is None:
            return public, None
        private = _load_private_key(self.private_key)
        if private.public_key().public_numbers() != public.public_numbers():
            raise AuthConfigError(
                "FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE does not match FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE."
            )
        return public, private


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: a user id and the scopes the token grants."""

    user_id: str
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = field(default=None, compare=False)  # epoch seconds: the exp claim


def authenticate(header: str | None, config: AuthConfig) -> Principal | None:
    """The Principal of an Authorization header; None when there is none; AuthError when it is bad.
    For a configuration of fixed keys (HS256, RS256); authenticate_async takes every one."""
    token = _bearer(header, config)
    if token is None:
        return None
    if config._verify_key is None:
        raise AuthConfigError("Tokens of an identity provider are checked by authenticate_async.")
    return _principal(_decode(token, config._verify_key, config.algorithm, config), config)


async def authenticate_async(header: str | None, config: AuthConfig) -> Principal | None:
    """authenticate(), for every configuration: with an identity provider, the token's key is
    looked up (and the provider's keys fetched when it is new)."""
    if config.jwks is None:
        return authenticate(header, config)
    token = _bearer(header, config)
    if token is None:
        return None
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except PyJWTError:
        raise AuthError("The token is malformed.") from None
    if kid is not None and not isinstance(kid, str):
        raise AuthError("The token's key id (kid) must be a string.")
    key = await config.jwks.key(kid)
    if key is None:
        raise AuthError("The token's key id (kid) is not one of the identity provider's signing keys.")
    return _principal(_decode(token, key.key, key.algorithm_name, config), config)


def _bearer(header: str | None, config: AuthConfig) -> str | None:
    """The token of an Authorization header; None when there is none."""
    if header is None:
        return None
    parts = header.split()
    if not parts:
        raise AuthError("Empty Authorization header: send 'Bearer <token>', or no header to be anonymous.")
    if len(parts) != 2 or parts[0].lower() != "bearer" or not parts[1].isascii():
        raise AuthError("Malformed Authorization header: expected 'Bearer <token>'.")
    token = parts[1]
    if len(token) > config.max_token_bytes:
        raise AuthError(f"The token is too large: the limit is {config.max_token_bytes} bytes.")
    return token


def _principal(claims: dict[str, Any], config: AuthConfig) -> Principal:
    expires_at = _expiry(claims["exp"], config)
    subject = claims.get(config.subject_claim)
    try:
        if not isinstance(subject, str):
            raise InvalidInputError("not a string")
        user_id = validate_user_id(subject, field=config.subject_claim)
    except InvalidInputError:
        raise AuthError(f"The token's {_claim_name(config.subject_claim)} is not a valid user id.") from None
    if config.scope_claim is not None:
        scopes = _scopes(claims.get(config.scope_claim), config.scope_claim)
    else:
        scopes = _scopes(claims.get("scope"), "scope") | _scopes(claims.get("scp"), "scp")
    return Principal(user_id=user_id, scopes=scopes, expires_at=expires_at)


def _claim_name(claim: str) -> str:
    return _CLAIM_NAMES.get(claim, f"{claim} claim")


def _expiry(exp: object, config: AuthConfig) -> float:
    """The exp claim as epoch seconds: a number, not past, and at most the configured lifetime ahead.

    PyJWT would take a string of digits ("9999999999") and calls other strings malformed, so the
    claim is checked here instead.
    """
    if isinstance(exp, bool) or not isinstance(exp, int | float) or not math.isfinite(exp):
        raise AuthError("The token's expiry time (exp) must be a number: seconds since the epoch.")
    now = time.time()
    if exp <= now - config.leeway_seconds:
        raise AuthError("The token has expired.")
    if exp > now + config.max_lifetime_seconds + config.leeway_seconds:
        raise AuthError(
            f"The token's expiry time (exp) is too far ahead: tokens may live at most "
            f"{config.max_lifetime_seconds} seconds."
        )
    return float(exp)


class VerifiedTokens:
    """authenticate_async() with a memory of tokens already verified, until they expire.

    A client sends the same token with every request; verifying its signature each time is a
    measurable share of a request. Only valid tokens are kept, never longer than their `exp`
    (or MAX_AGE), and at most `size` of them.
    """

    MAX_AGE = 300.0

    def __init__(self, config: AuthConfig, *, size: int = 4096) -> None:
        self.config = config
        self._known: LRUCache[str, tuple[Principal, float]] = LRUCache(size)

    async def authenticate(self, header: str | None) -> Principal | None:
        if not header:
            return await authenticate_async(header, self.config)
        now = time.time()
        known = self._known.get(header)
        if known is not None and known[1] > now:
            return known[0]
        principal = await authenticate_async(header, self.config)
        if principal is not None:
            until = min(principal.expires_at or now, now + self.MAX_AGE)
            self._known[header] = (principal, until)
        return principal


def mint_token(
    config: AuthConfig,
    user_id: str,
    *,
    admin: bool = False,
    ttl_seconds: int = 3600,
    now: datetime | None = None,
) -> str:
    """A signed token for `user_id`; InvalidInputError for a bad id, ValueError for a bad ttl."""
    validate_user_id(user_id)
    longest = min(int(MAX_TTL.total_seconds()), config.max_lifetime_seconds)
    if not 0 < ttl_seconds <= longest:
        raise ValueError(f"A token's lifetime must be 1 to {longest} seconds, got {ttl_seconds}.")
    if now is None:
        now = datetime.now(UTC)
    elif now.tzinfo is None:
        raise ValueError("now must be timezone-aware.")
    if config.algorithm == "JWKS":
        raise AuthConfigError("Tokens are minted by the identity provider: ask it for one.")
    if config._signing_key is None:
        raise AuthConfigError(
            "FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE is missing: minting RS256 tokens needs the private key."
        )
    issued_at = int(now.timestamp())
    claims: dict[str, Any] = {
        "sub": user_id,
        "iat": issued_at,
        "nbf": issued_at,
        "exp": issued_at + ttl_seconds,
    }
    if admin:
        claims["scope"] = ADMIN_SCOPE
    if config.issuer is not None:
        claims["iss"] = config.issuer
    if config.audience is not None:
        claims["aud"] = config.audience
    return jwt.encode(claims, config._signing_key, algorithm=config.algorithm)


def _decode(token: str, key: Any, algorithm: str, config: AuthConfig) -> dict[str, Any]:
    """The token's claims, its signature checked with `key` by `algorithm` (the configuration's or
    the provider key's, never the token's own word)."""
    try:
        return jwt.decode(
            token,
            key,
            algorithms=[algorithm],
            # exp is checked by _expiry: its type, and how far ahead it lies.
            options={"require": ["exp", config.subject_claim], "verify_exp": False},
            issuer=config.issuer,
            audience=config.audience,
            leeway=config.leeway_seconds,
        )
    except ExpiredSignatureError:
        raise AuthError("The token has expired.") from None
    except ImmatureSignatureError:
        raise AuthError("The token is not valid yet (nbf or iat is in the future).") from None
    except MissingRequiredClaimError as exc:
        raise AuthError(f"The token has no {_claim_name(exc.claim)}.") from None
    except InvalidIssuerError:
        raise AuthError("The token's issuer (iss) is not accepted.") from None
    except InvalidAudienceError:
        raise AuthError("The token's audience (aud) is not accepted.") from None
    except InvalidSubjectError:
        raise AuthError("The token's subject (sub) must be a string.") from None
    except InvalidIssuedAtError:
        raise AuthError("The token's issued-at time (iat) must be a number.") from None
    except InvalidAlgorithmError:
        raise AuthError(f"The token's algorithm (alg) is not accepted: expected {algorithm}.") from None
    except InvalidSignatureError:
        raise AuthError("The token's signature is invalid.") from None
    except DecodeError:
        raise AuthError("The token is malformed.") from None
    except PyJWTError:
        raise AuthError("The token is invalid.") from None


def _scopes(claim: object, name: str) -> frozenset[str]:
    if claim is None:
        return frozenset()
    if isinstance(claim, str):
        return frozenset(claim.split())
    if isinstance(claim, list) and all(isinstance(scope, str) for scope in claim):
        return frozenset(claim)
    raise AuthError(f"The token's {name} claim must be a string or a list of strings.")


def _load_public_key(pem: str) -> RSAPublicKey:
    try:
        key = load_pem_public_key(pem.encode())
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise AuthConfigError(
            "FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE does not hold a readable PEM public key."
        ) from None
    if not isinstance(key, RSAPublicKey):
        raise AuthConfigError("FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE holds a key that is not an RSA key.")
    if key.key_size < MIN_RSA_KEY_BITS:
        raise AuthConfigError(
            f"FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE holds a {key.key_size}-bit RSA key: "
            f"use at least {MIN_RSA_KEY_BITS} bits."
        )
    return key


def _load_private_key(pem: str) -> RSAPrivateKey:
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise AuthConfigError(
            "FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE does not hold a readable, unencrypted PEM private key."
        ) from None
    if not isinstance(key, RSAPrivateKey):
        raise AuthConfigError("FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE holds a key that is not an RSA key.")
    return key
