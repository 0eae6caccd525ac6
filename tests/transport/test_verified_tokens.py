from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from followgraph.transport.auth import AuthConfig, AuthError, VerifiedTokens, mint_token

CONFIG = AuthConfig("HS256", secret=b"k" * 40)


async def test_a_valid_token_is_verified_once_and_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = VerifiedTokens(CONFIG)
    header = f"Bearer {mint_token(CONFIG, 'alice')}"
    first = await tokens.authenticate(header)
    assert first is not None and first.user_id == "alice"
    monkeypatch.setattr("followgraph.transport.auth.authenticate", lambda *_: pytest.fail("verified again"))
    assert await tokens.authenticate(header) is first


async def test_an_expired_token_is_not_served_from_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = VerifiedTokens(CONFIG)
    issued = datetime.now(UTC) - timedelta(seconds=3600 - 1)
    header = f"Bearer {mint_token(CONFIG, 'alice', ttl_seconds=3600, now=issued)}"
    assert await tokens.authenticate(header) is not None
    later = datetime.now(UTC).timestamp() + 60
    monkeypatch.setattr("followgraph.transport.auth.time.time", lambda: later)

    def verify_again(*_: object) -> None:
        raise AuthError("The token has expired.")

    monkeypatch.setattr("followgraph.transport.auth.authenticate", verify_again)
    with pytest.raises(AuthError, match="expired"):
        await tokens.authenticate(header)


async def test_bad_tokens_are_never_remembered() -> None:
    tokens = VerifiedTokens(CONFIG)
    for _ in range(2):
        with pytest.raises(AuthError):
            await tokens.authenticate("Bearer not.a.token")
    assert await tokens.authenticate(None) is None
    with pytest.raises(AuthError, match="Empty Authorization header"):
        await tokens.authenticate("")
    assert tokens._known == {}


async def test_memory_is_bounded() -> None:
    tokens = VerifiedTokens(CONFIG, size=3)
    for i in range(10):
        assert await tokens.authenticate(f"Bearer {mint_token(CONFIG, f'u{i}')}") is not None
    assert len(tokens._known) <= 3
