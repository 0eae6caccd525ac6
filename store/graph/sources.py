"""The Lua sources of the store's scripts, read from lua/ beside this module.

Each script is composed (scripts.py, control_scripts.py) from parts, the local functions and
values several scripts share (lua/parts/), and a body of its own (lua/NAME.lua), joined in the
order they are named: Redis runs one source per script, so a part comes before the body that
calls it. A few parts are fragments a body includes where it uses them (`-- include: NAME`). The
files are plain Lua, to be read, linted and highlighted as Lua.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

LUA = Path(__file__).parent / "lua"


# A line `-- include: NAME` stands for the text of lua/NAME.lua: a fragment written out where it is
# used, in a loop's body, where a function would cost the loop a call a turn.
_INCLUDE = re.compile(r"^[ \t]*-- include: (\S+)\n", re.MULTILINE)


@cache
def source(name: str) -> str:
    """The text of lua/NAME.lua (NAME may be parts/...), after a newline, so that the pieces of a
    script join line by line; its includes written out."""
    return "\n" + included((LUA / f"{name}.lua").read_text())


def included(text: str) -> str:
    """`text` with each `-- include: NAME` line replaced by the text of lua/NAME.lua."""
    return _INCLUDE.sub(lambda line: source(line.group(1))[1:], text)
