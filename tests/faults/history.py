"""The history of a Jepsen-style failover run (tests/faults/test_failover.py on Sentinel,
test_cluster_failover.py on a cluster): writers following and unfollowing through the API, each
operation recorded, and the final graph checked against what was acknowledged.

Each directed edge belongs to one writer, so the operations on an edge are sequential. A follow or
an unfollow sets the edge whatever it was, so the final state of an edge must be what its last
acknowledged operation left, unless an operation after it failed or got no answer: that one may
or may not have been made. An edge found otherwise lost an acknowledged write.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from tests.served import Served

Edge = tuple[str, str]  # (follower, followee)
MUTATION = "mutation($id: ID!) {{ {field}(input: {{userId: $id}}) {{ changed errors {{ code }} }} }}"


@dataclass
class Operation:
    kind: str  # "follow" or "unfollow"
    started: float  # monotonic
    ended: float = 0.0
    acknowledged: bool = False


@dataclass
class Run:
    """Every operation on every edge, when the fault began, and the failures by error code."""

    history: dict[Edge, list[Operation]]
    fault_at: float = float("inf")
    stop: bool = False
    failures: dict[str, int] = field(default_factory=dict)

    def operations(self) -> list[Operation]:
        return [op for ops in self.history.values() for op in ops]

    def acknowledged(self) -> int:
        return sum(op.acknowledged for op in self.operations())

    def failed(self) -> int:
        return sum(self.failures.values())

    def failure_codes(self) -> str:
        """The failures by code, as "3 INTERNAL_SERVER_ERROR, 5 WRITE_NOT_REPLICATED" (or "none")."""
        return ", ".join(f"{count} {code}" for code, count in sorted(self.failures.items())) or "none"

    def back_after(self, touching: Callable[[Edge], bool] | None = None) -> float | None:
        """Seconds from the fault to the first write acknowledged that was sent after it (on an
        edge `touching` accepts, when given)."""
        acked = [
            op.ended
            for edge, ops in self.history.items()
            if touching is None or touching(edge)
            for op in ops
            if op.acknowledged and op.started >= self.fault_at
        ]
        return min(acked) - self.fault_at if acked else None

    def lost(self, found: Collection[Edge]) -> list[Edge]:
        """The edges whose state in the final graph (`found`: the edges it has) no operation on
        them allows: each lost an acknowledged write."""
        return [edge for edge, ops in self.history.items() if (edge in found) not in allowed(ops)]


def allowed(ops: list[Operation]) -> set[bool]:
    """The states an edge may be in after `ops`: the last acknowledged one's, or any later one's."""
    states = {False}  # no edge before the first operation
    for op in ops:
        present = op.kind == "follow"
        states = {present} if op.acknowledged else states | {present}
    return states


async def write(api: Served, edge: Edge, kind: str, run: Run) -> bool:
    """One follow or unfollow through the API, recorded; whether it was acknowledged."""
    op = Operation(kind, time.monotonic())
    run.history[edge].append(op)
    response = await api.post(MUTATION.format(field=kind), {"id": edge[1]}, as_user=edge[0])
    op.ended = time.monotonic()
    body = response.json()
    if response.status_code == 200 and not body.get("errors"):
        assert body["data"][kind]["errors"] == [], body
        op.acknowledged = True
        return True
    codes = [e.get("extensions", {}).get("code") for e in body.get("errors", [])]
    code = codes[0] if codes else str(response.status_code)
    run.failures[code] = run.failures.get(code, 0) + 1
    return False


async def writer(api: Served, edges: list[Edge], run: Run, rng: random.Random) -> None:
    """Follows and unfollows on `edges` at random until the run stops."""
    while not run.stop:
        edge = rng.choice(edges)
        if not await write(api, edge, rng.choice(["follow", "unfollow"]), run):
            await asyncio.sleep(0.05)  # as a client backs off before it tries again
