"""The generated secret of a data directory: private, reused, and refused when unsafe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from followgraph.server.secret import load_or_create_secret
from followgraph.transport.auth import AuthConfigError, authenticate, mint_token


def test_load_or_create_secret_creates_a_private_file_and_reuses_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"

    first = load_or_create_secret(data_dir)
    secret_file = data_dir / "jwt-secret"
    second = load_or_create_secret(data_dir)

    assert secret_file.stat().st_mode & 0o777 == 0o600
    assert os.listdir(data_dir) == ["jwt-secret"]
    assert first.algorithm == "HS256"
    assert first.secret is not None
    assert len(first.secret) >= 64
    assert second.secret == first.secret == secret_file.read_bytes().strip()
    assert authenticate(f"Bearer {mint_token(first, 'alice')}", second) is not None


def test_load_or_create_secret_refuses_a_file_others_can_read(tmp_path: Path) -> None:
    secret_file = tmp_path / "jwt-secret"
    secret_file.write_bytes(os.urandom(32).hex().encode())
    secret_file.chmod(0o644)

    with pytest.raises(AuthConfigError, match="readable by other users"):
        load_or_create_secret(tmp_path)


def test_load_or_create_secret_refuses_a_short_secret(tmp_path: Path) -> None:
    secret_file = tmp_path / "jwt-secret"
    secret_file.write_bytes(b"short\n")
    secret_file.chmod(0o600)

    with pytest.raises(AuthConfigError, match="shorter than 32 bytes"):
        load_or_create_secret(tmp_path)
