"""The Lua sources of the store's scripts, read from lua/ beside this module.

Each script is composed (scripts.py, control_scripts.py) from parts, the local functions and
values several scripts share (lua/parts/), and a body of its own (lua/NAME.lua), joined in the
order they are named: Redis runs one source per script, so a part comes before the body that
calls it. The files are plain Lua, to be read, linted and highlighted as Lua.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

LUA = Path(__file__).parent / "lua"


@cache
def source(name: str) -> str:
    """The text of lua/NAME.lua (NAME may be parts/...), after a newline, so that the pieces of a
    script join line by line."""
    return "\n" + (LUA / f"{name}.lua").read_text()
