"""What the change log's benchmark (bench/eventlog.py) records: catch-ups and drains of the SQL copy."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from followgraph.server.settings import Settings

# The consumer's batch: the server's default (Settings.sync_batch).
BATCH: int = next(f.default for f in dataclasses.fields(Settings) if f.name == "sync_batch")  # type: ignore[assignment]


@dataclass
class Drain:
    """One database's drain of the pre-filled log."""

    database: str
    events: int = 0
    seconds: float = 0.0
    batches: int = 0
    harness_cpu_seconds: float = 0.0
    follows_in_copy: int | None = None
    note: str = ""

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


@dataclass
class CatchUp:
    """One round of mutations with the consumer on: its lag, and its catch-up once the load stopped."""

    round: int
    events_written: int
    batches: int  # XACK calls in the round: one per batch the consumer applied
    max_lag_events: int
    lag_events: int
    lag_seconds: float
    catch_up_seconds: float | None
    catch_up_server_cpu_seconds: float | None


@dataclass
class EventLogResults:
    batch: int = BATCH
    rounds: int = 2
    on_database: str = ""
    catch_ups: list[CatchUp] = field(default_factory=list)
    prefilled: int = 0
    prefill_seconds: float = 0.0
    drains: list[Drain] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # py-spy's summary of the server with the consumer on under the same load (--profile).
    profile: list[str] = field(default_factory=list)
