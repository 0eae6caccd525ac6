"""MkDocs hooks: the reference pages are generated at build time from what they describe, so they
cannot drift from it.

- reference/settings.md from the Settings declarations (followgraph.server.settings),
- reference/cli.md from the typer app of the `followgraph` console script (pyproject.toml),
- reference/graphql.md from the exported SDL (schema/schema.graphql, written by `make schema`).

Repository files that the pages link to from outside docs/ (the benchmark report, the change log,
the web app's screenshots) are published under their own paths, and a page's `../bench/...` link
is pointed at them, so the same link works on a code host and in the site.
"""

from __future__ import annotations

import dataclasses
import importlib
import posixpath
import re
import tomllib
from pathlib import Path
from typing import Any

import typer
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLUnionType,
    build_schema,
    print_type,
    specified_scalar_types,
)
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from followgraph.server import settings

ROOT = Path(__file__).resolve().parents[1]
SDL = ROOT / "schema" / "schema.graphql"
# Repository files outside docs/ that pages may link to, by pattern.
PUBLISHED = ("CHANGELOG.md", "bench/benchmarks.md", "bench/embedded.md", "web/screenshots/*.png")
# Help text is laid out for this width, as a wide terminal shows it.
HELP_WIDTH = 100

_LINK = re.compile(r"(\]\()(\.\./[^)\s#]+)")


def _cell(text: str) -> str:
    """Plain text made safe for a Markdown table cell."""
    return text.replace("|", r"\|").replace("*", r"\*").replace("<", "&lt;")


def settings_page() -> str:
    """The configuration reference: every setting with its variable, default, values and use."""
    lines = [
        "# All settings",
        "",
        "Generated from the declarations in `server/settings.py` when the site is built. Every "
        f"setting is read from an environment variable, `{settings.ENV_PREFIX}` and its name in upper "
        "case; `followgraph serve`'s options, where a setting has one, win over the variable. A bad "
        "value stops the process at start with a sentence that names the variable. Booleans take "
        "`1`/`0`, `true`/`false`, `yes`/`no` or `on`/`off`.",
        "",
        "| variable | default | values | what it does |",
        "| --- | --- | --- | --- |",
    ]
    for field in dataclasses.fields(settings.Settings):
        name = field.name
        variable = settings.ENV_PREFIX + name.upper()
        values = settings.allowed(name) or ""
        lines.append(
            f"| `{variable}` | {_cell(settings.shown_default(name))} | {_cell(values)} "
            f"| {_cell(settings.HELP[name])} |"
        )
    lines += [
        "",
        "## Read outside the settings",
        "",
        "| variable | what it does |",
        "| --- | --- |",
    ]
    lines += [f"| `{name}` | {_cell(text)} |" for name, text in settings.OTHER_VARIABLES.items()]
    return "\n".join(lines) + "\n"


def _console_app() -> Any:
    """The click command behind the `followgraph` console script, as pyproject.toml names it
    (typer's own copy of click: its classes are not `click`'s)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module_name, _, _function = scripts["followgraph"].partition(":")
    app = importlib.import_module(module_name).app
    assert isinstance(app, typer.Typer), f"{module_name}.app is not the typer app"
    return typer.main.get_command(app)


def _commands(command: Any, context: Any) -> list[tuple[str, str]]:
    """(the command's full name, its help) for `command` and every command under it."""
    found = [(context.command_path, command.get_help(context))]
    for name in command.list_commands(context) if hasattr(command, "list_commands") else ():
        sub = command.get_command(context, name)
        if sub is not None and not sub.hidden:
            child = sub.context_class(sub, info_name=name, parent=context, max_content_width=HELP_WIDTH)
            found += _commands(sub, child)
    return found


def cli_page() -> str:
    """The command-line reference: every command's `--help`."""
    root = _console_app()
    context = root.context_class(
        root, info_name="followgraph", terminal_width=HELP_WIDTH, max_content_width=HELP_WIDTH
    )
    lines = [
        "# All commands",
        "",
        "Generated from the `followgraph` command line when the site is built: each command's "
        "`--help`, as `.venv/bin/followgraph COMMAND --help` prints it.",
    ]
    for path, text in _commands(root, context):
        lines += ["", f"## {path}", "", "```text", text.rstrip(), "```"]
    return "\n".join(lines) + "\n"


# The reference's sections, in order: (title, which named types go there).
_KINDS: tuple[tuple[str, type[GraphQLNamedType]], ...] = (
    ("Objects", GraphQLObjectType),
    ("Interfaces", GraphQLInterfaceType),
    ("Unions", GraphQLUnionType),
    ("Input types", GraphQLInputObjectType),
    ("Enums", GraphQLEnumType),
    ("Scalars", GraphQLScalarType),
)
_DESCRIPTION = re.compile(r'\A(?:"""(?:.|\n)*?"""|"[^\n]*")\n')


def _type_section(named: GraphQLNamedType) -> list[str]:
    # The type's own description is the section's text; the block keeps the fields' descriptions.
    block = _DESCRIPTION.sub("", print_type(named), count=1)
    text = [named.description.strip(), ""] if named.description else []
    return ["", f"### {named.name}", "", *text, "```graphql", block, "```"]


def graphql_page() -> str:
    """The GraphQL reference: every type of the exported SDL with its descriptions."""
    schema = build_schema(SDL.read_text())
    roots = [schema.query_type, schema.mutation_type, schema.subscription_type]
    operations = [root for root in roots if root is not None]
    named = [
        t
        for name, t in sorted(schema.type_map.items())
        if not name.startswith("__") and name not in specified_scalar_types and t not in operations
    ]
    lines = [
        "# Schema reference",
        "",
        "Generated from `schema/schema.graphql`, the schema the server serves (`make schema` writes "
        "it, and a test fails when it is stale), with every description in it. The same SDL comes "
        "from `followgraph export-schema`, or from introspection where it is on.",
        "",
        "## Operations",
    ]
    for root in operations:
        lines += _type_section(root)
    for title, kind in _KINDS:
        chosen = [t for t in named if isinstance(t, kind)]
        if chosen:
            lines += ["", f"## {title}"]
            for t in chosen:
                lines += _type_section(t)
    return "\n".join(lines) + "\n"


GENERATED = {
    "reference/settings.md": settings_page,
    "reference/cli.md": cli_page,
    "reference/graphql.md": graphql_page,
}


def published() -> list[str]:
    """The repository paths of the files outside docs/ that the site publishes."""
    return sorted(path.relative_to(ROOT).as_posix() for pattern in PUBLISHED for path in ROOT.glob(pattern))


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    for uri, render in GENERATED.items():
        files.append(File.generated(config, uri, content=render()))
    for path in published():
        files.append(File.generated(config, path, abs_src_path=str(ROOT / path)))
    return files


def on_page_markdown(markdown: str, page: Page, **_: Any) -> str:
    """Links from a page to a published repository file (`../bench/benchmarks.md`) pointed at the
    file's place in the site."""
    here = posixpath.dirname(page.file.src_uri)
    shown = set(published())

    def point(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join("docs", here, match.group(2)))
        if target not in shown:
            return match.group(0)
        return match.group(1) + posixpath.relpath(target, here or ".")

    return _LINK.sub(point, markdown)
