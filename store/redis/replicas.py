"""Writes that wait for replicas (FOLLOWGRAPH_WRITE_REPLICAS=N): each script call that writes is
followed, on its own connection, by `WAIT N timeout`, and a write fewer replicas confirmed is an
error, never a success.

Redis replicates asynchronously: a primary answers a write before any replica has it, and the
replica a failover promotes may lack the last writes. WAIT blocks until N replicas have confirmed
the writes of its connection, or the timeout passes, and says how many did.

- What waits: calls of scripts that write (every write of the graph is a script; `script_writes`
  reads which ones do from their sources), made through the client `wait_for_replicas` wraps,
  alone or in pipelines. Plain commands do not: they are the bookkeeping of jobs, leases, caches
  and the change log's readers, and whatever ran before a waiting script is covered by its WAIT.
  Reads never wait, so they cost nothing more.
- The barrier: Valkey and Redis 7.2+ wait for the replication offset of the connection's last
  command that replicated something. The retry of a write another connection made finds its work
  done and replicates nothing, and its WAIT would vouch for a state the replicas may not have. So
  a SET of a key of its own (Keys.replicated) goes right before WAIT: WAIT then covers everything
  the primary had done.
- One Redis, or Sentinel's primary: the writes, the barrier and WAIT go in one pipeline, on one
  connection, in one round trip.
- A cluster: the writes go through redis-py as before, which follows redirections; then the
  barrier (a key of a written slot) and WAIT go on one connection of each node that held a
  written slot, in one more round trip. A slot that moved meanwhile (another node in the slot map
  after the write, or the barrier redirected) means the write may have been made elsewhere: it is
  not confirmed.
- WriteNotReplicatedError: the write was made on the primary and may be lost if it fails before
  the replicas have it. Every write of the store is idempotent: sending it again is safe, and is
  confirmed once the replicas answer. A script the primary does not know yet (NOSCRIPT, as on a
  primary just promoted) runs again once loaded, so its first call may wait twice.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio import RedisCluster
from redis.asyncio.cluster import ClusterNode, PipelineCommand
from redis.exceptions import RedisClusterException, RedisError

from followgraph.store.redis.lua import AnyPipeline, Client, LuaScript

WRITE_NOT_REPLICATED = "WRITE_NOT_REPLICATED"
# The barrier key of a write: None on one Redis, the written slot on a cluster.
Barrier = Callable[[int | None], str]
# The calls of writing scripts among a pipeline's commands, by position.
Writes = dict[int, tuple[Any, ...]]
# A pipeline's execute.
Execute = Callable[..., Awaitable[list[Any]]]
# Set on a client whose writes wait, while they do.
_WAITING = "_followgraph_replica_wait"

# Commands a script may call that change nothing: a script that calls only these is a read.
READ_COMMANDS = frozenset(
    {
        "EXISTS", "TYPE", "TTL", "PTTL", "TIME",
        "GET", "MGET", "STRLEN",
        "HGET", "HMGET", "HGETALL", "HEXISTS", "HLEN", "HKEYS", "HVALS",
        "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD",
        "ZSCORE", "ZMSCORE", "ZCARD", "ZCOUNT", "ZRANK", "ZREVRANK", "ZRANGE", "ZREVRANGE",
        "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZLEXCOUNT",
        "LLEN", "LINDEX", "LRANGE",
        "XLEN", "XRANGE", "XREVRANGE",
    }
)  # fmt: skip
# A call of a command in a script: redis.call('NAME', ...) or redis.pcall("NAME", ...); a name that
# is not written out (a variable) matches without one.
_CALL = re.compile(r"""redis\.p?call\(\s*(?:'(\w+)'|"(\w+)")?""")


def script_writes(source: str) -> bool:
    """Whether a script may change data: it calls a command that is not a read, or one it does not
    name."""
    for match in _CALL.finditer(source):
        name = match.group(1) or match.group(2)
        if name is None or name.upper() not in READ_COMMANDS:
            return True
    return False


_SCRIPT_WRITES: dict[str, bool] = {}


def command_writes(args: Sequence[Any]) -> bool:
    """Whether a command is the call of a script that writes (one unknown by its SHA is taken to)."""
    name = args[0]
    if name == "EVALSHA":
        sha = str(args[1])
        known = _SCRIPT_WRITES.get(sha)
        if known is None:
            script = LuaScript.by_sha.get(sha)
            known = _SCRIPT_WRITES[sha] = script is None or script_writes(script.source)
        return known
    return name == "EVAL" and script_writes(str(args[1]))


@dataclass(frozen=True, slots=True)
class ReplicaWait:
    """How many replicas a write waits for, and how long (seconds)."""

    replicas: int
    timeout: float

    @property
    def command(self) -> tuple[str, int, int]:
        return ("WAIT", self.replicas, max(1, round(self.timeout * 1000)))


class WriteNotReplicatedError(RedisError):
    """A write made on the primary that fewer replicas than asked confirmed in time: it may be lost
    in a failover, and may be sent again."""

    code = WRITE_NOT_REPLICATED

    def __init__(self, wait: ReplicaWait, acknowledged: int, why: str | None = None) -> None:
        why = why or (
            f"{acknowledged} of the {wait.replicas} replica(s) it waits for confirmed it within "
            f"{wait.timeout:g} s"
        )
        super().__init__(
            f"The change was made but not confirmed by the replicas ({why}): it could be lost if "
            "the primary fails now. Send it again: writes are idempotent."
        )
        self.acknowledged = acknowledged
        self.wanted = wait.replicas


def waits_for_replicas(client: Client) -> bool:
    """Whether `client`'s writes wait for replicas (wait_for_replicas was called on it)."""
    return _WAITING in vars(client)


def wait_for_replicas(client: Client, wait: ReplicaWait, barrier: Barrier) -> Callable[[], None]:
    """Make every call of a writing script that goes through `client` wait for `wait.replicas`
    replicas, whether alone or in a pipeline; returns what puts the client back as it was.

    Wrapped on the instance, as tracing wraps it (store/redis/spans.py): other clients in the
    process are left alone."""
    waits: _Waits = (
        _ClusterWaits(client, wait, barrier)
        if isinstance(client, RedisCluster)
        else _Waits(client, wait, barrier)
    )
    saved = {name: vars(client).get(name) for name in ("execute_command", "pipeline")}
    setattr(client, "execute_command", waits.execute_command)  # noqa: B010
    setattr(client, "pipeline", waits.pipeline)  # noqa: B010
    setattr(client, _WAITING, wait)

    def undo() -> None:
        for name, before in saved.items():
            if before is None:
                vars(client).pop(name, None)
            else:
                setattr(client, name, before)
        vars(client).pop(_WAITING, None)

    return undo


class _Waits:
    """The wrapped commands and pipelines of one client (one Redis, or Sentinel's primary)."""

    def __init__(self, client: Client, wait: ReplicaWait, barrier: Barrier) -> None:
        self.client = client
        self.wait = wait
        self.barrier = barrier
        self.command: Callable[..., Awaitable[Any]] = client.execute_command
        self.make_pipeline: Callable[..., AnyPipeline] = client.pipeline

    def execute_command(self, *args: Any, **options: Any) -> Awaitable[Any]:
        if not command_writes(args):
            return self.command(*args, **options)
        return self._write(args, options)

    async def _write(self, args: tuple[Any, ...], options: dict[str, Any]) -> Any:
        pipe = self.make_pipeline(transaction=False)
        pipe.execute_command(*args, **options)
        [reply] = await self._run(pipe, {0: args}, pipe.execute)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def pipeline(self, *args: Any, **kwargs: Any) -> AnyPipeline:
        pipe = self.make_pipeline(*args, **kwargs)
        # A cluster's pipelines have no transaction unless asked; one Redis's have one by default.
        transaction = kwargs.get(
            "transaction", args[0] if args else not isinstance(self.client, RedisCluster)
        )
        queue, execute = pipe.execute_command, pipe.execute
        # The calls of writing scripts among the commands queued, by position.
        writes: Writes = {}

        def queued(*command: Any, **options: Any) -> Any:
            if command_writes(command):
                writes[len(pipe)] = command
            return queue(*command, **options)

        async def executed(raise_on_error: bool = True, **more: Any) -> list[Any]:
            if not writes:
                return await execute(raise_on_error, **more)
            if transaction:
                # Inside MULTI, WAIT would not block: the store's pipelines have no transaction.
                raise TypeError("A write that waits for replicas cannot run in a transaction.")
            made = dict(writes)
            writes.clear()
            replies = await self._run(pipe, made, lambda **options: execute(**options, **more))
            if raise_on_error:
                for reply in replies:
                    if isinstance(reply, Exception):
                        raise reply
            return replies

        # Attributes of this one pipeline object, shadowing its class's methods.
        setattr(pipe, "execute_command", queued)  # noqa: B010
        setattr(pipe, "execute", executed)  # noqa: B010
        return pipe

    async def _run(self, pipe: AnyPipeline, writes: Writes, execute: Execute) -> list[Any]:
        """The replies of the commands queued on `pipe` (`writes`: the writing ones, by position),
        once the replicas confirmed the writes that were made: the barrier and WAIT go last."""
        # Queued past the wrappers of the pipeline object, on its class's own method.
        queue: Callable[..., Any] = type(pipe).execute_command
        queue(pipe, "SET", self.barrier(None), "1")
        queue(pipe, *self.wait.command)
        *replies, barrier, acknowledged = await execute(raise_on_error=False)
        if any(not isinstance(replies[i], Exception) for i in writes):
            self.check(barrier, acknowledged)
        return replies

    def check(self, barrier: Any, acknowledged: Any) -> None:
        """Raise WriteNotReplicatedError unless the barrier was set and WAIT counted enough replicas."""
        if isinstance(barrier, Exception) or isinstance(acknowledged, Exception):
            raise WriteNotReplicatedError(self.wait, 0, "the replicas could not be asked")
        if int(acknowledged) < self.wait.replicas:
            raise WriteNotReplicatedError(self.wait, int(acknowledged))


class _ClusterWaits(_Waits):
    """On a cluster: the writes through redis-py, then the barrier and WAIT on each written node."""

    client: RedisCluster

    async def _write(self, args: tuple[Any, ...], options: dict[str, Any]) -> Any:
        before = self._nodes([args])
        reply = await self.command(*args, **options)
        await self._confirm(before)
        return reply

    async def _run(self, pipe: AnyPipeline, writes: Writes, execute: Execute) -> list[Any]:
        before = self._nodes(list(writes.values()))
        replies = await execute(raise_on_error=False)
        made = {_first_key(args) for i, args in writes.items() if not isinstance(replies[i], Exception)}
        if made:
            await self._confirm({key: node for key, node in before.items() if key in made})
        return replies

    def _nodes(self, commands: Sequence[Sequence[Any]]) -> dict[str, str | None]:
        """The node of each written script call's slot (by its first key), as the slot map says now;
        None when the map does not know it yet."""
        nodes: dict[str, str | None] = {}
        for args in commands:
            key = _first_key(args)
            try:
                node = self.client.get_node_from_key(key)
            except (RedisError, RedisClusterException):
                node = None
            nodes[key] = None if node is None else node.name
        return nodes

    async def _confirm(self, before: dict[str, str | None]) -> None:
        """Set a barrier and WAIT on each node that took a write of `before`'s keys; raise
        WriteNotReplicatedError unless every one of them confirms."""
        on_node: dict[str, tuple[ClusterNode, int]] = {}
        for key, name in before.items():
            if not key:
                raise WriteNotReplicatedError(self.wait, 0, "a script without keys runs on no known node")
            try:
                node = self.client.get_node_from_key(key)
            except (RedisError, RedisClusterException):
                node = None
            if node is None or (name is not None and node.name != name):
                raise WriteNotReplicatedError(self.wait, 0, "its slot moved to another node meanwhile")
            on_node.setdefault(node.name, (node, self.client.keyslot(key)))
        counts = await asyncio.gather(*(self._ask(node, slot) for node, slot in on_node.values()))
        self.check(None, min(counts))

    async def _ask(self, node: ClusterNode, slot: int) -> int:
        """How many replicas of `node` confirmed its writes, asked on one connection of it (the
        barrier is a key of `slot`, one the write was on: redirected if the slot moved)."""
        commands = [
            PipelineCommand(0, "SET", self.barrier(slot), "1"),
            PipelineCommand(1, *self.wait.command),
        ]
        try:
            await node.execute_pipeline(commands)
        except (RedisError, OSError):
            raise WriteNotReplicatedError(self.wait, 0, "the replicas could not be asked") from None
        barrier, acknowledged = commands[0].result, commands[1].result
        self.check(barrier, acknowledged)
        return int(cast("int", acknowledged))


def _first_key(args: Sequence[Any]) -> str:
    """The first key of a script call (all its keys are on one slot), "" for a call without keys."""
    return str(args[3]) if int(args[2]) > 0 else ""
