"""Tokens of an identity provider: an OpenID provider stand-in served over real HTTP (discovery and
a JWKS with RS256, ES256 and EdDSA keys, rotated while the server runs, then gone), real signed
tokens, and the API taking them."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from followgraph.server.settings import ConfigError, Settings
from followgraph.store.redis.lua import Client
from followgraph.transport import jwks as jwks_module
from followgraph.transport.auth import AuthConfig, AuthError, authenticate_async
from followgraph.transport.jwks import JwksKeys, lifetime
from tests.served import serve

AUDIENCE = "followgraph-api"


@dataclass
class Key:
    kid: str
    algorithm: str
    private: Any

    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        codec: Any = {"RS256": RSAAlgorithm, "ES256": ECAlgorithm, "EdDSA": OKPAlgorithm}[self.algorithm]
        data: dict[str, Any] = json.loads(codec.to_jwk(public))
        return {**data, "kid": self.kid, "alg": self.algorithm, "use": "sig"}


def new_key(kid: str, algorithm: str = "RS256") -> Key:
    if algorithm == "RS256":
        return Key(kid, algorithm, rsa.generate_private_key(public_exponent=65537, key_size=2048))
    if algorithm == "ES256":
        return Key(kid, algorithm, ec.generate_private_key(ec.SECP256R1()))
    return Key(kid, algorithm, ed25519.Ed25519PrivateKey.generate())


@dataclass
class Provider:
    """An OpenID provider's public side: discovery and its key set, served on 127.0.0.1."""

    keys: list[Key] = field(default_factory=list)
    cache_control: str | None = "max-age=600"
    fetches: int = 0
    server: ThreadingHTTPServer | None = None

    @property
    def issuer(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def token(self, key: Key, *, sub: str = "alice", aud: str = AUDIENCE, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.issuer, "sub": sub, "aud": aud, "iat": now, "exp": now + 600, **claims}
        return jwt.encode(body, key.private, algorithm=key.algorithm, headers={"kid": key.kid})

    def stop(self) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider() -> Iterator[Provider]:
    state = Provider(keys=[new_key("k1")])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body: dict[str, Any]
            if self.path == "/.well-known/openid-configuration":
                body = {"issuer": state.issuer, "jwks_uri": state.issuer + "/jwks"}
                headers: dict[str, str] = {}
            elif self.path == "/jwks":
                state.fetches += 1
                body = {"keys": [key.jwk() for key in state.keys]}
                headers = {"cache-control": state.cache_control} if state.cache_control else {}
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    state.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=state.server.serve_forever, daemon=True)
    thread.start()
    yield state
    if state.server.socket.fileno() != -1:
        state.stop()


def config_for(provider: Provider, **options: Any) -> AuthConfig:
    keys = JwksKeys(issuer=provider.issuer, min_refetch=options.pop("min_refetch", 10.0), timeout=1.0)
    return AuthConfig("JWKS", jwks=keys, issuer=provider.issuer, audience=AUDIENCE, **options)


async def principal_of(token: str, config: AuthConfig) -> Any:
    return await authenticate_async(f"Bearer {token}", config)


@pytest.mark.parametrize("algorithm", ["RS256", "ES256", "EdDSA"])
async def test_a_token_of_the_provider_is_verified_with_its_discovered_key(
    provider: Provider, algorithm: str
) -> None:
    key = new_key("k-" + algorithm, algorithm)
    provider.keys.append(key)
    principal = await principal_of(provider.token(key), config_for(provider))
    assert principal.user_id == "alice"


async def test_a_rotation_needs_no_restart(provider: Provider) -> None:
    config = config_for(provider, min_refetch=0.0)
    old = provider.keys[0]
    assert (await principal_of(provider.token(old), config)).user_id == "alice"
    new = new_key("k2")
    provider.keys.append(new)  # the provider publishes its next key
    assert (await principal_of(provider.token(new, sub="bob"), config)).user_id == "bob"
    assert (await principal_of(provider.token(old), config)).user_id == "alice"  # still valid
    assert provider.fetches == 2


async def test_unknown_key_ids_fetch_the_keys_at_most_once_a_while(provider: Provider) -> None:
    config = config_for(provider, min_refetch=60.0)
    await principal_of(provider.token(provider.keys[0]), config)
    stranger = new_key("made-up")
    for _ in range(5):
        with pytest.raises(AuthError, match="not one of the identity provider's signing keys"):
            await principal_of(provider.token(stranger), config)
    assert provider.fetches == 1  # the first fetch was moments ago: none since


