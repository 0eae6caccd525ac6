"""The live servers' answers compared with A's, and their round trips counted by Redis itself.

Redis counts the socket reads it makes (INFO total_reads_processed). With one request at a time,
that is one read per round trip of the server under test, once the INFO call's own read is
deducted. So it also counts the round trips of the Node peer, which no in-process counter reaches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
import redis

from bench.queries import FANS_QUERY, PAGE_QUERY, bearer, raw_body
from bench.redisstats import reads_processed
from followgraph.store import FollowStore


@dataclass(frozen=True, slots=True)
class Live:
    """One running server: a GraphQL one (A, the Node peer) or a plain /b endpoint (B)."""

    name: str
    port: int
    graphql: bool


COUNTED_REQUESTS = 5


class Asker:
    """Asks live servers for pages as the viewer of `token`, counting round trips on `stats`."""

    def __init__(self, stats: redis.Redis, token: str) -> None:
        self.stats = stats
        self.headers = {**bearer(token), "Content-Type": "application/json"}

    def post(self, port: int, path: str, body: str) -> tuple[int, bytes]:
        """(round trips, body) of one request; a first, uncounted call opens connections and compiles.
        Redis counts every client's reads, a server's background readers' too (the SQL copy's
        consumer polls the log): the fewest of several requests is the request's own count."""
        url = f"http://127.0.0.1:{port}{path}"
        httpx.post(url, content=body, headers=self.headers)
        counts = []
        for _ in range(COUNTED_REQUESTS):
            before = reads_processed(self.stats)
            response = httpx.post(url, content=body, headers=self.headers)
            counts.append(reads_processed(self.stats) - before - 1)
            response.raise_for_status()
        return min(counts), response.content

    def page(self, server: Live, user_id: str, first: int) -> tuple[int, bytes]:
        """The benchmark's fans page, as the load generator asks it."""
        if server.graphql:
            body = json.dumps({"query": FANS_QUERY, "variables": {"userId": user_id, "first": first}})
            return self.post(server.port, "/graphql", body)
        return self.post(server.port, "/b", raw_body(user_id, first))

    def graphql(self, server: Live, query: str, variables: dict[str, Any]) -> Any:
        _, body = self.post(server.port, "/graphql", json.dumps({"query": query, "variables": variables}))
        return json.loads(body)


# Owners whose fans list the viewer may not see, one for each rule that hides it: the viewer gets
# the list with no edges. Each has RULE_FANS fans; the viewer is not among them.
RULE_OWNERS = ("rules-hides-fans", "rules-locked", "rules-blocks-viewer")
RULE_FANS = ("f1", "f2", "f3")


async def add_rule_owners(store: FollowStore, viewer: str) -> None:
    """RULE_OWNERS, written through the store as the API writes them."""
    for owner in RULE_OWNERS:
        await store.upsert_user(owner, name=owner)
        for fan in RULE_FANS:
            await store.follow(follower=fan, followee=owner)
    hides, locked, blocks = RULE_OWNERS
    await store.update_settings(hides, hide_fans=True)
    await store.update_settings(locked, locked=True)
    await store.block(blocker=blocks, blocked=viewer)


def rules_followed(asker: Asker, a: Live, peer: Live) -> bool:
    """Whether the GraphQL server `peer` answers as `a` (totalCount and pageInfo included) for every
    owner of RULE_OWNERS, and those lists show no edges."""
    for owner in RULE_OWNERS:
        variables: dict[str, Any] = {"userId": owner, "first": 20}
        page_a = asker.graphql(a, PAGE_QUERY, variables)
        if page_a != asker.graphql(peer, PAGE_QUERY, variables) or page_a["data"]["user"]["fans"]["edges"]:
            return False
    return True


def same_subset(asker: Asker, a: Live, peer: Live, user_id: str) -> bool:
    """Whether `peer` answers as `a` over the whole subset it serves: user fields, totalCount and
    pageInfo, the next page by a cursor of A's, and an unknown user."""
    first: dict[str, Any] = {"userId": user_id, "first": 7}
    page_a = asker.graphql(a, PAGE_QUERY, first)
    after = page_a["data"]["user"]["fans"]["pageInfo"]["endCursor"]
    pairs = [(page_a, asker.graphql(peer, PAGE_QUERY, first))]
    for variables in ({**first, "after": after}, {"userId": "nobody-here", "first": 3}):
        pairs.append((asker.graphql(a, PAGE_QUERY, variables), asker.graphql(peer, PAGE_QUERY, variables)))
    return all(x == y for x, y in pairs)
