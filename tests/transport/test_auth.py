from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from followgraph.resolvers.context import ADMIN_SCOPE
from followgraph.store.graph.errors import InvalidInputError
from followgraph.transport.auth import (
    AuthConfig,
    AuthConfigError,
    AuthError,
    Principal,
    authenticate,
    mint_token,
)

SECRET = b"a-test-secret-that-is-long-enough-for-hs256"
WRONG_SECRET = b"another-secret-that-is-also-long-enough-for-hs256"
ISSUER = "https://issuer.example"
AUDIENCE = "followgraph"


def _private_pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


def _public_pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> str:
    return key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def hs256() -> AuthConfig:
    return AuthConfig(algorithm="HS256", secret=SECRET)


@pytest.fixture
def rs256(rsa_key: rsa.RSAPrivateKey) -> AuthConfig:
    return AuthConfig(algorithm="RS256", public_key=_public_pem(rsa_key), private_key=_private_pem(rsa_key))


def _claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {"sub": "alice", "iat": now, "exp": now + 300}
    claims.update(overrides)
    return {name: value for name, value in claims.items() if value is not None}


def _hs256_token(claims: dict[str, Any], key: bytes = SECRET) -> str:
    return jwt.encode(claims, key, algorithm="HS256")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hand_made(header: dict[str, Any], claims: dict[str, Any], hmac_key: bytes | None) -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = (
        b"" if hmac_key is None else hmac.new(hmac_key, signing_input.encode(), hashlib.sha256).digest()
    )
    return f"{signing_input}.{_b64(signature)}"


def _rejected(header: str, config: AuthConfig) -> str:
    with pytest.raises(AuthError) as caught:
        authenticate(header, config)
    assert str(caught.value) == caught.value.reason
    return caught.value.reason


# Round trips


def test_hs256_round_trip(hs256: AuthConfig) -> None:
    principal = authenticate(f"Bearer {mint_token(hs256, 'alice')}", hs256)

    assert principal == Principal(user_id="alice", scopes=frozenset())
    assert ADMIN_SCOPE not in principal.scopes


def test_rs256_round_trip_verifies_with_the_public_key_alone(
    rs256: AuthConfig, rsa_key: rsa.RSAPrivateKey
) -> None:
    verifier = AuthConfig(algorithm="RS256", public_key=_public_pem(rsa_key))
    token = mint_token(rs256, "bob_2", admin=True)

    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    assert authenticate(f"Bearer {token}", verifier) == Principal(
        user_id="bob_2", scopes=frozenset({"admin"})
    )


def test_scheme_is_case_insensitive(hs256: AuthConfig) -> None:
    principal = authenticate(f"bearer  {mint_token(hs256, 'alice')} ", hs256)

    assert principal is not None
    assert principal.user_id == "alice"


def test_minted_claims(hs256: AuthConfig) -> None:
    now = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    config = AuthConfig(algorithm="HS256", secret=SECRET, issuer=ISSUER, audience=AUDIENCE)

    token = mint_token(config, "alice", ttl_seconds=600, now=now)
    claims = jwt.decode(token, options={"verify_signature": False})

    stamp = int(now.timestamp())
    assert claims == {
        "sub": "alice",
        "iat": stamp,
        "nbf": stamp,
        "exp": stamp + 600,
        "iss": ISSUER,
        "aud": AUDIENCE,
    }


def test_issuer_and_audience_round_trip() -> None:
    config = AuthConfig(algorithm="HS256", secret=SECRET, issuer=ISSUER, audience=AUDIENCE)

    principal = authenticate(f"Bearer {mint_token(config, 'alice', admin=True)}", config)

    assert principal is not None
    assert ADMIN_SCOPE in principal.scopes


@pytest.mark.parametrize(
    ("scope", "is_admin", "scopes"),
    [
        ("admin", True, {"admin"}),
        ("read admin", True, {"read", "admin"}),
        (["admin"], True, {"admin"}),
        (["read", "admin"], True, {"read", "admin"}),
        ("administrator", False, {"administrator"}),
        ("", False, set()),
        ([], False, set()),
        (None, False, set()),
    ],
)
def test_scope_claim_as_string_or_list(
    hs256: AuthConfig, scope: str | list[str] | None, is_admin: bool, scopes: set[str]
) -> None:
    principal = authenticate(f"Bearer {_hs256_token(_claims(scope=scope))}", hs256)

    assert principal is not None
    assert (ADMIN_SCOPE in principal.scopes) is is_admin
    assert principal.scopes == scopes


