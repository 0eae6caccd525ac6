"""Spans of Redis round trips, for tracing (OpenTelemetry; transport/tracing_config.py turns
it on).

A round trip gets a span only inside a span that is recorded (a traced request, a SQL batch): the
change log's readers, the watchdog and the other background work would otherwise start a trace at
every poll, and a request its caller did not sample costs a check, not a span. Reads through a
read channel get theirs from the channel (store/redis/channel.py, cluster_channel.py); whatever goes
through redis-py (writes, and reads where there is no channel) from `trace_client`, which wraps one
client's commands and its pipelines.

A span is named after its commands, as OpenTelemetry's database conventions say: `EVALSHA` for
one, `BATCH EVALSHA` for several of the same, `BATCH` for a mix (with `db.operation.batch.size`).
Keys and arguments are left out: they name users.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from opentelemetry.trace import SpanKind, StatusCode, Tracer, get_current_span

from followgraph.store.redis.lua import Client, KeyedRead, ReadCommand, ScriptCall

T = TypeVar("T")
# The names of the commands of a round trip, asked only when it gets a span.
Names = Callable[[], Sequence[Any]]

# The trace and span ids (W3C hex) of the request being served when its caller did not sample it
# (transport/tracing.py): such a request is not recorded, and records nothing inside it. It is
# told here, on a context variable of its own, rather than by a span in OpenTelemetry's context:
# that context's attach, detach and lookups were most of what tracing cost a request it did not
# record.
UNRECORDED: ContextVar[tuple[str, str] | None] = ContextVar("followgraph_unrecorded", default=None)

# What `followgraph.redis.via` says of the way a round trip went.
READ_CHANNEL = "read_channel"
CLUSTER_READ_CHANNEL = "cluster_read_channel"
REDIS_PY = "redis_py"


class RoundTrips:
    """Makes the spans of the round trips of one way to Redis (`via`), with where it leads."""

    __slots__ = ("attributes", "tracer")

    def __init__(
        self,
        tracer: Tracer,
        via: str,
        *,
        address: str | None = None,
        port: int | None = None,
        db: int | None = None,
    ) -> None:
        self.tracer = tracer
        attributes: dict[str, str | int] = {"db.system.name": "redis", "followgraph.redis.via": via}
        if address is not None:
            attributes["server.address"] = address
        if port is not None:
            attributes["server.port"] = port
        if db is not None:
            attributes["db.namespace"] = str(db)
        self.attributes = attributes

    def around(self, replies: Coroutine[Any, Any, T], names: Names) -> Coroutine[Any, Any, T]:
        """`replies`, awaited in a span of the round trip of the commands `names` gives; `replies`
        itself when no span is recorded around it (decided where it is made, which is where it is
        awaited: no coroutine around it then)."""
        if UNRECORDED.get() is not None or not get_current_span().is_recording():
            return replies
        return self._traced(replies, names)

    async def _traced(self, replies: Coroutine[Any, Any, T], names: Names) -> T:
        operation, size = operation_of([str(name) for name in names()])
        attributes = {**self.attributes, "db.operation.name": operation}
        if size > 1:
            attributes["db.operation.batch.size"] = size
        span = self.tracer.start_span(operation, kind=SpanKind.CLIENT, attributes=attributes)
        try:
            return await replies
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(StatusCode.ERROR, str(exc))
            raise
        finally:
            span.end()


def operation_of(names: Sequence[str]) -> tuple[str, int]:
    """The operation's name for commands of these names, and how many there are."""
    if len(names) == 1:
        return names[0], 1
    first = names[0] if names else ""
    same = all(name == first for name in names)
    return (f"BATCH {first}" if same and first else "BATCH"), len(names)


def call_names(calls: Sequence[ScriptCall]) -> list[str]:
    """The command names of script calls as they are sent (a keyed read is one command a key)."""
    names: list[str] = []
    for script, keys, _ in calls:
        if isinstance(script, KeyedRead):
            names += [script.one.name] * len(keys)
        else:
            names.append(script.name if isinstance(script, ReadCommand) else "EVALSHA")
    return names


def trace_client(client: Client, tracer: Tracer) -> Callable[[], None]:
    """Span every round trip `client` makes from now on: its commands, and the `execute` of the
    pipelines it makes. Returns what puts the client back as it was.

    Wrapped on the instance, not on redis-py's classes: other clients in the process (a test's,
    an embedding application's) are left alone."""
    # A single Redis says where it is; a cluster's commands go to the node of their keys.
    kwargs: dict[str, Any] = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    path = kwargs.get("path")
    trips = RoundTrips(
        tracer,
        REDIS_PY,
        address=path or kwargs.get("host"),
        port=None if path else kwargs.get("port"),
        db=kwargs.get("db"),
    )
    command = client.execute_command
    make_pipeline = client.pipeline

    def traced_command(*args: Any, **options: Any) -> Awaitable[Any]:
        return trips.around(command(*args, **options), lambda: args[:1])

    def traced_pipeline(*args: Any, **kwargs: Any) -> Any:
        pipe = make_pipeline(*args, **kwargs)
        queue, execute = pipe.execute_command, pipe.execute
        names: list[Any] = []

        def queued(*command: Any, **options: Any) -> Any:
            names.append(command[0])
            return queue(*command, **options)

        def traced_execute(*args: Any, **kwargs: Any) -> Awaitable[Any]:
            # A pipeline is empty again after execute, and may be filled anew.
            sent = names[:]
            names.clear()
            return trips.around(execute(*args, **kwargs), lambda: sent)

        # Attributes of this one pipeline object, shadowing its class's methods.
        setattr(pipe, "execute_command", queued)  # noqa: B010
        setattr(pipe, "execute", traced_execute)  # noqa: B010
        return pipe

    setattr(client, "execute_command", traced_command)  # noqa: B010
    setattr(client, "pipeline", traced_pipeline)  # noqa: B010

    def undo() -> None:
        for name in ("execute_command", "pipeline"):
            vars(client).pop(name, None)

    return undo
