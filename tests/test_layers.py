"""The packages import one way, and no modules import each other in a circle (bench's included).

The order, from the top: cli -> server -> transport -> executor -> schema -> resolvers ->
dataloaders -> store, and inside the store sql -> log -> graph -> redis. A module may import its
own package and any package below it, never one above (type-only imports included).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = [
    "cli",
    "server",
    "transport",
    "executor",
    "schema",
    "resolvers",
    "dataloaders",
    "store",
    "store.sql",
    "store.log",
    "store.graph",
    "store.redis",
]
PRODUCT = ["cli", "server", "transport", "executor", "schema", "resolvers", "dataloaders", "store"]


def package_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "store" and len(parts) > 2 and ".".join(parts[:2]) in ORDER:
        return ".".join(parts[:2])
    return parts[0]


def module_of(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def imports(path: Path) -> Iterator[tuple[str, bool]]:
    """The modules of this repository `path` imports (followgraph's without its prefix), each with
    whether only a type checker sees the import. `from package import module` names the module."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(child) for statement in node.body for child in ast.walk(statement))
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.append(submodule if _is_module(submodule) else node.module)
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith(("followgraph.", "bench.")) or name == "bench":
                yield name.removeprefix("followgraph."), id(node) in typing_only


def _is_module(name: str) -> bool:
    parts = name.removeprefix("followgraph.").split(".")
    path = ROOT.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def sources(*folders: str) -> list[Path]:
    return sorted(
        p for folder in folders for p in (ROOT / folder).rglob("*.py") if "node_modules" not in p.parts
    )


def test_no_package_imports_one_above_it() -> None:
    rank = {name: i for i, name in enumerate(ORDER)}
    upward = []
    for path in sources(*PRODUCT):
        mine = package_of(module_of(path))
        if path.name == "__init__.py" and mine == "store":
            continue  # the store's face hands on the names of its parts
        for module, _ in imports(path):
            theirs = package_of(module)
            if theirs in rank and rank[theirs] < rank[mine]:
                upward.append(f"{path.relative_to(ROOT)} imports {module}")
    assert upward == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    known = {module_of(path): path for path in sources(*PRODUCT, "bench")}
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for module, typing_only in imports(path):
            if module in known and module != name and not typing_only:
                graph[name].add(module)
    circles = _circles(graph)
    assert circles == [], circles


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
