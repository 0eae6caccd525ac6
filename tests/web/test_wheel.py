"""The release wheel, made on a machine with Python alone and used on another: `make wheel` in a copy
of the sources with no Node.js on PATH (web/ is built with PyPI's), the wheel installed into a fresh
virtualenv, and its `followgraph serve --demo`, run away from the sources on a data directory of its
own, serving the app and GraphiQL from the wheel: both render in Chromium, every request answered
by the server."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.server.processes import clean_env, free_port, interrupt, wait_ready
from tests.web.conftest import run_node
from tests.web.machines import path_without_node

ROOT = Path(__file__).resolve().parents[2]

# Both pages in Chromium (playwright-core, from web/'s node_modules), failing on a request to
# another host, a page error or an error logged.
RENDER = """
import { chromium } from "playwright-core";
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu"],
});
const problems = [];
const page = await browser.newPage();
await page.route("**/*", (route) => {
  if (new URL(route.request().url()).hostname === "127.0.0.1") return route.continue();
  problems.push(`request to ${route.request().url()}`);
  return route.abort();
});
page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
for (const [path, ready] of [["/", ".profile-header"], ["/graphql", ".graphiql-container"]]) {
  await page.goto(process.env.FOLLOWGRAPH_URL + path);
  await page.locator(ready).waitFor({ timeout: 30000 });
}
await browser.close();
if (problems.length) throw new Error(problems.join("\\n"));
"""


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """The output of a command that must succeed."""
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_wheel_serves_the_app_with_no_node(node: str, chromium: str, tmp_path: Path) -> None:
    source = tmp_path / "source"
    ignored = shutil.ignore_patterns(
        ".*", "build", "dist", "node_modules", "__pycache__", "*.egg-info", "site"
    )
    shutil.copytree(ROOT, source, ignore=ignored)
    machine = path_without_node(tmp_path / "bin")
    env = clean_env(PATH=str(machine))
    run("make", "wheel", f"VENV={tmp_path / 'build-venv'}", f"PYTHON={sys.executable}", cwd=source, env=env)
    (wheel,) = (source / "dist").glob("followgraph-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"followgraph/web/dist/index.html", "followgraph/web/dist/graphiql.html"} <= names
    assert any(n.startswith("followgraph/web/dist/assets/") and n.endswith(".js.br") for n in names)
    assert not any(n.startswith("followgraph/web/") and "/dist/" not in n for n in names), (
        "more than the build"
    )

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)
    found = run(
        venv / "bin" / "python",
        "-c",
        "from followgraph.transport.web import WEB_PROJECT; print(WEB_PROJECT)",
        cwd=tmp_path,
    )
    assert Path(found.strip()).is_relative_to(venv)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    serve = [
        venv / "bin" / "followgraph",
        "serve",
        "--demo",
        "--port",
        str(port),
        "--data-dir",
        tmp_path / "data",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(a) for a in serve],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=clean_env(PATH=str(machine)),
        )
    try:
        wait_ready(process, url, lambda: log.read_text(errors="replace")[-4000:], timeout=180)
        index = httpx.get(url, headers={"accept-encoding": "br"})
        assert index.status_code == 200 and index.headers["content-encoding"] == "br"
        run_node(
            [node, "--input-type=module", "-e", RENDER],
            {"FOLLOWGRAPH_URL": url, "CHROMIUM": chromium},
            timeout=120,
        )
    finally:
        interrupt(process, timeout=30)
