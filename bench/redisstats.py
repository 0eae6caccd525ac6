"""What Redis did for a scenario: INFO commandstats, the server's CPU time and
rdb_changes_since_last_save, as deltas."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import redis

# One server's client, or a client of each node of a cluster.
Stats = redis.Redis | list[redis.Redis]

# Commands of the harness itself, not of the scenario.
IGNORED = frozenset({"info"})
WRITE_COMMANDS = frozenset(
    {
        "zadd", "zrem", "zincrby", "zinterstore", "zunionstore", "zdiffstore", "zremrangebyrank",
        "zremrangebyscore", "del", "unlink", "hset", "hsetnx", "hmset", "hdel", "set", "setex",
        "expire", "pexpire", "incr", "incrby", "sadd", "srem",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Snapshot:
    calls: dict[str, int]
    usec: dict[str, int]
    dirty: int
    cpu: float = 0.0  # the server's CPU seconds (user and system), summed over the nodes

    @classmethod
    def take(cls, client: Stats) -> Snapshot:
        """The counters of one server, or their sums over the nodes of a cluster."""
        calls: Counter[str] = Counter()
        usec: Counter[str] = Counter()
        dirty = 0
        cpu = 0.0
        for node in client if isinstance(client, list) else [client]:
            stats: dict[str, Any] = node.info("commandstats")
            for key, value in stats.items():
                name = key.removeprefix("cmdstat_").lower()
                calls[name] += int(value["calls"])
                usec[name] += int(value["usec"])
            persistence: dict[str, Any] = node.info("persistence")
            dirty += int(persistence["rdb_changes_since_last_save"])
            used: dict[str, Any] = node.info("cpu")
            cpu += float(used["used_cpu_user"]) + float(used["used_cpu_sys"])
        return cls(dict(calls), dict(usec), dirty, cpu)


@dataclass(frozen=True, slots=True)
class RedisWork:
    """Redis' work per request over `requests` requests."""

    requests: int
    calls: dict[str, int]  # per command, in total
    # Time in commands, in total, as commandstats counts it: a script's own and that of the
    # commands it runs, which are counted again on their own (so a script's commands twice).
    usec: int
    dirty: int  # keys/elements changed, in total
    # The server's CPU time, in total: commands, and reading, parsing and answering them.
    cpu_usec: float = 0.0

    @classmethod
    def between(cls, before: Snapshot, after: Snapshot, requests: int) -> RedisWork:
        calls = {
            name: n - before.calls.get(name, 0)
            for name, n in after.calls.items()
            if name not in IGNORED and n - before.calls.get(name, 0) > 0
        }
        usec = sum(after.usec[name] - before.usec.get(name, 0) for name in after.usec if name not in IGNORED)
        cpu = 1e6 * (after.cpu - before.cpu)
        return cls(requests, calls, usec, after.dirty - before.dirty, cpu)

    def _per(self, value: float) -> float:
        return value / self.requests if self.requests else 0.0

    @property
    def commands_per_request(self) -> float:
        return self._per(sum(self.calls.values()))

    @property
    def write_commands_per_request(self) -> float:
        return self._per(sum(n for name, n in self.calls.items() if name in WRITE_COMMANDS))

    @property
    def changes_per_request(self) -> float:
        return self._per(self.dirty)

    @property
    def usec_per_request(self) -> float:
        return self._per(self.usec)

    @property
    def cpu_usec_per_request(self) -> float:
        return self._per(self.cpu_usec)

    def mix(self, top: int = 6) -> str:
        """The commands of one request on average, most frequent first: 'hmget 20, zmscore 2, ...'."""
        ranked = sorted(self.calls.items(), key=lambda item: -item[1])[:top]
        return ", ".join(f"{name} {self._per(n):.3g}" for name, n in ranked)


def used_memory(client: Stats) -> int:
    """INFO used_memory of one server, or its sum over the nodes of a cluster."""
    nodes = client if isinstance(client, list) else [client]
    return sum(int(node.info("memory")["used_memory"]) for node in nodes)


def reads_processed(client: redis.Redis) -> int:
    """INFO total_reads_processed: socket reads Redis made, about one per round trip of a client."""
    stats: dict[str, Any] = client.info("stats")
    return int(stats["total_reads_processed"])
