"""Which fields a query selects below a resolver, read from the document itself.

Resolvers that return users load what those users' selected fields need, in a few batched round
trips, and hand over plain values: the User fields are attributes, not per-field resolvers (which
would cost an asyncio task and a DataLoader future for every field of every entry).
"""

from __future__ import annotations

from typing import Any

from cachetools import LRUCache
from graphql import FieldNode

from followgraph.schema.document import field_nodes, names_at

_CACHE_SIZE = 4096

# Parsed documents are cached and reused, so their field nodes are too: the names found below a
# field node are kept with the node itself, which keeps its id from being reused while cached.
_cache: LRUCache[tuple[tuple[int, ...], tuple[str, ...]], tuple[tuple[FieldNode, ...], set[str]]] = LRUCache(
    _CACHE_SIZE
)


def selected(info: Any, *path: str) -> set[str]:
    """Names of the fields selected below the current field, following `path` (field names).
    The set is shared: do not change it."""
    nodes, fragments = field_nodes(info)
    key = (tuple(map(id, nodes)), path)
    cached = _cache.get(key)
    if cached is not None and all(a is b for a, b in zip(cached[0], nodes, strict=True)):
        return cached[1]
    names = names_at(nodes, fragments, path)
    _cache[key] = (tuple(nodes), names)
    return names
