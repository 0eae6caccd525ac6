"""Response builders written out as Python source, as graphql-jit does in JavaScript.

A plan's builder turns what the store loaded into the response's dictionaries. Built from nested
closures, a page of 20 edges cost some 300 Python calls: a dictionary comprehension per object,
a wrapper per serialized value, a closure per nested object. Written out, the same builder is one
expression of dictionary displays and comprehensions that calls only the declared getters and the
schema's serializers (an enum's names are a table it looks up), each bound under a name of its own
(bench/benchmarks.md has the figures).

Only response keys (GraphQL names, checked by the parser) and names made here go into the source,
so no text from a request is ever compiled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*")


class Builder:
    """The source of one builder function and the values it refers to."""

    def __init__(self) -> None:
        self.scope: dict[str, Any] = {}

    def ref(self, value: Any) -> str:
        """A name in the builder's source that stands for `value`."""
        name = f"_{len(self.scope)}"
        self.scope[name] = value
        return name

    def call(self, function: Callable[[Any], Any], argument: str) -> str:
        return f"{self.ref(function)}({argument})"

    def lookup(self, table: Mapping[Any, Any], key: str) -> str:
        return f"{self.ref(table)}[{key}]"

    def function(self, parameters: Iterable[str], expression: str) -> Callable[..., Any]:
        """def build(parameters): return expression."""
        source = f"def build({', '.join(parameters)}):\n    return {expression}\n"
        scope = dict(self.scope)
        exec(compile(source, "<compiled plan>", "exec"), scope)
        built: Callable[..., Any] = scope["build"]
        return built


def display(items: Iterable[tuple[str, str]]) -> str:
    """A dictionary display of (response key, expression) pairs."""
    parts = []
    for key, expression in items:
        if not _NAME.fullmatch(key):
            raise ValueError(f"not a GraphQL name: {key!r}")
        parts.append(f"{key!r}: {expression}")
    return "{" + ", ".join(parts) + "}"
