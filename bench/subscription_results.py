"""What the subscriptions' benchmark (bench/subscriptions.py) records: memory per subscription,
delivery delays, and the cyclic collector's passes in the server."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.collector import Pass

# Subscribers of the latency part, and the most of the memory part.
SUBSCRIBERS = 10_000

GENERATIONS = 3


@dataclass
class Collections:
    """The server's cyclic collector over a stretch of the run: passes, their time and what they freed,
    by generation (0, 1, 2)."""

    passes: list[int] = field(default_factory=lambda: [0] * GENERATIONS)
    ms: list[float] = field(default_factory=lambda: [0.0] * GENERATIONS)
    longest_ms: list[float] = field(default_factory=lambda: [0.0] * GENERATIONS)
    collected: list[int] = field(default_factory=lambda: [0] * GENERATIONS)
    forced: int = 0  # passes asked for (SIGUSR1), counted in generation 2

    @classmethod
    def of(cls, passes: list[Pass]) -> Collections:
        c = cls()
        for p in passes:
            g = p.generation
            c.passes[g] += 1
            c.ms[g] += p.ns / 1e6
            c.longest_ms[g] = max(c.longest_ms[g], p.ns / 1e6)
            c.collected[g] += p.collected
            c.forced += p.forced
        return c

    @property
    def total_ms(self) -> float:
        return sum(self.ms)


SERVED = "followgraph serve"


@dataclass
class MemoryStep:
    """The server and Redis with `subscriptions` idle subscriptions open."""

    label: str
    subscriptions: int
    server_rss_kb: int
    redis_used_memory: int
    redis_clients: int
    open_seconds: float = 0.0  # time to open this step's new sockets (init, ack, subscribe)
    added: int = 0  # sockets opened at this step (0: a baseline, or sockets closed)
    extensions: str = ""  # the WebSocket extensions agreed for this step's sockets
    collections: Collections | None = None  # while this step's sockets opened (or closed)


@dataclass
class Delivery:
    """One rate of follows with SUBSCRIBERS subscriptions open (or none: the reference)."""

    subscribers: int
    rate: float  # follows/s asked
    seconds: float  # from the first follow sent to the last
    follows: int
    mutation_errors: int  # not 200, or not `changed: true`
    expected: int  # deliveries: two per follow (the actor's and the target's subscriptions)
    delivered: int  # distinct (follow, subscriber) deliveries received
    lost: int
    doubled: int  # deliveries received more than once
    unexpected: int  # events received that no follow of this rate explains
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mutation_p50_ms: float
    mutation_p99_ms: float
    behind_schedule_max_ms: float  # how late the sender wrote a follow, at worst
    server_cpu_ms_per_follow: float
    server_cpu_percent: float
    client_cpu_percent: float
    redis_cpu_percent: float
    others_cpu_percent: float
    # Spells of slow deliveries (over SLOW_MS): [seconds into the round, seconds long, deliveries]
    slow_spells: list[list[float]] = field(default_factory=list)
    server: str = SERVED
    collections: Collections = field(default_factory=Collections)  # from the first follow to the drain

    @property
    def achieved_rate(self) -> float:
        return self.follows / self.seconds if self.seconds else 0.0


@dataclass
class SubscriptionResults:
    subscribers: int = SUBSCRIBERS
    client: str = ""
    open_files: str = ""
    memory: list[MemoryStep] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # the first failed mutations' answers
    server_log: str = ""  # the server's log tail, when a mutation failed
    # What the collector freed from the closing of every subscription to a full collection after
    # it, per subscription: what closing them left to the collector.
    left_per_subscription: float | None = None

    def per_subscription_kb(self, step: MemoryStep) -> float:
        """(RSS - RSS with none) / subscriptions."""
        base = self.memory[0]
        n = step.subscriptions - base.subscriptions
        return (step.server_rss_kb - base.server_rss_kb) / n if n else 0.0

    def added_kb(self, step: MemoryStep) -> float | None:
        """RSS growth over the step before, per subscription opened at this step."""
        i = self.memory.index(step)
        if i == 0 or not step.added:
            return None
        return (step.server_rss_kb - self.memory[i - 1].server_rss_kb) / step.added
