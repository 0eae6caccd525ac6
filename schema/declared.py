"""One declaration per field: what a plain field's value is, and what it needs loaded.

A plain field (no resolver of its own) is declared with `value(...)` on its Strawberry type: the
function that computes it from what the resolvers loaded (a user's facts, a page, an entry), and
the parts of a user's facts it reads. Both execution paths read these declarations: the general
executor builds the Strawberry objects with `Values.build`, and compiled plans take the same
functions by GraphQL name. Nothing else lists a type's fields, so a new field is one edit.

The hottest fields (those of a page's edges and their users) may also declare their `column`:
the field's values for all the users of a page at once, from the page and the users' facts in
columns (store/graph/columns.py). A compiled page whose fields all have one builds its response from
the columns, with no object per user; any other falls back to the objects. The compiled-plan
fuzz tests hold both forms to the general executor's answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import strawberry
from strawberry.types import get_object_definition

from followgraph.schema.document import graphql_name
from followgraph.store import ListKind, Parts

S = TypeVar("S")

_VALUE = "followgraph.value"
_LIST = "followgraph.list"


# What fields need loaded: parts of users' facts.
Wants = Parts

NOTHING = Wants()
PROFILE = Wants(profile=True)
RELATION = Wants(relation=True)
COUNTS = Wants(counts=True)
CONTROLS = Wants(controls=True)


def value(
    get: Callable[[Any], Any],
    *,
    description: str,
    needs: Wants = NOTHING,
    column: Callable[..., list[Any]] | None = None,
) -> Any:
    """A plain field whose value is `get(source)`; `needs` says what of the users it reads.

    `get` returns the plain value: the field's annotation (`EpochMillis`, `strawberry.ID`) tells
    the schema its type, and calling a NewType there would cost a Python call per entry of a page.
    `column`, when given, returns the same values for a whole page: `column(users)` on a User
    (store.columns.UserColumns), `column(page, users)` on an edge."""
    return strawberry.field(description=description, metadata={_VALUE: (get, needs, column)})


def list_metadata(kind: ListKind) -> dict[str, Any]:
    """Metadata of a connection field over one of a user's sorted-set lists."""
    return {_LIST: kind}


@dataclass(frozen=True, slots=True)
class Value(Generic[S]):
    attribute: str
    get: Callable[[S], Any]
    needs: Wants
    column: Callable[..., list[Any]] | None = None


class Values(Generic[S]):
    """The declared plain fields of a Strawberry type, by GraphQL name."""

    def __init__(self, cls: type) -> None:
        definition = get_object_definition(cls, strict=True)
        self.type_name = definition.name
        self.by_name: dict[str, Value[S]] = {}
        # Fields that are not plain values: objects, lists and fields with resolvers.
        self.composites: set[str] = set()
        # Connection fields over a user's sorted-set lists, with the list each pages.
        self.lists: dict[str, ListKind] = {}
        for field in definition.fields:
            name = graphql_name(field)
            metadata: Mapping[str, Any] = field.metadata or {}
            declared = metadata.get(_VALUE)
            if declared is None:
                self.composites.add(name)
                kind = metadata.get(_LIST)
                if kind is not None:
                    self.lists[name] = kind
            else:
                get, needs, column = declared
                self.by_name[name] = Value(field.python_name, get, needs, column)
        self._items = [(v.attribute, v.get) for v in self.by_name.values()]

    def build(self, source: S) -> dict[str, Any]:
        """Every declared value of `source`, by attribute (the Strawberry type's keyword arguments)."""
        return {attribute: get(source) for attribute, get in self._items}

    def needs(self, names: Iterable[str]) -> Wants:
        """What the selected fields `names` need loaded."""
        wants = NOTHING
        for name in names:
            declared = self.by_name.get(name)
            if declared is not None:
                wants = wants | declared.needs
        return wants
