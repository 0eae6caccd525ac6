"""Which User fields a query selects below a resolver, read from the document itself.

Resolvers that return users load what those users' selected fields need, in a few batched round
trips, and hand over plain values: the User fields are attributes, not per-field resolvers (which
would cost an asyncio task and a DataLoader future for every field of every entry).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionSetNode,
)

PROFILE_FIELDS = frozenset({"name", "avatarUrl", "createdAt"})
RELATION_FIELDS = frozenset(
    {"relationship", "viewerIsFollowing", "isFollowingViewer", "viewerFollowedAt", "followedViewerAt"}
)
COUNT_FIELDS = frozenset({"followingCount", "fansCount", "mutualCount"})
_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class Wants:
    profile: bool = False
    relation: bool = False
    counts: bool = False

    @classmethod
    def of(cls, names: set[str]) -> "Wants":
        return cls(
            profile=not PROFILE_FIELDS.isdisjoint(names),
            relation=not RELATION_FIELDS.isdisjoint(names),
            counts=not COUNT_FIELDS.isdisjoint(names),
        )


# Parsed documents are cached and reused, so their field nodes are too: the analysis of a field
# node is kept with the node itself, which keeps its id from being reused while cached.
_cache: dict[tuple[tuple[int, ...], tuple[str, ...]], tuple[tuple[FieldNode, ...], frozenset[str]]] = {}


def selected_names(info: Any, *path: str) -> frozenset[str]:
    """Names of the fields selected below the current field, following `path` (field names)."""
    raw = info._raw_info
    nodes: tuple[FieldNode, ...] = tuple(raw.field_nodes)
    key = (tuple(map(id, nodes)), path)
    cached = _cache.get(key)
    if cached is not None and all(a is b for a, b in zip(cached[0], nodes, strict=True)):
        return cached[1]
    names: set[str] = set()
    visited: set[tuple[str, tuple[str, ...]]] = set()
    for node in nodes:
        _collect(node.selection_set, path, raw.fragments, names, visited)
    result = frozenset(names)
    if len(_cache) >= _CACHE_SIZE:
        _cache.clear()
    _cache[key] = (nodes, result)
    return result


def _collect(
    selections: SelectionSetNode | None,
    path: tuple[str, ...],
    fragments: dict[str, FragmentDefinitionNode],
    names: set[str],
    visited: set[tuple[str, tuple[str, ...]]],
) -> None:
    """Add to `names` the fields at `path` below `selections`. A fragment is read once per path
    (names are a set), so fragments spread many times cost nothing more."""
    if selections is None:
        return
    for node in selections.selections:
        if isinstance(node, FieldNode):
            if not path:
                names.add(node.name.value)
            elif node.name.value == path[0]:
                _collect(node.selection_set, path[1:], fragments, names, visited)
        elif isinstance(node, InlineFragmentNode):
            _collect(node.selection_set, path, fragments, names, visited)
        elif isinstance(node, FragmentSpreadNode) and (node.name.value, path) not in visited:
            visited.add((node.name.value, path))
            fragment = fragments.get(node.name.value)
            if fragment is not None:
                _collect(fragment.selection_set, path, fragments, names, visited)


def wants(info: Any, *paths: Iterable[str]) -> Wants:
    """What the users found at any of `paths` below the current field need loaded."""
    names: set[str] = set()
    for path in paths:
        names |= selected_names(info, *path)
    return Wants.of(names)