@pytest.mark.parametrize("scope", [7, ["admin", 7], {"admin": True}])
def test_scope_claim_of_another_type_is_rejected(hs256: AuthConfig, scope: object) -> None:
    reason = _rejected(f"Bearer {_hs256_token(_claims(scope=scope))}", hs256)

    assert "scope claim must be a string or a list of strings" in reason


def test_no_header_is_anonymous(hs256: AuthConfig) -> None:
    assert authenticate(None, hs256) is None


@pytest.mark.parametrize("header", ["", "   "])
def test_an_empty_header_is_rejected_not_anonymous(hs256: AuthConfig, header: str) -> None:
    # A client that sends `Authorization:` with nothing in it has a bug: telling it beats serving
    # it as anonymous, where its mutations fail for a reason it cannot see.
    assert "Empty Authorization header" in _rejected(header, hs256)


@pytest.mark.parametrize("exp", ["9999999999", "soon", "1e10", True, [1], {"at": 1}, float("inf")])
def test_an_expiry_that_is_not_a_number_is_rejected(hs256: AuthConfig, exp: object) -> None:
    claims = _claims()
    claims["exp"] = exp
    token = _hand_made({"alg": "HS256", "typ": "JWT"}, claims, SECRET)

    reason = _rejected(f"Bearer {token}", hs256)

    assert reason == "The token's expiry time (exp) must be a number: seconds since the epoch."


def test_an_expiry_beyond_the_longest_lifetime_is_rejected(hs256: AuthConfig) -> None:
    now = int(time.time())
    longest = hs256.max_lifetime_seconds
    assert longest == 30 * 86400
    assert authenticate(f"Bearer {_hs256_token(_claims(exp=now + longest - 60))}", hs256) is not None

    reason = _rejected(f"Bearer {_hs256_token(_claims(exp=now + longest + 3600))}", hs256)

    assert "too far ahead" in reason and str(longest) in reason


def test_the_longest_lifetime_is_configurable(hs256: AuthConfig) -> None:
    hour = replace(hs256, max_lifetime_seconds=3600)
    now = int(time.time())

    assert "too far ahead" in _rejected(f"Bearer {_hs256_token(_claims(exp=now + 7200))}", hour)
    with pytest.raises(ValueError, match="1 to 3600 seconds, got 7200"):
        mint_token(hour, "alice", ttl_seconds=7200)


def test_expiry_within_the_leeway_is_accepted(hs256: AuthConfig) -> None:
    now = int(time.time())
    token = _hs256_token(_claims(iat=now - 600, exp=now - 10))

    assert authenticate(f"Bearer {token}", hs256) is not None


# Rejections


def test_alg_none_is_rejected(hs256: AuthConfig, rs256: AuthConfig) -> None:
    token = _hand_made({"alg": "none", "typ": "JWT"}, _claims(), hmac_key=None)

    assert "algorithm (alg) is not accepted: expected HS256" in _rejected(f"Bearer {token}", hs256)
    assert "algorithm (alg) is not accepted: expected RS256" in _rejected(f"Bearer {token}", rs256)


def test_hs256_token_with_a_wrong_key_is_rejected(hs256: AuthConfig) -> None:
    token = _hs256_token(_claims(), key=WRONG_SECRET)

    assert _rejected(f"Bearer {token}", hs256) == "The token's signature is invalid."


def test_hs256_token_is_rejected_when_rs256_is_configured(rs256: AuthConfig) -> None:
    token = _hs256_token(_claims())

    assert "algorithm (alg) is not accepted: expected RS256" in _rejected(f"Bearer {token}", rs256)


def test_rs256_token_is_rejected_when_hs256_is_configured(hs256: AuthConfig, rs256: AuthConfig) -> None:
    token = mint_token(rs256, "alice")

    assert "algorithm (alg) is not accepted: expected HS256" in _rejected(f"Bearer {token}", hs256)


def test_public_key_used_as_hmac_secret_is_rejected(rs256: AuthConfig, rsa_key: rsa.RSAPrivateKey) -> None:
    # PyJWT refuses to sign with a PEM as HMAC key, so the forged token is built by hand.
    forged = _hand_made({"alg": "HS256", "typ": "JWT"}, _claims(), hmac_key=_public_pem(rsa_key).encode())

    assert "algorithm (alg) is not accepted: expected RS256" in _rejected(f"Bearer {forged}", rs256)


def test_expired_token_is_rejected(hs256: AuthConfig) -> None:
    now = int(time.time())
    token = _hs256_token(_claims(iat=now - 3600, exp=now - 60))

    assert _rejected(f"Bearer {token}", hs256) == "The token has expired."


