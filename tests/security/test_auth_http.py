"""The token attack matrix over HTTP: every forged, stale or misdirected token is a 401 and writes nothing.

tests/transport/test_auth.py proves the verifier on its own; here each token rides on a follow
mutation through the whole app, and a snapshot of Redis before and after proves that nothing ran.
"""

from __future__ import annotations

import base64
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jwt
import pytest
import redis.asyncio as aioredis
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from followgraph.schema import schema
from followgraph.schema.document import core_schema
from followgraph.server.settings import Settings
from followgraph.store import Keys
from followgraph.transport.auth import mint_token
from tests.conftest import TEST_SECRET
from tests.security.helpers import serve
from tests.served import Served
from tests.store.snapshot import dump

FOLLOW_BOB = 'mutation { follow(input: {userId: "bob"}) { changed } }'
ISSUER = "https://issuer.example"
AUDIENCE = "followgraph"
WRONG_SECRET = "another-secret-that-is-long-enough-for-hs256!"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    values: dict[str, Any] = {"sub": "alice", "iat": now, "nbf": now, "exp": now + 600, **overrides}
    return {name: value for name, value in values.items() if value is not None}


def hand_made(
    header: dict[str, Any], payload: dict[str, Any], hmac_key: bytes | None, digest: str = "sha256"
) -> str:
    """A JWT built without PyJWT, which refuses to sign some of these (alg none, a PEM as HMAC key)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    signature = b"" if hmac_key is None else hmac.new(hmac_key, signing_input.encode(), digest).digest()
    return f"{signing_input}.{b64(signature)}"


def hs256(payload: dict[str, Any], secret: str = TEST_SECRET) -> str:
    return jwt.encode(payload, secret, algorithm="HS256")


def with_sub(token: str, sub: str) -> str:
    """The token with its payload's subject replaced and the original signature kept."""
    header, payload, signature = token.split(".")
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    decoded["sub"] = sub
    return f"{header}.{b64(json.dumps(decoded).encode())}.{signature}"


@dataclass(frozen=True)
class RsaKeys:
    public_file: Path
    private_file: Path
    public_pem: bytes
    other_private: rsa.RSAPrivateKey


@pytest.fixture(scope="module")
def rsa_keys(tmp_path_factory: pytest.TempPathFactory) -> RsaKeys:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    directory = tmp_path_factory.mktemp("rsa")
    public_pem = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    (directory / "public.pem").write_bytes(public_pem)
    (directory / "private.pem").write_bytes(
        key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    )
    return RsaKeys(directory / "public.pem", directory / "private.pem", public_pem, other)


async def attempt(app: Served, redis: aioredis.Redis, token: str, reason: str) -> None:
    """A follow of bob with `token` is a 401 for `reason`, and Redis is left exactly as it was."""
    await app.register("alice", "bob", "carol")
    before = await dump(redis)

    response = await app.client.post(
        "/graphql", json={"query": FOLLOW_BOB}, headers={"authorization": f"Bearer {token}"}
    )

    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"errors": [{"message": reason, "extensions": {"code": "UNAUTHENTICATED"}}]}
    assert await dump(redis) == before


# HS256 (the test settings)

HS256_CASES: dict[str, tuple[Callable[[], str], str]] = {
    "alg none": (
        lambda: hand_made({"alg": "none", "typ": "JWT"}, claims(), None),
        "The token's algorithm (alg) is not accepted: expected HS256.",
    ),
    "alg NONE": (
        lambda: hand_made({"alg": "NONE", "typ": "JWT"}, claims(), None),
        "The token's algorithm (alg) is not accepted: expected HS256.",
    ),
    "alg none signed": (
        lambda: hand_made({"alg": "none"}, claims(), TEST_SECRET.encode()),
        "The token's algorithm (alg) is not accepted: expected HS256.",
    ),
    "HS512 with the right secret": (
        lambda: hand_made({"alg": "HS512", "typ": "JWT"}, claims(), TEST_SECRET.encode(), "sha512"),
        "The token's algorithm (alg) is not accepted: expected HS256.",
    ),
    "wrong key": (lambda: hs256(claims(), WRONG_SECRET), "The token's signature is invalid."),
    "no signature": (
        lambda: hs256(claims()).rsplit(".", 1)[0] + ".",
        "The token's signature is invalid.",
    ),
    "expired": (
        lambda: hs256(claims(iat=int(time.time()) - 7200, nbf=None, exp=int(time.time()) - 3600)),
        "The token has expired.",
    ),
    "not yet valid": (
        lambda: hs256(claims(nbf=int(time.time()) + 3600, exp=int(time.time()) + 7200)),
        "The token is not valid yet (nbf or iat is in the future).",
    ),
    "missing sub": (lambda: hs256(claims(sub=None)), "The token has no subject (sub)."),
    "missing exp": (lambda: hs256(claims(exp=None)), "The token has no expiry time (exp)."),
    "sub not a user id": (
        lambda: hs256(claims(sub="../bob")),
        "The token's subject (sub) is not a valid user id.",
    ),
    "tampered sub": (
        lambda: with_sub(hs256(claims()), "carol"),
        "The token's signature is invalid.",
    ),
    "tampered scope": (
        lambda: hand_made({"alg": "HS256", "typ": "JWT"}, claims(scope="admin"), WRONG_SECRET.encode()),
        "The token's signature is invalid.",
    ),
    "oversized": (
        lambda: hs256(claims(padding="x" * 5000)),
        "The token is too large: the limit is 4096 bytes.",
    ),
    "audience not expected": (
        lambda: hs256(claims(aud="another-service")),
        "The token's audience (aud) is not accepted.",
    ),
    "exp a string of digits": (
        lambda: hs256(claims(exp=str(int(time.time()) + 600))),
        "The token's expiry time (exp) must be a number: seconds since the epoch.",
    ),
    "exp years ahead": (
        lambda: hs256(claims(exp=int(time.time()) + 10 * 365 * 86400)),
        "The token's expiry time (exp) is too far ahead: tokens may live at most 2592000 seconds.",
    ),
}


