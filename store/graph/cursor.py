"""Keyset cursors: the (time, member) position of an entry in a newest-first list.

A cursor names the list it was made for and carries a short digest, so a cursor from another
list, or one edited by hand, is refused rather than silently read from a wrong position. The
digest is a checksum, not a secret: a forged cursor could only select a position in a list its
holder may read anyway.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from functools import lru_cache

from followgraph.store.graph.errors import InvalidCursorError

_VERSION = b"1"
_DIGEST_SIZE = 6
_MAX_LENGTH = 200
_MALFORMED = "Malformed cursor: pass a cursor exactly as a previous page returned it."


@dataclass(frozen=True, slots=True)
class Cursor:
    at: int
    member: str

    def encode(self, list_id: str) -> str:
        return cursor_of(list_id, self.at, self.member)

    @classmethod
    def decode(cls, token: str, list_id: str) -> Cursor:
        if not isinstance(token, str) or not token or len(token) > _MAX_LENGTH:
            raise InvalidCursorError(_MALFORMED)
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            raise InvalidCursorError(_MALFORMED) from None
        digest, body = raw[:_DIGEST_SIZE], raw[_DIGEST_SIZE:]
        parts = body.split(b"|", 2)
        if len(parts) != 3 or parts[0] != _VERSION or not parts[1].isdigit():
            raise InvalidCursorError(_MALFORMED)
        if digest != _digest(list_id, body):
            raise InvalidCursorError("This cursor was not issued for this list (or it was altered).")
        return cls(at=int(parts[1]), member=parts[2].decode("ascii", "replace"))


# Every read of a page encodes its entries' cursors; those of hot pages are kept (about 3 MB
# when full) rather than hashed again.
CURSOR_CACHE_SIZE = 16_384


@lru_cache(maxsize=CURSOR_CACHE_SIZE)
def cursor_of(list_id: str, at: int, member: str) -> str:
    """The cursor of the entry (at, member) of the list `list_id`."""
    body = _VERSION + b"|" + f"{at}|{member}".encode()
    raw = _digest(list_id, body) + body
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _digest(list_id: str, body: bytes) -> bytes:
    return hashlib.blake2b(list_id.encode() + b"\0" + body, digest_size=_DIGEST_SIZE).digest()
