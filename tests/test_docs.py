"""The docs' generated reference pages (docs/hooks.py) cover what they describe: every setting and
every FOLLOWGRAPH_* variable the product's code reads, every command, every GraphQL type."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

from graphql import build_schema
from typer.testing import CliRunner

from followgraph.cli.main import app
from followgraph.server.settings import ENV_PREFIX, HELP, OTHER_VARIABLES, Settings

ROOT = Path(__file__).resolve().parents[1]
VARIABLE = re.compile(r"\bFOLLOWGRAPH_[A-Z0-9_]*[A-Z0-9]\b")


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _product_files() -> set[Path]:
    """The product's modules: the directories pyproject.toml packages, tests and bench apart."""
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {path for folder in dirs.values() for path in (ROOT / folder).glob("*.py")}


def _strings(source: str) -> list[str]:
    """The string constants of a module (f-strings' literal parts included), docstrings apart:
    a variable named in a docstring or a comment is not one the code reads."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def variables_read() -> set[str]:
    """Every FOLLOWGRAPH_* variable the product reads: the settings' and those named in its code."""
    named = {
        name
        for path in _product_files()
        for text in _strings(path.read_text())
        for name in VARIABLE.findall(text)
    }
    return named | {ENV_PREFIX + field.name.upper() for field in dataclasses.fields(Settings)}


def test_every_setting_is_described() -> None:
    assert set(HELP) == {field.name for field in dataclasses.fields(Settings)}
    assert all(text.strip() for text in HELP.values())


def test_every_variable_the_code_reads_is_on_the_settings_page() -> None:
    names = variables_read()
    # Read outside Settings, so found only by looking at the code.
    assert {"FOLLOWGRAPH_REDIS_SERVER", "FOLLOWGRAPH_EMBEDDED_OWNER"} <= names
    assert len(names) > len(HELP)
    page = _hooks().settings_page()
    missing = sorted(name for name in names if f"`{name}`" not in page)
    assert not missing, f"add these to HELP or OTHER_VARIABLES in server/settings.py: {missing}"
    assert set(OTHER_VARIABLES) <= names, "OTHER_VARIABLES names a variable no code reads"


def test_every_command_is_on_the_cli_page() -> None:
    listed = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0
    commands = re.findall(r"^  (\S+)  ", listed.stdout.split("Commands:")[1], re.MULTILINE)
    assert {"serve", "import", "events"} <= set(commands)
    page = _hooks().cli_page()
    for command in [*commands, "events tail"]:
        assert f"\n## followgraph {command}\n" in page
    assert "FOLLOWGRAPH_DATABASE_URL" in page  # the options' help, not only the command names


def test_every_type_is_on_the_graphql_page() -> None:
    schema = build_schema((ROOT / "schema" / "schema.graphql").read_text())
    page = _hooks().graphql_page()
    types = [name for name in schema.type_map if not name.startswith("__")]
    assert "FollowConnection" in types
    for name in types:
        if name not in ("String", "Int", "Float", "Boolean", "ID"):
            assert f"\n### {name}\n" in page
    connection = schema.type_map["FollowConnection"]
    assert connection.description and connection.description.strip() in page


def test_the_published_repository_files_exist() -> None:
    hooks = _hooks()
    published = hooks.published()
    for pattern in hooks.PUBLISHED:
        assert any(Path(path).match(pattern) for path in published), f"nothing matches {pattern}"
