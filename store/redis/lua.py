"""Running Lua scripts by SHA, loading them only when the server does not know them yet.

redis-py's own Script objects ask the server SCRIPT EXISTS before every pipeline; running EVALSHA
and loading on NOSCRIPT keeps a pipeline of scripts to one round trip once the cache is warm.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from redis.asyncio import Redis, RedisCluster
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline
from redis.exceptions import NoScriptError

Arg = str | int
# A single Redis (or fakeredis) or a Redis Cluster. On a cluster every command and script names keys
# of one slot; a pipeline is split per node by the client and sent to the nodes concurrently.
Client = Redis | RedisCluster
AnyPipeline = Pipeline | ClusterPipeline


class LuaScript:
    # Whether Redis must know the script (SCRIPT LOAD) before a call of it runs.
    needs_loading = True
    # Every script made, by SHA: where what sees only an EVALSHA (store/redis/replicas.py) finds
    # the script's source.
    by_sha: ClassVar[dict[str, LuaScript]] = {}

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()
        LuaScript.by_sha.setdefault(self.sha, self)

    async def run(self, redis: Client, keys: Sequence[str], args: Sequence[Arg] = ()) -> Any:
        try:
            return await redis.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await self.load(redis)
            return await redis.evalsha(self.sha, len(keys), *keys, *args)

    def command(self, keys: Sequence[str], args: Sequence[Arg] = ()) -> tuple[Arg, ...]:
        """The EVALSHA command of a call of this script."""
        return ("EVALSHA", self.sha, len(keys), *keys, *args)

    def queue(self, pipe: AnyPipeline, keys: Sequence[str], args: Sequence[Arg] = ()) -> None:
        # Queued as a raw command: redis-py up to 8.1 refuses `evalsha` on a cluster pipeline (issue
        # #2914, since fixed upstream) although it routes EVALSHA by its keys like any command.
        pipe.execute_command(*self.command(keys, args))

    async def load(self, redis: Client) -> None:
        await redis.script_load(self.source)


class ReadCommand(LuaScript):
    """A read of one key that needs no script, made where a script call can be: sent as the plain
    command, and never loaded."""

    needs_loading = False

    def __init__(self, name: str, *arguments: Arg) -> None:
        super().__init__("")
        self.name = name
        self.arguments = arguments

    async def run(self, redis: Client, keys: Sequence[str], args: Sequence[Arg] = ()) -> Any:
        return await redis.execute_command(*self.command(keys, args))

    def command(self, keys: Sequence[str], args: Sequence[Arg] = ()) -> tuple[Arg, ...]:
        [key] = keys
        return (self.name, key, *self.arguments, *args)


class KeyedRead(LuaScript):
    """The read `one` of each of its keys, one command per key, where each key may sit on a cluster
    node of its own: its reply is the list of the keys' replies. `cacheable`: a key's reply
    depends on the key alone, so a read channel may keep it until the key changes
    (store/redis/tracking.py)."""

    needs_loading = False

    def __init__(self, one: ReadCommand, *, cacheable: bool = False) -> None:
        super().__init__("")
        self.one = one
        self.cacheable = cacheable

    def commands(self, keys: Sequence[str]) -> list[tuple[Arg, ...]]:
        """The command of each key."""
        one = self.one
        return [one.command((key,)) for key in keys]

    def command(self, keys: Sequence[str], args: Sequence[Arg] = ()) -> tuple[Arg, ...]:
        raise TypeError("A keyed read is a command per key: run it with run_scripts.")

    async def run(self, redis: Client, keys: Sequence[str], args: Sequence[Arg] = ()) -> Any:
        return await run_scripts(redis, [(self, keys, args)])


def _expanded(calls: Sequence[ScriptCall]) -> tuple[list[ScriptCall], list[int]]:
    """`calls` with each keyed read made a call per key, and how many calls each became (-1: left
    as it was)."""
    flat: list[ScriptCall] = []
    sizes: list[int] = []
    for script, keys, args in calls:
        if isinstance(script, KeyedRead):
            flat += [(script.one, [key], args) for key in keys]
            sizes.append(len(keys))
        else:
            flat.append((script, keys, args))
            sizes.append(-1)
    return flat, sizes


async def run_pipeline(
    redis: Client, fill: Callable[[AnyPipeline], None], scripts: Sequence[LuaScript] = ()
) -> list[Any]:
    """Run the commands `fill` queues in one round trip; on NOSCRIPT load `scripts` and run again.

    Only for commands that are safe to run twice (reads, or idempotent scripts).
    """
    for attempt in range(2):
        pipe = redis.pipeline(transaction=False)
        fill(pipe)
        results: list[Any] = await pipe.execute(raise_on_error=False)
        if attempt == 0 and any(isinstance(r, NoScriptError) for r in results):
            for script in scripts:
                await script.load(redis)
            continue
        for result in results:
            if isinstance(result, Exception):
                raise result
        return results
    raise AssertionError("unreachable")


ScriptCall = tuple[LuaScript, Sequence[str], Sequence[Arg]]


async def run_scripts(redis: Client, calls: Sequence[ScriptCall]) -> list[Any]:
    """The replies of script calls, in one round trip once the server knows the scripts: a lone
    call goes out as a plain EVALSHA, without a pipeline's bookkeeping (the common case on the read
    path). On NOSCRIPT the calls from the first unknown script on run again after loading it: a
    call before it never runs twice, so a writing call placed first (a write, then the reads of
    its payload) has the reply of its only run."""
    if not calls:
        return []
    if any(isinstance(script, KeyedRead) for script, _, _ in calls):
        flat, sizes = _expanded(calls)
        each = iter(await run_scripts(redis, flat))
        return [next(each) if n < 0 else [next(each) for _ in range(n)] for n in sizes]
    if len(calls) == 1:
        script, keys, args = calls[0]
        return [await script.run(redis, keys, args)]
    results: list[Any] = []
    pending = list(calls)
    for attempt in range(2):
        pipe = redis.pipeline(transaction=False)
        for script, keys, args in pending:
            script.queue(pipe, keys, args)
        replies: list[Any] = await pipe.execute(raise_on_error=False)
        unknown = next((i for i, r in enumerate(replies) if isinstance(r, NoScriptError)), None)
        if unknown is None or attempt == 1:
            results += replies
            break
        results += replies[:unknown]
        pending = pending[unknown:]
        for script in dict.fromkeys(script for script, _, _ in pending if script.needs_loading):
            await script.load(redis)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results