def test_token_minted_in_the_past_has_expired(hs256: AuthConfig) -> None:
    token = mint_token(hs256, "alice", ttl_seconds=60, now=datetime.now(UTC) - timedelta(hours=1))

    assert _rejected(f"Bearer {token}", hs256) == "The token has expired."


@pytest.mark.parametrize("claim", ["nbf", "iat"])
def test_token_from_the_future_is_rejected(hs256: AuthConfig, claim: str) -> None:
    now = int(time.time())
    token = _hs256_token(_claims(**{claim: now + 300, "exp": now + 600}))

    assert "not valid yet" in _rejected(f"Bearer {token}", hs256)


def test_wrong_issuer_is_rejected() -> None:
    config = AuthConfig(algorithm="HS256", secret=SECRET, issuer=ISSUER)

    wrong = _hs256_token(_claims(iss="https://elsewhere.example"))
    missing = _hs256_token(_claims())

    assert _rejected(f"Bearer {wrong}", config) == "The token's issuer (iss) is not accepted."
    assert _rejected(f"Bearer {missing}", config) == "The token has no issuer (iss)."


def test_wrong_audience_is_rejected(hs256: AuthConfig) -> None:
    config = AuthConfig(algorithm="HS256", secret=SECRET, audience=AUDIENCE)

    wrong = _hs256_token(_claims(aud="another-service"))
    missing = _hs256_token(_claims())

    assert _rejected(f"Bearer {wrong}", config) == "The token's audience (aud) is not accepted."
    assert _rejected(f"Bearer {missing}", config) == "The token has no audience (aud)."
    # A token meant for some audience is not accepted by a service that expects none.
    assert "audience (aud) is not accepted" in _rejected(f"Bearer {wrong}", hs256)


def test_missing_subject_is_rejected(hs256: AuthConfig) -> None:
    token = _hs256_token(_claims(sub=None))

    assert _rejected(f"Bearer {token}", hs256) == "The token has no subject (sub)."


@pytest.mark.parametrize("sub", ["../x", "", "a" * 65, "al ice", "alice\n"])
def test_invalid_subject_is_rejected(hs256: AuthConfig, sub: str) -> None:
    token = _hs256_token(_claims(sub=sub))

    assert _rejected(f"Bearer {token}", hs256) == "The token's subject (sub) is not a valid user id."


def test_non_string_subject_is_rejected(hs256: AuthConfig) -> None:
    token = _hs256_token(_claims(sub=42))

    assert _rejected(f"Bearer {token}", hs256) == "The token's subject (sub) must be a string."


def test_missing_expiry_is_rejected(hs256: AuthConfig) -> None:
    token = _hs256_token(_claims(exp=None))

    assert _rejected(f"Bearer {token}", hs256) == "The token has no expiry time (exp)."


@pytest.mark.parametrize("config_name", ["hs256", "rs256"])
def test_tampered_payload_is_rejected(config_name: str, request: pytest.FixtureRequest) -> None:
    config: AuthConfig = request.getfixturevalue(config_name)
    header, payload, signature = mint_token(config, "alice").split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["scope"] = "admin"
    forged = f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"

    assert _rejected(f"Bearer {forged}", config) == "The token's signature is invalid."


def test_flipped_payload_byte_is_rejected(hs256: AuthConfig) -> None:
    header, payload, signature = mint_token(hs256, "alice").split(".")
    flipped = payload[:5] + ("A" if payload[5] != "A" else "B") + payload[6:]

    assert _rejected(f"Bearer {header}.{flipped}.{signature}", hs256) == "The token's signature is invalid."


def test_oversized_token_is_rejected(hs256: AuthConfig) -> None:
    token = _hs256_token(_claims(padding="x" * 5000))
    small = AuthConfig(algorithm="HS256", secret=SECRET, max_token_bytes=64)

    assert "too large" in _rejected(f"Bearer {token}", hs256)
    assert "limit is 64 bytes" in _rejected(f"Bearer {mint_token(small, 'alice')}", small)


@pytest.mark.parametrize(
    "header",
    [
        "Basic YWxpY2U6c2VjcmV0",
        "Token abc.def.ghi",
        "Bearer",
        "Bearer a.b.c extra",
        "Bearerabc.def.ghi",
        "Bearer abc.dé.ghi",
    ],
)
def test_malformed_header_is_rejected(hs256: AuthConfig, header: str) -> None:
    assert _rejected(header, hs256) == "Malformed Authorization header: expected 'Bearer <token>'."


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "...", "e30.e30", "eyJhbGciOiJIUzI1NiJ9.!!!.x"])
def test_garbage_token_is_rejected(hs256: AuthConfig, token: str) -> None:
    assert _rejected(f"Bearer {token}", hs256) == "The token is malformed."


