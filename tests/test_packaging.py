"""The project installs under one `followgraph` namespace, next to distributions whose top-level
names its folders share (PyPI's `schema`, say), and works from the installed copy."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str | Path, cwd: Path, stderr: bool = False) -> str:
    """Standard output of a command that must succeed (and its standard error, with `stderr`)."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr if stderr else done.stdout


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_wheel_installs_next_to_the_schema_package(tmp_path: Path) -> None:
    # Built from a copy of the sources: setuptools builds in the source tree.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "node_modules", "__pycache__"))
    # Verbose, so that the build backend's own warnings are shown (pip hides them otherwise).
    wheel = ("wheel", "-v", "--no-deps", "-w", tmp_path / "dist", ".")
    built = run(sys.executable, "-m", "pip", *wheel, cwd=source, stderr=True)
    assert "Deprecat" not in built, "the build warns about something deprecated"
    (built_wheel,) = (tmp_path / "dist").glob("followgraph-*.whl")
    run(sys.executable, "-m", "venv", tmp_path / "venv", cwd=tmp_path)
    python = tmp_path / "venv" / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", built_wheel, "schema", cwd=tmp_path)
    run(python, "-m", "pip", "check", cwd=tmp_path)

    # Run away from the repository, so that nothing is imported from its folders.
    check = (
        "import schema, followgraph.schema, followgraph.server.app;"
        "assert hasattr(schema, 'Schema') and schema.__file__.endswith('site-packages/schema/__init__.py');"
        "assert 'site-packages/followgraph/schema' in followgraph.schema.__file__;"
        "print(followgraph.schema.schema.as_str())"
    )
    sdl = run(python, "-c", check, cwd=tmp_path)
    assert "type User implements Node" in sdl
    exported = run(tmp_path / "venv" / "bin" / "followgraph", "export-schema", cwd=tmp_path)
    assert exported.strip() == (ROOT / "schema" / "schema.graphql").read_text().strip()
