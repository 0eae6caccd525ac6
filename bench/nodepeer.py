"""The Node peer (bench/peers/node/): found, installed with `npm ci` and started by the harness.

Built only when `node` and `npm` are on PATH; otherwise the harness reports it as not built and
measures the other servers as usual. The peer runs the store's own Lua scripts: the harness writes
their sources (followgraph.store.graph.scripts) to a JSON file the peer reads at start.

By hand: `python -m bench.nodepeer --port P --redis-url URL` (env BENCH_JWT_SECRET) installs it if
needed and serves it in the foreground on http://127.0.0.1:P/graphql.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.processes import Child, child_env, spawn
from followgraph.store.graph.scripts import PAGE, PROFILES

PEER_DIR = Path(__file__).resolve().parent / "peers" / "node"
DESCRIPTION = "Fastify + Mercurius (graphql-jit) + ioredis + DataLoader + fast-jwt"


MEASURED = ("fastify", "mercurius", "graphql-jit", "graphql", "ioredis", "dataloader", "fast-jwt")


def locked_versions() -> str:
    """The versions package-lock.json pins for the packages that do the work: 'fastify 5.12.8, ...'."""
    packages = json.loads((PEER_DIR / "package-lock.json").read_text())["packages"]
    return ", ".join(f"{name} {packages[f'node_modules/{name}']['version']}" for name in MEASURED)


@dataclass(frozen=True, slots=True)
class NodePeer:
    node: str
    version: str

    @classmethod
    def build(cls) -> NodePeer | str:
        """The installed peer, or a sentence saying why it is not built."""
        node, npm = shutil.which("node"), shutil.which("npm")
        if node is None or npm is None:
            return "not built: node and npm are not both on PATH"
        version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
        installed = PEER_DIR / "node_modules" / ".package-lock.json"
        lock = PEER_DIR / "package-lock.json"
        if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=PEER_DIR,
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                return f"not built: npm ci failed: {(done.stderr or done.stdout).strip()[-300:]}"
        return cls(node, version)

    def spawn(self, port: int, redis_url: str, secret: str, tmp: Path, cpus: set[int] | None) -> Child:
        scripts = tmp / "node-peer-scripts.json"
        scripts.write_text(json.dumps({"page": PAGE, "profiles": PROFILES}))
        env = child_env(
            {
                "PORT": str(port),
                "REDIS_URL": redis_url,
                "JWT_SECRET": secret,
                "SCRIPTS_FILE": str(scripts),
                "NODE_ENV": "production",
            }
        )
        return spawn(
            f"Node peer ({DESCRIPTION})",
            [self.node, str(PEER_DIR / "server.js")],
            env=env,
            log_path=tmp / "node-peer.log",
            cpus=cpus,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the Node peer in the foreground.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--redis-url", required=True)
    args = parser.parse_args()
    peer = NodePeer.build()
    if isinstance(peer, str):
        sys.exit(f"Node peer {peer}")
    with tempfile.TemporaryDirectory(prefix="followgraph-node-peer-") as tmp:
        child = peer.spawn(args.port, args.redis_url, os.environ["BENCH_JWT_SECRET"], Path(tmp), None)
        try:
            code = child.process.wait()
        except KeyboardInterrupt:
            child.stop()
            return
        if code:
            sys.exit(f"The Node peer exited with status {code}:\n{child.log_tail()}")


if __name__ == "__main__":
    main()
