"""The Lua sources of the scripts (store/graph/lua/): every file is part of a script, and the
profile script reads the fields the store decodes, in their order."""

from __future__ import annotations

import re

from followgraph.store.graph import control_scripts, imports, lifecycle_scripts, scripts
from followgraph.store.graph.sources import LUA, source
from followgraph.store.redis.lua import LuaScript


def script_sources() -> list[str]:
    return [
        value.source
        for module in (scripts, control_scripts, lifecycle_scripts, imports)
        for value in vars(module).values()
        if isinstance(value, LuaScript)
    ]


def test_every_lua_file_is_part_of_a_script() -> None:
    sources = script_sources()
    files = sorted(LUA.rglob("*.lua"))
    assert len(files) > 40
    for path in files:
        name = str(path.relative_to(LUA).with_suffix(""))
        assert any(source(name) in text for text in sources), f"{path} is in no script"


def test_the_profile_script_reads_the_profile_fields_in_order() -> None:
    [fields] = re.findall(r"HMGET', key, ([^)]*)\)", scripts.PROFILES)
    assert tuple(field.strip(" '") for field in fields.split(",")) == scripts.PROFILE_FIELDS
    assert f"for i = 1, {len(scripts.PROFILE_FIELDS)} do" in scripts.PROFILES
