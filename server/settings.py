"""Configuration: one frozen dataclass, built from the environment in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from server.auth import AuthConfig, AuthConfigError

ENV_PREFIX = "FOLLOWGRAPH_"
LOG_LEVELS = ("debug", "info", "warning", "error")
APPENDFSYNC = ("everysec", "always", "no")


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"{ENV_PREFIX}{name}={raw!r} is not a boolean: use 1/0, true/false, yes/no or on/off.")


def _int(name: str, raw: str, *, low: int, high: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{ENV_PREFIX}{name}={raw!r} is not a whole number.") from None
    if not low <= value <= high:
        raise ConfigError(f"{ENV_PREFIX}{name}={value} is out of range: use {low} to {high}.")
    return value


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    redis_url: str | None = None
    data_dir: Path = Path(".followgraph")
    key_prefix: str = "fg:"
    production: bool = False
    log_level: str = "info"
    graphiql: bool = True
    introspection: bool = True
    jwt_secret: str | None = field(default=None, repr=False)
    jwt_public_key_file: Path | None = None
    jwt_private_key_file: Path | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    max_body_bytes: int = 1_000_000
    appendfsync: str = "everysec"
    workers: int = 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from FOLLOWGRAPH_* variables; keyword overrides (CLI options) win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}

        def get(name: str) -> str | None:
            raw = env.get(ENV_PREFIX + name)
            return raw if raw not in (None, "") else None

        if (raw := get("HOST")) is not None:
            values["host"] = raw
        if (raw := get("PORT")) is not None:
            values["port"] = _int("PORT", raw, low=0, high=65535)
        if (raw := get("REDIS_URL")) is not None:
            values["redis_url"] = raw
        if (raw := get("DATA_DIR")) is not None:
            values["data_dir"] = Path(raw)
        if (raw := get("KEY_PREFIX")) is not None:
            values["key_prefix"] = raw
        if (raw := get("PRODUCTION")) is not None:
            values["production"] = _bool("PRODUCTION", raw)
        if (raw := get("LOG_LEVEL")) is not None:
            values["log_level"] = raw.lower()
        for name in ("GRAPHIQL", "INTROSPECTION"):
            if (raw := get(name)) is not None:
                values[name.lower()] = _bool(name, raw)
        if (raw := get("JWT_SECRET")) is not None:
            values["jwt_secret"] = raw
        for name in ("JWT_PUBLIC_KEY_FILE", "JWT_PRIVATE_KEY_FILE"):
            if (raw := get(name)) is not None:
                values[name.lower()] = Path(raw)
        for name in ("JWT_ISSUER", "JWT_AUDIENCE"):
            if (raw := get(name)) is not None:
                values[name.lower()] = raw
        if (raw := get("APPENDFSYNC")) is not None:
            values["appendfsync"] = raw.lower()
        if (raw := get("WORKERS")) is not None:
            values["workers"] = _int("WORKERS", raw, low=1, high=64)
        if (raw := get("MAX_BODY_BYTES")) is not None:
            values["max_body_bytes"] = _int("MAX_BODY_BYTES", raw, low=1024, high=100_000_000)
        values.update({k: v for k, v in overrides.items() if v is not None})
        production = bool(values.get("production", False))
        # Production turns the explorer and introspection off unless asked for explicitly.
        values.setdefault("graphiql", not production)
        values.setdefault("introspection", not production)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        if self.appendfsync not in APPENDFSYNC:
            raise ConfigError(
                f"{ENV_PREFIX}APPENDFSYNC={self.appendfsync!r} is not one of {', '.join(APPENDFSYNC)}."
            )
        if not 1 <= self.workers <= 64:
            raise ConfigError(f"{ENV_PREFIX}WORKERS={self.workers} is out of range: use 1 to 64.")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"{ENV_PREFIX}PORT={self.port} is out of range: use 0 to 65535.")
        if self.log_level not in LOG_LEVELS:
            raise ConfigError(
                f"{ENV_PREFIX}LOG_LEVEL={self.log_level!r} is not one of {', '.join(LOG_LEVELS)}."
            )
        if not self.key_prefix or any(c in self.key_prefix for c in "{}* "):
            raise ConfigError(
                f"{ENV_PREFIX}KEY_PREFIX={self.key_prefix!r} must be non-empty, without {{, }}, * or spaces."
            )
        if self.jwt_secret is not None and self.jwt_public_key_file is not None:
            raise ConfigError(
                f"Set either {ENV_PREFIX}JWT_SECRET (HS256) or {ENV_PREFIX}JWT_PUBLIC_KEY_FILE (RS256), "
                "not both."
            )

    def to_env(self) -> dict[str, str]:
        """FOLLOWGRAPH_* variables that make from_env() give these settings (for worker processes)."""
        env: dict[str, str] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if value is None:
                continue
            env[ENV_PREFIX + name.upper()] = (
                ("1" if value else "0") if isinstance(value, bool) else str(value)
            )
        return env

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def auth_config(self) -> AuthConfig:
        """The JWT configuration: RS256 key files, an HS256 secret, or a secret kept in the data directory."""
        common: dict[str, Any] = {"issuer": self.jwt_issuer, "audience": self.jwt_audience}
        try:
            if self.jwt_public_key_file is not None:
                public = _read(self.jwt_public_key_file, "JWT_PUBLIC_KEY_FILE")
                private = None
                if self.jwt_private_key_file is not None:
                    private = _read(self.jwt_private_key_file, "JWT_PRIVATE_KEY_FILE")
                return AuthConfig("RS256", public_key=public, private_key=private, **common)
            if self.jwt_secret is not None:
                return AuthConfig("HS256", secret=self.jwt_secret.encode(), **common)
            generated = AuthConfig.load_or_create_secret(self.data_dir)
            return replace(generated, **common) if any(common.values()) else generated
        except AuthConfigError as exc:
            raise ConfigError(str(exc)) from None


def _read(path: Path, name: str) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise ConfigError(f"{ENV_PREFIX}{name}={str(path)!r} cannot be read: {exc.strerror}.") from None
