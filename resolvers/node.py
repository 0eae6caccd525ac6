"""Relay global ids: base64 of `Type:localId`, opaque to clients."""

from __future__ import annotations

import base64
import binascii

from followgraph.resolvers.errors import bad_user_input
from followgraph.store import InvalidInputError, validate_user_id

USER_TYPE = "User"


def to_global_id(type_name: str, local_id: str) -> str:
    return base64.b64encode(f"{type_name}:{local_id}".encode()).decode("ascii")


def from_global_id(global_id: str) -> tuple[str, str]:
    """(type name, local id) of a global id; BAD_USER_INPUT when it is not one of ours."""
    try:
        decoded = base64.b64decode(global_id, validate=True).decode("utf-8")
        type_name, local_id = decoded.split(":", 1)
        if type_name != USER_TYPE:
            raise ValueError(type_name)
        validate_user_id(local_id)
    except (binascii.Error, UnicodeDecodeError, ValueError, InvalidInputError):
        raise bad_user_input(
            f"Invalid global id {global_id[:80]!r}: pass an `id` this API returned."
        ) from None
    return type_name, local_id
