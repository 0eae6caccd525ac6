"""The private internals of other libraries that FollowGraph leans on, checked against the installed
versions, so that a release that moves them fails here, loudly, rather than in production.

- transport/http_protocol.py and transport/http_cycle.py subclass uvicorn's httptools protocol and
  its request cycle (the guards, and a leaner cycle that sets every attribute uvicorn's sets);
- transport/ws_protocol.py changes the close code of uvicorn's WebSocket protocol on shutdown;
- store/redis/channel.py parses replies with hiredis and redis-py's error parser, and
  store/redis/cluster_channel.py reads redis-py's slot and node caches.

pyproject.toml pins uvicorn and redis-py to the minor versions tested here.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from redis._parsers.base import BaseParser
from redis.asyncio.cluster import NodesManager
from redis.exceptions import ResponseError
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, service_unavailable
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from followgraph.transport.http_cycle import Cycle

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def assigned(function: object) -> set[str]:
    """The attributes `function` (a method) assigns on self."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))  # type: ignore[arg-type]
    names = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                if target.value.id == "self":
                    names.add(target.attr)
    return names


def pinned(name: str) -> Requirement:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    [requirement] = [Requirement(d) for d in dependencies if Requirement(d).name == name]
    return requirement


def test_uvicorn_and_redis_py_are_pinned_to_the_installed_minor_versions() -> None:
    for name in ("uvicorn", "redis"):
        installed = version(name)
        requirement = pinned(name)
        assert requirement.specifier.contains(installed), (name, installed, str(requirement.specifier))
        # A pin to one minor version: its upper bound is the next minor.
        upper = [s for s in requirement.specifier if s.operator == "<"]
        assert upper, f"{name} has no upper bound in pyproject.toml"
        major, minor = installed.split(".")[:2]
        assert upper[0].version in (f"{major}.{int(minor) + 1}", f"{major}.{int(minor) + 1}.0"), name


def test_the_lean_cycle_sets_every_attribute_uvicorns_cycle_sets() -> None:
    # Cycle does not call RequestResponseCycle.__init__: an attribute uvicorn adds there, and uses
    # in a method Cycle inherits, would be missing.
    theirs = assigned(RequestResponseCycle.__init__)
    # Cycle's own instead: message_event is a property, and receive() reads `chunks`, not `body`.
    ours = assigned(Cycle.__init__) | {"message_event", "body"}
    assert theirs <= ours, f"uvicorn's cycle now sets {sorted(theirs - ours)}"


def test_the_httptools_protocol_internals_the_guards_use_are_there() -> None:
    for name in (
        "_unset_keepalive_if_required",
        "_should_upgrade",
        "_unsupported_upgrade_warning",
        "handle_websocket_upgrade",
        "send_400_response",
        "on_headers_complete",
        "on_response_complete",
        "on_message_begin",
    ):
        assert callable(getattr(HttpToolsProtocol, name, None)), name
    assert STATUS_LINE[200].startswith(b"HTTP/1.1 200")
    assert HIGH_WATER_LIMIT > 0 and callable(service_unavailable)
    for method in ("send", "receive"):
        assert callable(getattr(RequestResponseCycle, method)), method


def test_the_websocket_protocol_internals_its_shutdown_uses_are_there() -> None:
    set_up = assigned(WebSocketsSansIOProtocol.__init__) | assigned(WebSocketsSansIOProtocol.connection_made)
    for name in ("conn", "queue", "close_sent", "handshake_complete", "transport"):
        assert name in set_up, name
    assert callable(WebSocketsSansIOProtocol.stop_keepalive)


def test_redis_py_internals_the_read_channels_use_are_there() -> None:
    error = BaseParser.parse_error("WRONGTYPE Operation against a key holding the wrong kind of value")  # type: ignore[no-untyped-call]
    assert isinstance(error, ResponseError)
    caches = assigned(NodesManager.__init__)
    for name in ("slots_cache", "nodes_cache", "connection_kwargs"):
        assert name in caches, name
