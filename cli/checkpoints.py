"""The checkpoint of an import of follows, kept in Redis beside the graph it describes.

After every batch the import records, in one write once the batch is written, where the rows
written so far end (the byte offset and line of a file, the row count of a query, and a CRC-32 of
everything before that point) and the counts of those rows. A run of the same import that finds a
checkpoint whose checksum still matches the source goes on from there, counting on from the counts
kept: an import killed between a batch and its checkpoint runs that batch again (which is safe:
rows already there stay as they are). A source that changed before that point is imported from its
start. A finished import removes its checkpoint, so running it again reads everything again and
changes nothing.

The key is named by a digest of what is imported (the kind, and the file's real path or the
query and its database), so two imports of different sources keep checkpoints of their own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import cast

from followgraph.cli.edge_files import Mark
from followgraph.cli.transfer import Summary
from followgraph.store import FollowStore

_COUNTS = ("rows", "written", "unchanged", "requested", "rejected", "registered")


@dataclass(frozen=True, slots=True)
class Kept:
    """A checkpoint as read back: where the rows written end, what they were, and when."""

    mark: Mark
    summary: Summary
    source: str
    updated_ms: int


class Checkpoints:
    """The checkpoint of one import: `source` says what is imported, for people reading it."""

    def __init__(self, store: FollowStore, identity: str, source: str) -> None:
        self.store = store
        self.source = source
        digest = hashlib.sha256(identity.encode()).hexdigest()[:24]
        self.key = store.keys.import_checkpoint(digest)

    def counted(self, summary: Summary, mark: Mark) -> Awaitable[object]:
        """Keep where the rows written end, `mark`, and their counts as they are now (once a batch
        is written): the write, to await."""
        values = ["offset", str(mark.offset), "line", str(mark.line), "crc", str(mark.crc)]
        values += ["source", self.source, "updated", str(int(time.time() * 1000))]
        values += [str(value) for name in _COUNTS for value in (name, getattr(summary, name))]
        return self.store.redis.execute_command("HSET", self.key, *values)

    async def read(self) -> Kept | None:
        fields = cast("dict[str, str]", await self.store.redis.execute_command("HGETALL", self.key))
        if not fields.get("offset"):
            return None
        mark = Mark(int(fields["offset"]), int(fields["line"]), int(fields["crc"]))
        summary = Summary()
        for name in _COUNTS:
            setattr(summary, name, int(fields.get(name) or 0))
        return Kept(mark, summary, fields.get("source", ""), int(fields.get("updated") or 0))

    async def clear(self) -> None:
        await self.store.redis.delete(self.key)
