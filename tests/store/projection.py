"""The graph as the change log tells it: every event folded, in id order, into plain dicts.

An oracle written apart from the SQL copy: if the log is complete, folding it gives exactly the
graph in Redis (follows, requests, blocks and mutes with their times, profiles and settings).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from followgraph.store.graph.events import Event, EventKind

Pair = tuple[str, str]


@dataclass
class Projection:
    follows: dict[Pair, int] = field(default_factory=dict)
    requests: dict[Pair, int] = field(default_factory=dict)
    blocks: dict[Pair, int] = field(default_factory=dict)
    mutes: dict[Pair, int] = field(default_factory=dict)
    profiles: dict[str, dict[str, str]] = field(default_factory=dict)
    settings: dict[str, dict[str, str]] = field(default_factory=dict)

    def apply(self, e: Event) -> None:
        a, t, at, k = e.actor, e.target or "", e.at, e.kind
        if k is EventKind.FOLLOW:
            self.follows[a, t] = at
            self.requests.pop((a, t), None)
        elif k is EventKind.UNFOLLOW:
            self.follows.pop((a, t), None)
            self.requests.pop((a, t), None)
        elif k is EventKind.REMOVE_FAN:
            self.follows.pop((t, a), None)
        elif k is EventKind.FOLLOW_REQUEST:
            self.requests[a, t] = at
        elif k is EventKind.ACCEPT_FOLLOW_REQUEST:
            self.requests.pop((t, a), None)
            self.follows[t, a] = at
        elif k is EventKind.REJECT_FOLLOW_REQUEST:
            self.requests.pop((t, a), None)
        elif k is EventKind.BLOCK:
            self.blocks[a, t] = at
            for pair in ((a, t), (t, a)):
                self.follows.pop(pair, None)
                self.requests.pop(pair, None)
        elif k is EventKind.UNBLOCK:
            self.blocks.pop((a, t), None)
        elif k is EventKind.MUTE:
            self.mutes[a, t] = at
        elif k is EventKind.UNMUTE:
            self.mutes.pop((a, t), None)
        elif k is EventKind.USER:
            self.profiles.setdefault(a, {}).update(e.data)
        else:
            self.settings[a] = dict(e.data)


def project(events: Iterable[Event]) -> Projection:
    out = Projection()
    for event in sorted(events, key=lambda e: e.version):
        out.apply(event)
    return out


def edge_times(times: dict[str, dict[str, int]]) -> dict[Pair, int]:
    """A model's {a: {b: at}} as {(a, b): at}."""
    return {(a, b): at for a, out in times.items() for b, at in out.items()}
