"""The requests of the scenarios: GraphQL documents for A and the Node peer, JSON bodies for B/C/D."""

from __future__ import annotations

import json

FANS_QUERY = (
    "query Fans($userId: ID!, $first: Int) { user(userId: $userId) { fans(first: $first) "
    "{ edges { cursor followedAt relationship node { userId name } } } } }"
)
# The whole subset the Node peer serves, for the answer check: a first page, then the next one.
PAGE_QUERY = (
    "query Page($userId: ID!, $first: Int, $after: String) { user(userId: $userId) { userId name "
    "fans(first: $first, after: $after) { totalCount edges { cursor followedAt relationship "
    "node { userId name } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }"
)
FOLLOW_MUTATION = (
    "mutation Follow($userId: ID!) { follow(input: {userId: $userId}) "
    "{ changed relationship errors { code message } } }"
)
UNFOLLOW_MUTATION = (
    "mutation Unfollow($userId: ID!) { unfollow(input: {userId: $userId}) "
    "{ changed relationship errors { code message } } }"
)


def fans_query_body(user_id: str, first: int) -> str:
    return json.dumps({"query": FANS_QUERY, "variables": {"userId": user_id, "first": first}})


def raw_body(user_id: str, first: int, offset: int = 0) -> str:
    body: dict[str, object] = {"userId": user_id, "first": first}
    if offset:
        body["offset"] = offset
    return json.dumps(body)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
