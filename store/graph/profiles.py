"""Validation of profile fields before they reach Redis."""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

from followgraph.store.graph.errors import InvalidInputError

MAX_NAME_LENGTH = 64
MAX_URL_LENGTH = 2048


def validate_name(name: str) -> str:
    """A display name: trimmed, 1 to 64 characters, no control characters."""
    trimmed = name.strip()
    if not trimmed:
        raise InvalidInputError("The name must not be blank.", field="name")
    if len(trimmed) > MAX_NAME_LENGTH:
        raise InvalidInputError(f"The name is longer than {MAX_NAME_LENGTH} characters.", field="name")
    if any(unicodedata.category(ch) in {"Cc", "Cf"} for ch in trimmed):
        raise InvalidInputError("The name must not contain control characters.", field="name")
    return trimmed


def validate_avatar_url(url: str) -> str:
    """An absolute http(s) URL with a host, at most 2048 characters."""
    if len(url) > MAX_URL_LENGTH:
        raise InvalidInputError(
            f"The avatar URL is longer than {MAX_URL_LENGTH} characters.", field="avatarUrl"
        )
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in {"http", "https"}
        or not parts.hostname
        or any(c.isspace() for c in url)
    ):
        raise InvalidInputError(
            "The avatar URL must be an absolute http:// or https:// URL.", field="avatarUrl"
        )
    return url
