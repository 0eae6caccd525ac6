"""How a setting's text becomes its value: the variable's name, the parsers by annotation, and the
error that names what was given (server/settings.py builds the settings with them).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union, get_args, get_origin

ENV_PREFIX = "FOLLOWGRAPH_"


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


def env_name(name: str) -> str:
    """The variable that sets the field `name`: FOLLOWGRAPH_NAME."""
    return ENV_PREFIX + name.upper()


# The settings that the command line's options also set (`followgraph serve --port ...`): their
# errors name both, since either may be what was given.
OPTIONS = (
    "port",
    "host",
    "workers",
    "metrics_port",
    "appendfsync",
    "log_level",
    "redis_url",
    "database_url",
    "data_dir",
    "federation",
)


def named(name: str) -> str:
    """How an error names the setting `name`: its variable, and its option when it has one."""
    option = f"--{name.replace('_', '-')} or " if name in OPTIONS else ""
    return option + env_name(name)


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"{env_name(name)}={raw!r} is not a boolean: use 1/0, true/false, yes/no or on/off.")


def _int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{env_name(name)}={raw!r} is not a whole number.") from None


def _float(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{env_name(name)}={raw!r} is not a number.") from None


def _tuple(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


_PARSERS: dict[type, Callable[[str, str], Any]] = {
    str: lambda _name, raw: raw,
    int: _int,
    float: _float,
    bool: _bool,
    Path: lambda _name, raw: Path(raw),
    tuple: _tuple,
}


def parser(annotation: Any) -> Callable[[str, str], Any]:
    """The function that reads a field annotated `annotation` (X | None reads as X)."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    return _PARSERS[get_origin(annotation) or annotation]


def read_file(path: Path, name: str) -> str:
    """The text of the file that setting `name` names; its error says which setting and why."""
    try:
        return path.read_text()
    except OSError as exc:
        raise ConfigError(f"{env_name(name)}={str(path)!r} cannot be read: {exc.strerror}.") from None