def test_reasons_do_not_leak_exception_internals(hs256: AuthConfig) -> None:
    with pytest.raises(AuthError) as caught:
        authenticate("Bearer a.b.c", hs256)

    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


# Minting


def test_mint_rs256_without_private_key_fails(rsa_key: rsa.RSAPrivateKey) -> None:
    verifier = AuthConfig(algorithm="RS256", public_key=_public_pem(rsa_key))

    with pytest.raises(AuthConfigError, match="FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE"):
        mint_token(verifier, "alice")


def test_mint_rejects_an_invalid_user_id(hs256: AuthConfig) -> None:
    with pytest.raises(InvalidInputError, match="Invalid user id"):
        mint_token(hs256, "../x")


@pytest.mark.parametrize("ttl_seconds", [0, -1, 30 * 24 * 3600 + 1])
def test_mint_rejects_a_bad_ttl(hs256: AuthConfig, ttl_seconds: int) -> None:
    with pytest.raises(ValueError, match=f"lifetime must be 1 to 2592000 seconds, got {ttl_seconds}"):
        mint_token(hs256, "alice", ttl_seconds=ttl_seconds)


def test_mint_rejects_a_naive_now(hs256: AuthConfig) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        mint_token(hs256, "alice", now=datetime(2030, 1, 1))


# Configuration


def test_short_secret_is_a_config_error() -> None:
    with pytest.raises(
        AuthConfigError, match=r"FOLLOWGRAPH_JWT_SECRET must be at least 32 bytes long \(it is 31\)"
    ):
        AuthConfig(algorithm="HS256", secret=b"x" * 31)


def test_missing_secret_is_a_config_error() -> None:
    with pytest.raises(AuthConfigError, match="FOLLOWGRAPH_JWT_SECRET is missing"):
        AuthConfig(algorithm="HS256")


def test_public_key_as_hs256_secret_is_a_config_error(rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(AuthConfigError, match="FOLLOWGRAPH_JWT_SECRET looks like a key"):
        AuthConfig(algorithm="HS256", secret=_public_pem(rsa_key).encode())


def test_missing_public_key_is_a_config_error(rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(AuthConfigError, match="FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE is missing"):
        AuthConfig(algorithm="RS256", private_key=_private_pem(rsa_key))


def test_mixed_settings_are_a_config_error(rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(AuthConfigError, match="unset FOLLOWGRAPH_JWT_SECRET"):
        AuthConfig(algorithm="RS256", secret=SECRET, public_key=_public_pem(rsa_key))
    with pytest.raises(AuthConfigError, match="unset the RS256 key files"):
        AuthConfig(algorithm="HS256", secret=SECRET, public_key=_public_pem(rsa_key))


@pytest.mark.parametrize("pem", ["not a pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"])
def test_unreadable_public_key_is_a_config_error(pem: str) -> None:
    with pytest.raises(AuthConfigError, match="FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE does not hold a readable PEM"):
        AuthConfig(algorithm="RS256", public_key=pem)


def test_unreadable_private_key_is_a_config_error(rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(AuthConfigError, match="FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE does not hold a readable"):
        AuthConfig(algorithm="RS256", public_key=_public_pem(rsa_key), private_key="not a pem")


def test_mismatched_private_key_is_a_config_error(rsa_key: rsa.RSAPrivateKey) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    with pytest.raises(AuthConfigError, match="does not match FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE"):
        AuthConfig(algorithm="RS256", public_key=_public_pem(rsa_key), private_key=_private_pem(other))


def test_weak_or_non_rsa_public_key_is_a_config_error() -> None:
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    curve = ec.generate_private_key(ec.SECP256R1())

    with pytest.raises(AuthConfigError, match="1024-bit RSA key: use at least 2048 bits"):
        AuthConfig(algorithm="RS256", public_key=_public_pem(weak))
    with pytest.raises(AuthConfigError, match="not an RSA key"):
        AuthConfig(algorithm="RS256", public_key=_public_pem(curve))


def test_config_repr_hides_the_secret() -> None:
    assert SECRET.decode() not in repr(AuthConfig(algorithm="HS256", secret=SECRET))


# The generated secret