async def test_a_provider_gone_leaves_the_cached_keys_working(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = config_for(provider, min_refetch=0.0)
    token = provider.token(provider.keys[0])
    await principal_of(token, config)
    provider.stop()
    later = time.monotonic() + 3600  # past the keys' lifetime
    monkeypatch.setattr("followgraph.transport.jwks.time.monotonic", lambda: later)
    assert (await principal_of(token, config)).user_id == "alice"
    assert config.jwks is not None and config.jwks.state()["status"] == "stale"
    started = time.perf_counter()
    with pytest.raises(AuthError, match="signing keys"):
        await principal_of(provider.token(new_key("k9")), config)
    assert time.perf_counter() - started < 3  # the fetch timed out, the answer came


async def test_issuer_audience_and_claims_are_checked(provider: Provider) -> None:
    config = config_for(provider, subject_claim="uid", scope_claim="roles")
    key = provider.keys[0]
    with pytest.raises(AuthError, match="audience"):
        await principal_of(provider.token(key, aud="another-app", uid="alice"), config)
    with pytest.raises(AuthError, match="uid claim"):
        await principal_of(provider.token(key), config)
    principal = await principal_of(provider.token(key, uid="carol", roles=["admin"]), config)
    assert principal.user_id == "carol" and "admin" in principal.scopes
    foreign = jwt.encode(
        {"iss": "https://elsewhere", "uid": "a", "aud": AUDIENCE, "exp": int(time.time()) + 60},
        key.private,
        algorithm="RS256",
        headers={"kid": key.kid},
    )
    with pytest.raises(AuthError, match="issuer"):
        await principal_of(foreign, config)


async def test_a_token_cannot_choose_its_algorithm(provider: Provider) -> None:
    key = provider.keys[0]
    # HS256 with the provider's public key as the secret: the classic confusion.
    public = key.jwk()
    forged = jwt.encode(
        {"sub": "mallory", "aud": AUDIENCE, "iss": provider.issuer, "exp": int(time.time()) + 60},
        json.dumps(public).encode() * 2,
        algorithm="HS256",
        headers={"kid": key.kid},
    )
    with pytest.raises(AuthError, match="algorithm"):
        await principal_of(forged, config_for(provider))


def test_lifetime_follows_cache_control() -> None:
    assert lifetime("public, max-age=3600") == 3600
    assert lifetime("max-age=5") == jwks_module.MIN_LIFETIME
    assert lifetime("max-age=99999999") == jwks_module.MAX_LIFETIME
    assert lifetime("no-store") == jwks_module.MIN_LIFETIME
    assert lifetime(None) == jwks_module.DEFAULT_LIFETIME


def test_settings_refuse_a_provider_without_audience_or_beside_a_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="FOLLOWGRAPH_JWT_AUDIENCE is required"):
        Settings(data_dir=tmp_path, oidc_issuer="https://idp.example").validate()
    with pytest.raises(ConfigError, match="unset FOLLOWGRAPH_JWT_SECRET"):
        Settings(
            data_dir=tmp_path, oidc_issuer="https://idp.example", jwt_secret="s" * 40, jwt_audience="a"
        ).validate()
    with pytest.raises(ConfigError, match="https://"):
        Settings(data_dir=tmp_path, jwks_url="http://idp.example/jwks", jwt_audience="a").validate()


async def test_the_api_takes_the_providers_tokens(
    provider: Provider, served_redis: Client, settings: Settings
) -> None:
    from dataclasses import replace

    configured = replace(settings, jwt_secret=None, oidc_issuer=provider.issuer, jwt_audience=AUDIENCE)
    async with serve(configured, served_redis) as api:
        await api.store.upsert_user("alice", name="Alice")
        headers = {"authorization": f"Bearer {provider.token(provider.keys[0])}"}
        answer = await api.client.post("/graphql", json={"query": "{ viewer { userId } }"}, headers=headers)
        assert answer.json() == {"data": {"viewer": {"userId": "alice"}}}
        ready = (await api.client.get("/readyz")).json()
        assert ready["keys"]["status"] == "ok"
        await asyncio.sleep(0)