@pytest.mark.parametrize("case", list(HS256_CASES))
async def test_a_bad_hs256_token_is_401_and_writes_nothing(
    served: Served, real_redis: aioredis.Redis, case: str
) -> None:
    make, reason = HS256_CASES[case]

    await attempt(served, real_redis, make(), reason)


@pytest.mark.parametrize("header", ["", " "])
async def test_an_empty_authorization_header_is_401_and_writes_nothing(
    served: Served, real_redis: aioredis.Redis, header: str
) -> None:
    await served.register("alice", "bob")
    before = await dump(real_redis)

    response = await served.client.post(
        "/graphql", json={"query": FOLLOW_BOB}, headers={"authorization": header}
    )

    assert response.status_code == 401, response.text
    assert "Empty Authorization header" in response.json()["errors"][0]["message"]
    assert await dump(real_redis) == before


# Issuer and audience, when configured


@pytest.fixture
async def strict(real_redis: aioredis.Redis, settings: Settings) -> AsyncIterator[Served]:
    async with serve(replace(settings, jwt_issuer=ISSUER, jwt_audience=AUDIENCE), real_redis) as app:
        yield app


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"iss": "https://evil.example", "aud": AUDIENCE}, "The token's issuer (iss) is not accepted."),
        ({"iss": ISSUER, "aud": "another-service"}, "The token's audience (aud) is not accepted."),
        ({"iss": ISSUER, "aud": [f"{AUDIENCE}-x"]}, "The token's audience (aud) is not accepted."),
        ({"aud": AUDIENCE}, "The token has no issuer (iss)."),
        ({"iss": ISSUER}, "The token has no audience (aud)."),
    ],
    ids=["wrong iss", "wrong aud", "wrong aud list", "no iss", "no aud"],
)
async def test_a_token_for_another_issuer_or_audience_is_401(
    strict: Served, real_redis: aioredis.Redis, overrides: dict[str, Any], reason: str
) -> None:
    await attempt(strict, real_redis, hs256(claims(**overrides)), reason)


async def test_a_token_with_the_configured_issuer_and_audience_works(
    strict: Served, real_redis: aioredis.Redis
) -> None:
    await strict.register("alice", "bob")

    response = await strict.post(FOLLOW_BOB, as_user="alice", accept=None)

    assert response.json() == {"data": {"follow": {"changed": True}}}


# RS256


@pytest.fixture
async def rs256(real_redis: aioredis.Redis, settings: Settings, rsa_keys: RsaKeys) -> AsyncIterator[Served]:
    configured = replace(
        settings,
        jwt_secret=None,
        jwt_public_key_file=rsa_keys.public_file,
        jwt_private_key_file=rsa_keys.private_file,
    )
    async with serve(configured, real_redis) as app:
        yield app


def rs256_cases(keys: RsaKeys) -> dict[str, tuple[str, str]]:
    expected = "The token's algorithm (alg) is not accepted: expected RS256."
    return {
        "HS256 with the public key as secret": (
            hand_made({"alg": "HS256", "typ": "JWT"}, claims(), keys.public_pem),
            expected,
        ),
        "HS256 with the public key, no newline": (
            hand_made({"alg": "HS256", "typ": "JWT"}, claims(), keys.public_pem.strip()),
            expected,
        ),
        "alg none": (hand_made({"alg": "none"}, claims(), None), expected),
        "HS256 with the test secret": (hs256(claims()), expected),
        "RS256 by another key": (
            jwt.encode(claims(), keys.other_private, algorithm="RS256"),
            "The token's signature is invalid.",
        ),
        "RS256 tampered sub": (
            with_sub(jwt.encode(claims(), keys.other_private, algorithm="RS256"), "carol"),
            "The token's signature is invalid.",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "HS256 with the public key as secret",
        "HS256 with the public key, no newline",
        "alg none",
        "HS256 with the test secret",
        "RS256 by another key",
        "RS256 tampered sub",
    ],
)
async def test_a_bad_token_is_401_when_rs256_is_configured(
    rs256: Served, real_redis: aioredis.Redis, rsa_keys: RsaKeys, case: str
) -> None:
    token, reason = rs256_cases(rsa_keys)[case]

    await attempt(rs256, real_redis, token, reason)


