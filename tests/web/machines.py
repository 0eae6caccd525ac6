"""Machines without Node.js, simulated: a PATH holding every program of this one's but Node.js's."""

from __future__ import annotations

import os
from pathlib import Path

NODE_PROGRAMS = {"node", "nodejs", "npm", "npx", "corepack"}


def path_without_node(directory: Path) -> Path:
    """`directory`, made a folder of links to every program on PATH but Node.js's."""
    directory.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = directory / entry.name
            if entry.name not in NODE_PROGRAMS and not link.exists() and not link.is_symlink():
                link.symlink_to(entry.path)
    return directory
