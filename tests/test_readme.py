"""The README and the docs' pages: their mutation examples select what a normalizing client needs
(the `id` of every user in the payload, so that Apollo Client, urql's Graphcache or Relay can
update it in place), and the README stays a short front door whose links lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

from graphql import FieldNode, OperationDefinitionNode, SelectionSetNode, parse

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The examples live in the README and in the docs' pages (docs/**/*.md).
SOURCES = (README, *sorted((ROOT / "docs").rglob("*.md")))
PAYLOAD_MUTATIONS = (
    "follow|unfollow|removeFan|block|unblock|mute|unmute|acceptFollowRequest|rejectFollowRequest"
)
CALL = re.compile(rf"\b({PAYLOAD_MUTATIONS})\(input:[^)]*\)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
README_MAX_LINES = 200


def _selection(text: str, start: int) -> str | None:
    """The brace-balanced selection set starting at the first `{` after `start`, with the quotes
    of string concatenations (a Python example) left out; None when no selection follows."""
    rest = text[start:].replace('"', "")
    opening = re.match(r"\s*\{", rest)
    if opening is None:
        return None
    depth = 0
    for end, char in enumerate(rest[opening.end() - 1 :], start=opening.end() - 1):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            return rest[opening.end() - 1 : end + 1]
    raise AssertionError(f"unbalanced braces after {text[start - 40 : start]!r}")


def payload_selections(source: Path) -> list[tuple[str, SelectionSetNode]]:
    """Every selection of a FollowPayload mutation in `source`, by mutation name."""
    text = source.read_text()
    found = []
    for call in CALL.finditer(text):
        selection = _selection(text, call.end())
        if selection is None:
            continue
        document = parse(f'mutation {{ {call.group(1)}(input: {{userId: "1"}}) {selection} }}')
        operation = document.definitions[0]
        assert isinstance(operation, OperationDefinitionNode)
        field = operation.selection_set.selections[0]
        assert isinstance(field, FieldNode) and field.selection_set is not None
        found.append((call.group(1), field.selection_set))
    return found


def test_every_user_in_a_payload_example_is_selected_with_its_id() -> None:
    examples = [(source, *example) for source in SOURCES for example in payload_selections(source)]
    # getting-started's follow, the web app's gql recipe, privacy's follow of a locked account, ...
    assert len(examples) >= 3
    assert len({source for source, _, _ in examples}) >= 2
    users = 0
    for source, name, selection in examples:
        for field in selection.selections:
            assert isinstance(field, FieldNode)
            if field.name.value in ("user", "viewer"):
                users += 1
                assert field.selection_set is not None
                chosen = [f.name.value for f in field.selection_set.selections if isinstance(f, FieldNode)]
                assert "id" in chosen, (
                    f"{source.relative_to(ROOT)}: the {name} example selects "
                    f"{field.name.value} {{ {' '.join(chosen)} }}"
                )
    assert users >= 2


def test_the_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) <= README_MAX_LINES


def test_the_readme_links_lead_somewhere() -> None:
    targets = [t for t in LINK.findall(README.read_text()) if "://" not in t]
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
