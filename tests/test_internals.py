"""The private internals of other libraries that FollowGraph leans on, checked against the installed
versions, so that a release that moves them fails here, loudly, rather than in production.

- transport/http_protocol.py subclasses uvicorn's httptools protocol (the guards), runs a probe's
  request beyond the cap through uvicorn's on_headers_complete, and points each request's cycle at
  the connection's joined writes;
- transport/ws_protocol.py changes the close code of uvicorn's WebSocket protocol on shutdown;
- store/redis/channel.py parses replies with hiredis and redis-py's error parser,
  store/redis/cluster_channel.py reads redis-py's slot and node caches, and store/redis/replicas.py
  sends a cluster node's barrier and WAIT through the node's own pipeline;
- transport/http_protocol.py drops an upgraded connection's parser, as uvicorn's connection_lost
  does;
- schema/execution.py replaces the resolver helpers graphql-core's executor binds to itself;
- schema/federation.py answers `_entities` with its own `entities_resolver` (Strawberry's federation
  schema makes the field of that method) and gives User its federation directives by replacing the
  class's Strawberry definition while the schema is built (which reads it from the class).

pyproject.toml pins uvicorn and redis-py to the minor versions tested here.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import tomllib
from importlib.metadata import version
from pathlib import Path

from graphql.execution.executor import Executor
from packaging.requirements import Requirement
from redis._parsers.base import BaseParser
from redis.asyncio.cluster import ClusterNode, NodesManager, PipelineCommand
from redis.exceptions import ResponseError
from strawberry.federation import Schema as FederationSchema
from strawberry.schema.schema import Schema, StrawberryGraphQLCoreExecutionContext
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

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


def used(function: object) -> set[str]:
    """The attributes `function` (a method) reads or writes on self."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))  # type: ignore[arg-type]
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
    }


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


def test_the_request_cycle_is_made_from_what_the_probes_and_joined_writes_set() -> None:
    # A probe beyond the cap swaps the protocol's app and cap for one on_headers_complete call.
    assert {"app", "limit_concurrency", "cycle", "transport"} <= used(HttpToolsProtocol.on_headers_complete)
    # Each cycle's transport is replaced by the connection's joined writes before its task runs.
    assert "transport" in assigned(RequestResponseCycle.__init__)
    for method in (RequestResponseCycle.send, RequestResponseCycle.receive):
        assert "transport" in used(method), method
    assert "keep_alive" in used(RequestResponseCycle.send)


def test_the_httptools_protocol_internals_the_guards_use_are_there() -> None:
    for name in (
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
    assert callable(service_unavailable)
    for method in ("send", "receive"):
        assert callable(getattr(RequestResponseCycle, method)), method


def test_the_internals_the_subscriptions_leave_no_cycle_through_are_there() -> None:
    # An upgraded connection's parser refers back to its protocol; uvicorn drops it on close.
    assert "parser" in assigned(HttpToolsProtocol.__init__)
    assert "parser" in assigned(HttpToolsProtocol.connection_lost)
    # The executor's helpers for resolvers, made of its own bound methods, set once per executor.
    assert "async_helpers" in assigned(Executor.__init__)
    for name in ("gather_async_work", "track_async_work"):
        assert callable(getattr(Executor, name, None)), name
    assert issubclass(StrawberryGraphQLCoreExecutionContext, Executor)
    assert "self.async_helpers" in inspect.getsource(StrawberryGraphQLCoreExecutionContext.build_resolve_info)


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


def test_redis_py_internals_a_cluster_write_s_confirmation_uses_are_there() -> None:
    # store/redis/replicas.py sends a barrier and WAIT on one connection of a node, as redis-py's
    # cluster pipeline sends a node's commands: each PipelineCommand gets its reply or error.
    command = PipelineCommand(0, "WAIT", 1, 100)
    assert (command.args, command.position) == (("WAIT", 1, 100), 0)
    assert "result" in assigned(PipelineCommand.__init__)
    assert "cmd.result = " in inspect.getsource(ClusterNode.execute_pipeline)
    assert list(inspect.signature(ClusterNode.execute_pipeline).parameters) == ["self", "commands"]


def test_strawberry_federation_internals_the_subgraph_schema_uses_are_there() -> None:
    assert "self.entities_resolver" in inspect.getsource(FederationSchema._get_federation_query_type)
    assert "__strawberry_definition__" in inspect.getsource(Schema.__init__)
