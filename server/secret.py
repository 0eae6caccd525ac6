"""The generated HS256 secret of a data directory: the zero-configuration default of the tokens.

It lives in the data directory, which the process owns (server/private.py), and is created once,
0600, published whole (a hard link) so that two processes starting at once agree on one secret.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from followgraph.server.private import private_directory
from followgraph.transport.auth import MIN_SECRET_BYTES, AuthConfig, AuthConfigError

SECRET_FILE_NAME = "jwt-secret"


def load_or_create_secret(data_dir: Path) -> AuthConfig:
    """An HS256 config with the secret in `data_dir/jwt-secret`, generated on first use."""
    path = data_dir / SECRET_FILE_NAME
    try:
        secret = path.read_bytes().strip()
    except FileNotFoundError:
        secret = _create_secret_file(path)
    else:
        if path.stat().st_mode & 0o077:
            raise AuthConfigError(f"{path} is readable by other users: run `chmod 600 {path}`.")
    if len(secret) < MIN_SECRET_BYTES:
        raise AuthConfigError(
            f"{path} holds a secret shorter than {MIN_SECRET_BYTES} bytes: "
            "delete it to have a new one generated."
        )
    return AuthConfig(algorithm="HS256", secret=secret)


def _create_secret_file(path: Path) -> bytes:
    private_directory(path.parent)
    secret = secrets.token_hex(64).encode()
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(secret + b"\n")
            file.flush()
            os.fsync(file.fileno())
        # A hard link publishes the complete file without replacing one another process made first.
        os.link(temporary, path)
    except FileExistsError:
        return path.read_bytes().strip()
    finally:
        temporary.unlink(missing_ok=True)
    return secret