async def test_a_tampered_rs256_token_of_the_right_key_is_401(
    rs256: Served, real_redis: aioredis.Redis
) -> None:
    genuine = mint_token(rs256.settings.auth_config(), "alice")

    await attempt(rs256, real_redis, with_sub(genuine, "carol"), "The token's signature is invalid.")


async def test_a_good_rs256_token_follows(rs256: Served, real_redis: aioredis.Redis) -> None:
    await rs256.register("alice", "bob")

    response = await rs256.post(FOLLOW_BOB, as_user="alice", accept=None)

    assert response.json() == {"data": {"follow": {"changed": True}}}
    assert await real_redis.zrange(Keys().following("alice"), 0, -1) == ["bob"]


# A user's token acts as that user only


async def test_a_token_for_alice_never_acts_as_bob(served: Served, real_redis: aioredis.Redis) -> None:
    await served.register("alice", "bob", "carol")
    keys = Keys()
    headers = {
        **served.auth("alice"),
        "x-user-id": "bob",
        "x-forwarded-user": "bob",
        "x-remote-user": "bob",
    }
    body = {
        "query": 'mutation { follow(input: {userId: "carol"}) { changed viewer { userId } } }',
        "extensions": {"viewer": "bob", "userId": "bob"},
    }

    response = await served.client.post("/graphql", json=body, headers=headers)
    viewer = await served.client.post("/graphql", json={"query": "{ viewer { userId } }"}, headers=headers)

    assert response.json() == {"data": {"follow": {"changed": True, "viewer": {"userId": "alice"}}}}
    assert viewer.json() == {"data": {"viewer": {"userId": "alice"}}}
    assert await real_redis.zrange(keys.following("alice"), 0, -1) == ["carol"]
    assert await real_redis.zrange(keys.fans("carol"), 0, -1) == ["alice"]
    assert await real_redis.zrange(keys.following("bob"), 0, -1) == []


async def test_alice_cannot_remove_someone_elses_fan_or_mark_their_fans_seen(
    served: Served, real_redis: aioredis.Redis
) -> None:
    await served.register("alice", "bob", "carol")
    await served.store.follow(follower="carol", followee="bob")
    before = await dump(real_redis)

    removed = await served.post(
        'mutation { removeFan(input: {userId: "carol"}) { changed errors { code } } }',
        as_user="alice",
        accept=None,
    )
    unfollowed = await served.post(
        'mutation { unfollow(input: {userId: "bob"}) { changed errors { code } } }',
        as_user="alice",
        accept=None,
    )
    upsert = await served.post(
        'mutation { upsertUser(input: {userId: "bob", name: "Mallory"}) { user { name } } }',
        as_user="alice",
        accept=None,
    )

    # Each acts on alice's own lists, where carol and bob are not: nothing changes.
    assert removed.json()["data"]["removeFan"] == {"changed": False, "errors": []}
    assert unfollowed.json()["data"]["unfollow"] == {"changed": False, "errors": []}
    assert upsert.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert await dump(real_redis) == before


def _anonymous_calls() -> list[tuple[str, str]]:
    """(name, document) of a call of every mutation of the schema, with inputs that name bob."""
    mutation = core_schema(schema).mutation_type
    assert mutation is not None
    calls = []
    for name, field in mutation.fields.items():
        argument = "" if not field.args else '(input: {userId: "bob"})'
        if name == "updateSettings":
            argument = "(input: {locked: true})"
        elif name == "upsertUser":
            argument = '(input: {userId: "bob", name: "Mallory"})'
        elif name == "followMany":
            argument = '(input: {userIds: ["bob"]})'
        calls.append((name, f"mutation {{ {name}{argument} {{ __typename }} }}"))
    return calls


@pytest.mark.parametrize(("name", "document"), _anonymous_calls(), ids=[n for n, _ in _anonymous_calls()])
async def test_every_mutation_needs_a_token_and_writes_nothing_without_one(
    served: Served, real_redis: aioredis.Redis, name: str, document: str
) -> None:
    await served.register("alice", "bob")
    await served.store.follow(follower="bob", followee="alice")
    before = await dump(real_redis)
    response = await served.post(document, accept=None)
    body = response.json()
    assert body["data"] is None or body["data"].get(name) is None, body
    assert [e["extensions"]["code"] for e in body["errors"]] == ["UNAUTHENTICATED"], body
    assert await dump(real_redis) == before
