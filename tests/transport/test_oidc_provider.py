"""Tokens of a real OpenID provider: oidc-provider (npm) started by the test, discovered by its
issuer URL, issuing JWT access tokens by the client credentials grant; then its keys rotated by a
restart with a new key first, and then the provider gone, while FollowGraph runs on.

Needs Node.js and npm (the test installs tests/interop/oidc's locked packages the first time);
without Node.js it is skipped unless FOLLOWGRAPH_REQUIRE_WEB=1 (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from followgraph.server.settings import Settings
from followgraph.store.redis.lua import Client
from followgraph.transport.auth import AuthConfig, AuthError, authenticate_async
from followgraph.transport.jwks import JwksKeys
from tests.served import serve
from tests.server.processes import free_port

PROJECT = Path(__file__).resolve().parents[1] / "interop" / "oidc"
AUDIENCE = "followgraph-api"
CLIENT = ("fg-client", "fg-client-secret-that-is-long-enough")


def _node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("FOLLOWGRAPH_REQUIRE_WEB") == "1":
            pytest.fail("Node.js and npm are needed for the OpenID provider test")
        pytest.skip("Node.js and npm are needed for the OpenID provider test")
    if not (PROJECT / "node_modules" / "oidc-provider").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PROJECT, check=True, timeout=300)
    return node


def private_jwk(kid: str, algorithm: str) -> dict[str, Any]:
    if algorithm == "RS256":
        key: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        data = json.loads(RSAAlgorithm.to_jwk(key))
    else:
        key = ec.generate_private_key(ec.SECP256R1())
        data = json.loads(ECAlgorithm.to_jwk(key))
    return {**data, "kid": kid, "alg": algorithm, "use": "sig"}


@dataclass
class OpenIdProvider:
    node: str
    port: int
    directory: Path
    process: subprocess.Popen[str] | None = None
    keys: list[dict[str, Any]] = field(default_factory=list)

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, keys: list[dict[str, Any]]) -> None:
        """Start (or restart) the provider publishing `keys`, the first one signing."""
        self.stop()
        self.keys = keys
        keys_file = self.directory / "keys.json"
        keys_file.write_text(json.dumps({"keys": keys}))
        self.process = subprocess.Popen(
            [self.node, "provider.mjs", str(self.port), str(keys_file)],
            cwd=PROJECT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("ready"), f"the provider did not start: {line!r}"

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None

    def token(self) -> str:
        """An access token from the client credentials grant."""
        response = httpx.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": "admin"},
            auth=CLIENT,
            timeout=10,
        )
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[OpenIdProvider]:
    running = OpenIdProvider(_node(), free_port(), tmp_path)
    running.start([private_jwk("first", "RS256")])
    yield running
    running.stop()


async def test_a_token_of_a_real_provider_rotated_and_then_gone(provider: OpenIdProvider) -> None:
    keys = JwksKeys(issuer=provider.issuer, min_refetch=0.0, timeout=1.0)
    config = AuthConfig("JWKS", jwks=keys, issuer=provider.issuer, audience=AUDIENCE)
    old = provider.token()
    principal = await authenticate_async(f"Bearer {old}", config)
    assert principal is not None and principal.user_id == "fg-client" and "admin" in principal.scopes

    # A rotation: the provider signs with a new key (ES256) and still publishes the old one.
    provider.start([private_jwk("second", "ES256"), provider.keys[0]])
    new = provider.token()
    assert (await authenticate_async(f"Bearer {new}", config)) is not None  # fetched, no restart
    assert (await authenticate_async(f"Bearer {old}", config)) is not None  # valid until it expires

    provider.stop()
    assert (await authenticate_async(f"Bearer {new}", config)) is not None  # the kept keys
    provider.keys = [private_jwk("never-published", "RS256")]
    with pytest.raises(AuthError, match="signing keys"):
        await authenticate_async(f"Bearer {_signed_by(provider.keys[0], provider.issuer)}", config)


def _signed_by(jwk: dict[str, Any], issuer: str) -> str:
    key = cast("RSAPrivateKey", RSAAlgorithm.from_jwk(json.dumps(jwk)))
    claims = {"iss": issuer, "sub": "x", "aud": AUDIENCE, "exp": int(time.time()) + 60}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": jwk["kid"]})


async def test_the_api_takes_a_real_providers_token(
    provider: OpenIdProvider, served_redis: Client, settings: Settings
) -> None:
    configured = replace(settings, jwt_secret=None, oidc_issuer=provider.issuer, jwt_audience=AUDIENCE)
    async with serve(configured, served_redis) as api:
        await api.store.upsert_user("fg-client", name="The Client")
        headers = {"authorization": f"Bearer {provider.token()}"}
        answer = await api.client.post("/graphql", json={"query": "{ viewer { userId } }"}, headers=headers)
        assert answer.json() == {"data": {"viewer": {"userId": "fg-client"}}}
        # The admin scope came from the provider's token.
        mutation = 'mutation { upsertUser(input: {userId: "new", name: "New"}) { errors { code } } }'
        upserted = await api.client.post("/graphql", json={"query": mutation}, headers=headers)
        assert upserted.json() == {"data": {"upsertUser": {"errors": []}}}
