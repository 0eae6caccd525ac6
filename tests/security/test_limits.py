"""Abuse of the /graphql endpoint: query limits, batches, production switches, transport, CORS, timeouts.

Every query limit must refuse the operation before anything runs: HTTP 400 with
`application/graphql-response+json`, no `data`, an error with the limit's own `extensions.code`
and a message that names the limit. A spy on the store's reads proves that nothing executed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from followgraph.resolvers.node import to_global_id
from followgraph.schema.limits import QueryLimits
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from tests.conftest import TEST_SECRET
from tests.security.helpers import GRAPHQL_RESPONSE, accepted, full_dump, refused, serve
from tests.served import Served

# What the store is asked while a request runs: empty for a request refused before execution.
StoreCalls = list[str]

READS = ("facts", "pages", "common_following", "fans_you_follow", "registered")


@pytest.fixture
def store_calls(monkeypatch: pytest.MonkeyPatch) -> StoreCalls:
    calls: StoreCalls = []
    for name in READS:
        original = getattr(FollowStore, name)

        def spy(
            self: FollowStore, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any
        ) -> Awaitable[Any]:
            calls.append(_name)
            result: Awaitable[Any] = _original(self, *args, **kwargs)
            return result

        monkeypatch.setattr(FollowStore, name, spy)
    return calls


def fans_chain(levels: int, leaf: str = "userId") -> str:
    """user -> (fans -> nodes) x levels -> leaf: depth 2 + 2 * levels for a scalar leaf."""
    inner = leaf
    for _ in range(levels):
        inner = f"fans(first: 1) {{ nodes {{ {inner} }} }}"
    return f'{{ user(userId: "a") {{ {inner} }} }}'


def fragment_chain(levels: int) -> str:
    """The same nesting through named fragments F0 -> F1 -> ... (no cycle)."""
    fragments = [
        f"fragment F{i} on User {{ fans(first: 1) {{ nodes {{ ...F{i + 1} }} }} }}" for i in range(levels)
    ]
    fragments.append(f"fragment F{levels} on User {{ userId }}")
    return '{ user(userId: "a") { ...F0 } } ' + " ".join(fragments)


def inline_chain(levels: int) -> str:
    """The same nesting through inline fragments."""
    inner = "userId"
    for _ in range(levels):
        inner = f"... on User {{ fans(first: 1) {{ nodes {{ {inner} }} }} }}"
    return f'{{ user(userId: "a") {{ {inner} }} }}'


def node_chain(levels: int) -> str:
    """The same nesting below node(id:), an interface field, through an inline fragment on User."""
    inner = "userId"
    for _ in range(levels):
        inner = f"fans(first: 1) {{ nodes {{ {inner} }} }}"
    return f'{{ node(id: "{to_global_id("User", "a")}") {{ ... on User {{ {inner} }} }} }}'


def aliases(count: int) -> str:
    return "{ " + " ".join(f'u{i}: user(userId: "a") {{ userId }}' for i in range(count)) + " }"


# user(first:100) -> nodes -> fans(100) -> nodes -> fans(2): 100 + 100*100 + 100*100*2 nodes.
TOO_COMPLEX = (
    '{ user(userId: "a") { fans(first: 100) { nodes { fans(first: 100) { nodes { fans(first: 2) '
    "{ totalCount } } } } } } }"
)
TOO_COMPLEX_WITH_VARIABLES = (
    'query($a: Int!, $b: Int!, $c: Int!) { user(userId: "a") { fans(first: $a) { nodes { '
    "fans(first: $b) { nodes { fans(first: $c) { totalCount } } } } } } }"
)
HUNDRED_IDS = [f"u{i}" for i in range(100)]
# users(100 ids) x fans(first: 100) = 10,000 nodes: exactly the default budget.
USERS_TIMES_FANS = "{ users(userIds: " + json.dumps(HUNDRED_IDS) + ") { fans(first: 100) { totalCount } } }"
# A frontend's fans page: 20 entries with relationship and counts, each with 5 of its fans.
FRONTEND_PAGE = """
query FansPage($id: ID!, $after: String) {
  user(userId: $id) {
    userId name avatarUrl fansCount followingCount mutualCount relationship
    fans(first: 20, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges {
        cursor followedAt relationship
        node {
          id userId name avatarUrl fansCount followingCount relationship viewerIsFollowing
          fans(first: 5) { totalCount nodes { userId name relationship } }
        }
      }
    }
  }
}
"""


async def populate(served: Served, fans: int = 25) -> None:
    """`a` with `fans` fans f0.., each followed by the next five."""
    fan_ids = [f"f{i}" for i in range(fans)]
    await served.register("a", *fan_ids)
    for index, fan in enumerate(fan_ids):
        await served.store.follow(follower=fan, followee="a")
        for other in fan_ids[index + 1 : index + 6]:
            await served.store.follow(follower=other, followee=fan)


# Depth


@pytest.mark.parametrize("build", [fans_chain, fragment_chain, inline_chain, node_chain])
async def test_a_query_nested_past_max_depth_is_refused_before_execution(
    served: Served, store_calls: StoreCalls, build: Callable[[int], str]
) -> None:
    await served.register("a")
    store_calls.clear()

    error = refused(await served.post(build(6)), "QUERY_TOO_DEEP")

    assert "deeper than 12 levels" in error["message"]
    assert store_calls == []


@pytest.mark.parametrize("build", [fans_chain, fragment_chain, inline_chain, node_chain])
async def test_a_query_of_max_depth_is_accepted(served: Served, build: Callable[[int], str]) -> None:
    await served.register("a")

    accepted(await served.post(build(5)))


async def test_one_level_past_max_depth_is_refused(served: Served) -> None:
    # user(1) fans nodes ... (11) following(12) totalCount(13)
    error = refused(
        await served.post(fans_chain(5, leaf="following(first: 1) { totalCount }")), "QUERY_TOO_DEEP"
    )

    assert "12" in error["message"]


# Aliases


async def test_31_aliases_are_refused_30_accepted(served: Served, store_calls: StoreCalls) -> None:
    await served.register("a")
    store_calls.clear()

    error = refused(await served.post(aliases(31)), "TOO_MANY_ALIASES")

    assert "more than 30 aliases" in error["message"]
    assert store_calls == []
    data = accepted(await served.post(aliases(30)))
    assert len(data) == 30
    assert "facts" in store_calls  # the spy sees what does run


@pytest.mark.parametrize(
    "document",
    [
        # 2 spreads x 16 aliases in the fragment
        '{ user(userId: "a") { ...F ...F } } fragment F on User { '
        + " ".join(f"x{i}: userId" for i in range(16))
        + " }",
        "{ " + " ".join(f"t{i}: __typename" for i in range(31)) + " }",
        '{ user(userId: "a") { '
        + " ".join(f"c{i}: fansCount" for i in range(16))
        + ' } other: user(userId: "a") { '
        + " ".join(f"d{i}: fansCount" for i in range(14))
        + " } }",
    ],
    ids=["through-fragment-spreads", "typename", "nested"],
)
async def test_aliases_are_counted_wherever_they_hide(served: Served, document: str) -> None:
    await served.register("a")

    refused(await served.post(document), "TOO_MANY_ALIASES")


# Directives


async def test_too_many_directives_on_one_selection_are_refused(
    served: Served, store_calls: StoreCalls
) -> None:
    # Only @include and @skip apply to a selection and neither repeats, so 6 directives make an
    # invalid document as well. The limits run before validation: the client is told of the limit.
    document = "{ viewer " + "@include(if: true) " * 6 + "{ userId } }"

    error = refused(await served.post(document), "TOO_MANY_DIRECTIVES")

    assert "at most 5" in error["message"]
    assert store_calls == []


@pytest.mark.parametrize(
    "document",
    [
        "{ viewer @include(if: true) @skip(if: false) { userId } }",
        "{ viewer { ... @include(if: true) @skip(if: false) { userId } } }",
        "{ viewer { ...F @include(if: true) @skip(if: false) } } fragment F on User { userId }",
    ],
    ids=["field", "inline-fragment", "fragment-spread"],
)
async def test_the_directive_limit_applies_to_every_kind_of_selection(
    real_redis: aioredis.Redis, settings: Settings, document: str
) -> None:
    async with serve(replace(settings, max_directives=1), real_redis) as strict:
        error = refused(await strict.post(document), "TOO_MANY_DIRECTIVES")
    async with serve(settings, real_redis) as default:
        accepted(await default.post(document))

    assert "at most 1 " in error["message"]


# Tokens

# 700 aliased fields of 9 tokens each: 6,300 tokens.
MANY_TOKENS = "{ " + " ".join(f'a{i}: user(userId: "a") {{ userId }}' for i in range(700)) + " }"


async def test_a_document_past_the_token_limit_is_refused_at_parsing(
    served: Served, store_calls: StoreCalls
) -> None:
    error = refused(await served.post(MANY_TOKENS), "GRAPHQL_PARSE_FAILED")

    assert "more than 5000 tokens" in error["message"]
    assert store_calls == []


# Cost (GitHub-style node count)


async def test_nested_page_sizes_past_the_cost_budget_are_refused(
    served: Served, store_calls: StoreCalls
) -> None:
    await served.register("a")
    store_calls.clear()

    error = refused(await served.post(TOO_COMPLEX), "QUERY_TOO_COMPLEX")

    assert "more than 10000 nodes" in error["message"]
    assert store_calls == []


async def test_page_sizes_in_variables_count_for_the_cost(served: Served, store_calls: StoreCalls) -> None:
    response = await served.post(TOO_COMPLEX_WITH_VARIABLES, {"a": 100, "b": 100, "c": 2})

    refused(response, "QUERY_TOO_COMPLEX")
    assert store_calls == []


async def test_page_sizes_sent_as_json_floats_count_for_the_cost(
    served: Served, store_calls: StoreCalls
) -> None:
    # GraphQL coerces the JSON number 100.0 to the Int 100: the cost must see 100 too.
    response = await served.post(TOO_COMPLEX_WITH_VARIABLES, {"a": 100.0, "b": 100.0, "c": 2.0})

    refused(response, "QUERY_TOO_COMPLEX")
    assert store_calls == []


async def test_page_sizes_from_variable_defaults_count_for_the_cost(
    served: Served, store_calls: StoreCalls
) -> None:
    # No variables sent: `first` is 100 at every level by the variable's default value.
    document = (
        'query($n: Int = 100) { user(userId: "a") { fans(first: $n) { nodes { fans(first: $n) '
        "{ nodes { fans(first: $n) { totalCount } } } } } } }"
    )

    refused(await served.post(document), "QUERY_TOO_COMPLEX")
    assert store_calls == []


async def test_the_default_page_size_counts_for_the_cost(served: Served) -> None:
    # 20 + 400 + 8,000 + 160,000 nodes without a single `first`.
    document = fans_chain(3, leaf="fans { totalCount }").replace("(first: 1)", "")

    refused(await served.post(document), "QUERY_TOO_COMPLEX")


async def test_a_list_of_ids_multiplies_the_connections_below_it(
    real_redis: aioredis.Redis, settings: Settings
) -> None:
    # 100 users x fans(first: 100) = 10,000: the default budget exactly, one more node is too many.
    plus_one = USERS_TIMES_FANS.replace("totalCount } }", "totalCount } following(first: 1) { totalCount } }")
    as_variable = "query($ids: [ID!]!) " + plus_one.replace(json.dumps(HUNDRED_IDS), "$ids")
    global_ids = json.dumps([to_global_id("User", user_id) for user_id in HUNDRED_IDS])
    through_nodes = (
        "{ nodes(ids: " + global_ids + ") { ... on User { fans(first: 100) { totalCount } "
        "following(first: 1) { totalCount } } } }"
    )
    async with serve(settings, real_redis) as default:
        assert len(accepted(await default.post(USERS_TIMES_FANS))["users"]) == 100
        refused(await default.post(plus_one), "QUERY_TOO_COMPLEX")
        refused(await default.post(as_variable, {"ids": HUNDRED_IDS}), "QUERY_TOO_COMPLEX")
        refused(await default.post(through_nodes), "QUERY_TOO_COMPLEX")
    async with serve(replace(settings, max_cost=9_999), real_redis) as tighter:
        error = refused(await tighter.post(USERS_TIMES_FANS), "QUERY_TOO_COMPLEX")

    assert "more than 9999 nodes" in error["message"]


async def test_a_list_of_ids_from_a_variable_default_multiplies_too(served: Served) -> None:
    document = (
        "query($ids: [ID!]! = " + json.dumps(HUNDRED_IDS) + ") { users(userIds: $ids) { "
        "fans(first: 100) { totalCount } following(first: 1) { totalCount } } }"
    )

    refused(await served.post(document), "QUERY_TOO_COMPLEX")


async def test_cost_is_counted_in_mutation_payloads(served: Served) -> None:
    await served.register("a", "b")
    document = (
        'mutation { follow(input: {userId: "b"}) { user { fans(first: 100) { nodes { '
        "fans(first: 100) { nodes { fans(first: 2) { totalCount } } } } } } } }"
    )
    before = await full_dump(served.store.redis)

    refused(await served.post(document, as_user="a"), "QUERY_TOO_COMPLEX")

    assert await full_dump(served.store.redis) == before


# Page size


@pytest.mark.parametrize(
    ("document", "variables", "argument"),
    [
        ('query($n: Int) { user(userId: "a") { fans(first: $n) { totalCount } } }', {"n": 101}, "first"),
        ('query($n: Int) { user(userId: "a") { following(last: $n) { totalCount } } }', {"n": 101}, "last"),
        ('query($n: Int) { user(userId: "a") { mutuals(first: $n) { totalCount } } }', {"n": -1}, "first"),
        ('{ user(userId: "a") { fans(last: 101) { totalCount } } }', None, "last"),
        ('query($n: Int) { user(userId: "a") { fans(first: $n) { totalCount } } }', {"n": 101.0}, "first"),
        ('query($n: Int = 101) { user(userId: "a") { fans(first: $n) { totalCount } } }', None, "first"),
    ],
    ids=["first-variable", "last-variable", "negative", "literal", "float-variable", "variable-default"],
)
async def test_a_page_size_past_100_is_bad_user_input_before_execution(
    served: Served,
    store_calls: StoreCalls,
    document: str,
    variables: dict[str, Any] | None,
    argument: str,
) -> None:
    await served.register("a")
    store_calls.clear()

    error = refused(await served.post(document, variables), "BAD_USER_INPUT")

    assert f"`{argument}` must be between 0 and 100" in error["message"]
    assert error["extensions"]["argument"] == argument
    assert store_calls == []


# What a frontend sends passes


async def test_a_sensible_frontend_query_is_accepted(served: Served) -> None:
    await populate(served)

    data = accepted(await served.post(FRONTEND_PAGE, {"id": "a"}, as_user="f10", operation_name="FansPage"))

    page = data["user"]["fans"]
    assert page["totalCount"] == 25
    assert len(page["edges"]) == 20
    assert page["pageInfo"]["hasNextPage"] is True
    nested = [edge["node"]["fans"] for edge in page["edges"]]
    assert all(len(fans["nodes"]) <= 5 for fans in nested)
    assert any(len(fans["nodes"]) == 5 for fans in nested)
    relationships = {edge["relationship"] for edge in page["edges"]}
    assert "SELF" in relationships  # f10 is on the first page


# Every limit is configurable

TIGHTER = [
    (
        {"max_depth": 3},
        '{ user(userId: "a") { fans(first: 1) { nodes { userId } } } }',
        "QUERY_TOO_DEEP",
        "3 levels",
    ),
    ({"max_aliases": 2}, aliases(3), "TOO_MANY_ALIASES", "more than 2 aliases"),
    (
        {"max_cost": 50},
        '{ user(userId: "a") { fans(first: 51) { totalCount } } }',
        "QUERY_TOO_COMPLEX",
        "50 nodes",
    ),
    ({"max_tokens": 100}, aliases(12), "GRAPHQL_PARSE_FAILED", "more than 100 tokens"),
]


@pytest.mark.parametrize(
    ("changes", "document", "code", "named"), TIGHTER, ids=["depth", "aliases", "cost", "tokens"]
)
async def test_a_lowered_limit_refuses_a_query_that_passed(
    real_redis: aioredis.Redis,
    settings: Settings,
    changes: dict[str, Any],
    document: str,
    code: str,
    named: str,
) -> None:
    async with serve(settings, real_redis) as default:
        await default.register("a")
        accepted(await default.post(document))
    async with serve(replace(settings, **changes), real_redis) as strict:
        error = refused(await strict.post(document), code)

    assert named in error["message"]


LOOSER = [
    ({"max_depth": 20}, fans_chain(6), "QUERY_TOO_DEEP"),
    ({"max_aliases": 40}, aliases(31), "TOO_MANY_ALIASES"),
    ({"max_cost": 100_000}, TOO_COMPLEX, "QUERY_TOO_COMPLEX"),
    ({"max_tokens": 20_000, "max_aliases": 1_000}, MANY_TOKENS, "GRAPHQL_PARSE_FAILED"),
]


@pytest.mark.parametrize(("changes", "document", "code"), LOOSER, ids=["depth", "aliases", "cost", "tokens"])
async def test_a_raised_limit_lets_a_bigger_query_through(
    real_redis: aioredis.Redis, settings: Settings, changes: dict[str, Any], document: str, code: str
) -> None:
    async with serve(settings, real_redis) as default:
        await default.register("a")
        refused(await default.post(document), code)
    async with serve(replace(settings, **changes), real_redis) as loose:
        accepted(await loose.post(document))


# Fragments: cycles and fan-out


@pytest.mark.parametrize(
    "document",
    [
        "fragment A on User { fans { nodes { ...B } } } fragment B on User { following { nodes { ...A } } } "
        "{ viewer { ...A } }",
        "fragment A on User { userId ...A } { viewer { ...A } }",
        "fragment A on User { ... on User { ...B } } fragment B on User { ...A } { viewer { ...A } }",
    ],
    ids=["two-fragments", "self", "through-inline-fragment"],
)
async def test_cyclic_fragments_are_refused_without_hanging(served: Served, document: str) -> None:
    started = time.perf_counter()
    async with asyncio.timeout(10):
        error = refused(await served.post(document), "GRAPHQL_VALIDATION_FAILED")

    assert "Cannot spread fragment" in error["message"]
    assert time.perf_counter() - started < 2


def fragment_fan_out(levels: int, leaf: str = "userId") -> str:
    """F0 spreads F1 twice, F1 spreads F2 twice...: 2**levels paths to the leaf in ~12 tokens a level."""
    fragments = [f"fragment F{i} on User {{ ...F{i + 1} ...F{i + 1} }}" for i in range(levels)]
    fragments.append(f"fragment F{levels} on User {{ {leaf} }}")
    return "{ viewer { ...F0 } } " + " ".join(fragments)


async def test_a_fragment_fan_out_is_answered_promptly(served: Served) -> None:
    # A valid 1 KB document: execution merges the repeated spreads, so it selects one field. A check
    # that walks every path does 2**21 steps of synchronous work, which the request timeout cannot
    # interrupt: each level more doubles it.
    document = fragment_fan_out(21)
    assert len(document) < 1200

    started = time.perf_counter()
    response = await served.post(document, as_user="a")
    elapsed = time.perf_counter() - started

    assert elapsed < 2, f"{len(document)} bytes took {elapsed:.1f} s: {response.status_code} {response.text}"
    assert response.status_code < 500
    assert all("code" in e["extensions"] for e in response.json().get("errors", []))


async def test_a_fragment_fan_out_with_a_connection_is_bounded(served: Served) -> None:
    started = time.perf_counter()
    response = await served.post(fragment_fan_out(40, leaf="fans(first: 1) { totalCount }"), as_user="a")

    assert response.status_code < 500
    assert time.perf_counter() - started < 2


# Documents built to wear out the parser or the validator

NESTED = 2_400
DEEP_DOCUMENTS = {
    "list-argument": "{ user(userId: " + "[" * NESTED + '"a"' + "]" * NESTED + ") { userId } }",
    "object-argument": "mutation { follow(input: "
    + "{userId: " * 1_200
    + '"a"'
    + "}" * 1_200
    + ") { changed } }",
    "selections": "{ viewer " + "{ fans " * 1_600 + "{ totalCount" + " }" * 1_601 + " }",
    "inline-fragments": "{ viewer " + "{ ... on User " * 1_200 + "{ userId" + " }" * 1_201 + " }",
}


@pytest.mark.parametrize("name", list(DEEP_DOCUMENTS))
async def test_a_document_nested_thousands_deep_is_a_parse_error(
    served: Served, store_calls: StoreCalls, name: str
) -> None:
    before = await full_dump(served.store.redis)

    error = refused(await served.post(DEEP_DOCUMENTS[name], as_user="a"), "GRAPHQL_PARSE_FAILED")

    assert "nested too deeply" in error["message"]
    assert store_calls == []
    assert await full_dump(served.store.redis) == before


async def test_a_field_repeated_a_thousand_times_is_refused(served: Served, store_calls: StoreCalls) -> None:
    # Within the token limit, no alias, depth 2: only the validator's own work budget stops it.
    document = "{ " + "viewer { userId } " * 1_200 + "}"

    error = refused(await served.post(document), "GRAPHQL_VALIDATION_FAILED")

    assert error["message"].startswith("Validation aborted: the document is too costly to validate")
    assert store_calls == []


# Ids that would name another user's keys

KEY_BREAKING_IDS = ["b}:fans", "{u:b}", "b*", "b\nc", "b c", "../b", "\uff42", "", "b" * 65]


@pytest.mark.parametrize("user_id", KEY_BREAKING_IDS)
async def test_an_id_outside_the_alphabet_never_reaches_a_key(served: Served, user_id: str) -> None:
    await served.register("a", "b")
    before = await full_dump(served.store.redis)
    follow = "mutation($id: ID!) { follow(input: {userId: $id}) { changed errors { code field } } }"

    read = await served.post("query($id: ID!) { user(userId: $id) { userId } }", {"id": user_id})
    write = await served.post(follow, {"id": user_id}, as_user="a")

    assert read.json()["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "argument": "userId"}
    assert write.json()["data"]["follow"] == {
        "changed": False,
        "errors": [{"code": "INVALID_INPUT", "field": ["input", "userId"]}],
    }
    assert await full_dump(served.store.redis) == before


# Batches


async def test_batches_are_refused_by_default(served: Served) -> None:
    response = await served.client.post(
        "/graphql",
        json=[{"query": "{ __typename }"}, {"query": "{ __typename }"}],
        headers={"accept": GRAPHQL_RESPONSE},
    )

    refused(response, "BAD_REQUEST")


async def test_a_batch_within_max_batch_runs_each_operation(
    real_redis: aioredis.Redis, settings: Settings
) -> None:
    async with serve(replace(settings, max_batch=3), real_redis) as batching:
        await batching.register("a")
        two = await batching.client.post(
            "/graphql",
            json=[{"query": '{ user(userId: "a") { userId } }'}, {"query": "{ __typename }"}],
        )
        four = await batching.client.post(
            "/graphql", json=[{"query": "{ __typename }"}] * 4, headers={"accept": GRAPHQL_RESPONSE}
        )
        limits = await batching.client.post("/graphql", json=[{"query": TOO_COMPLEX}, {"query": aliases(31)}])

    assert two.status_code == 200
    assert two.json() == [{"data": {"user": {"userId": "a"}}}, {"data": {"__typename": "Query"}}]
    error = refused(four, "BAD_REQUEST")
    assert "1 to 3 operations, got 4" in error["message"]
    # Every operation of a batch meets the limits on its own.
    assert [body["errors"][0]["extensions"]["code"] for body in limits.json()] == [
        "QUERY_TOO_COMPLEX",
        "TOO_MANY_ALIASES",
    ]
    assert all("data" not in body for body in limits.json())


async def test_each_follow_in_a_batch_counts_for_the_rate_limit(
    real_redis: aioredis.Redis, settings: Settings
) -> None:
    follow = "mutation($id: ID!) { follow(input: {userId: $id}) { changed errors { code } } }"
    async with serve(replace(settings, max_batch=3, follow_rate_limit="2/minute"), real_redis) as batching:
        await batching.register("me", "t0", "t1", "t2")
        response = await batching.client.post(
            "/graphql",
            json=[{"query": follow, "variables": {"id": f"t{i}"}} for i in range(3)],
            headers=batching.auth("me"),
        )
        following = await real_redis.zrange(batching.store.keys.following("me"), 0, -1)

    assert response.status_code == 200
    payloads = [body["data"]["follow"] for body in response.json()]
    assert payloads == [
        {"changed": True, "errors": []},
        {"changed": True, "errors": []},
        {"changed": False, "errors": [{"code": "RATE_LIMITED"}]},
    ]
    assert sorted(following) == ["t0", "t1"]


# Production switches


def production_settings(settings: Settings) -> Settings:
    production = Settings.from_env(
        environ={
            "FOLLOWGRAPH_PRODUCTION": "1",
            "FOLLOWGRAPH_JWT_SECRET": TEST_SECRET,
            "FOLLOWGRAPH_DATA_DIR": str(settings.data_dir),
        }
    )
    assert (production.graphiql, production.introspection, production.suggestions) == (False, False, False)
    return production


BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


async def test_production_serves_no_graphiql(real_redis: aioredis.Redis, settings: Settings) -> None:
    async with serve(production_settings(settings), real_redis) as production:
        response = await production.client.get("/graphql", headers={"accept": BROWSER})

    assert response.status_code == 400
    assert not response.headers["content-type"].startswith("text/html")
    assert "<html" not in response.text.lower()
    assert "graphiql" not in response.text.lower()


@pytest.mark.parametrize(
    "document",
    [
        "{ __schema { types { name } } }",
        '{ __type(name: "User") { fields { name } } }',
        "{ viewer { userId } __schema { queryType { name } } }",
        "query { ...I } fragment I on Query { __schema { mutationType { fields { name } } } }",
    ],
    ids=["schema", "type", "mixed", "in-fragment"],
)
async def test_production_refuses_introspection(
    real_redis: aioredis.Redis, settings: Settings, document: str
) -> None:
    async with serve(production_settings(settings), real_redis) as production:
        response = await production.post(document)
        get = await production.client.get("/graphql", params={"query": document})

    error = refused(response, "GRAPHQL_VALIDATION_FAILED", several=True)
    assert "introspection" in error["message"].lower()
    assert "data" not in get.json()
    assert "introspection" in get.json()["errors"][0]["message"].lower()


# Each document misspells a name of the schema: development answers with "Did you mean";
# production must not, or the schema can be read back without introspection.
MISSPELLED = [
    ("{ viewer { userI } }", None),
    ("{ vewer { userId } }", None),
    ('{ user(userI: "a") { userId } }', None),
    ("{ viewer { fans(frist: 1) { totalCount } } }", None),
    ("{ viewer { ... on Usr { userId } } }", None),
    ('mutation { follow(input: {userI: "a"}) { changed } }', None),
    ("mutation($i: FollowInput!) { follow(input: $i) { changed } }", {"i": {"userI": "a"}}),
    ("query($r: Relationshp) { viewer { userId } }", None),
]


@pytest.mark.parametrize(
    ("document", "variables"),
    MISSPELLED,
    ids=[
        "field",
        "root-field",
        "argument",
        "connection-argument",
        "type",
        "input-field",
        "variable",
        "variable-type",
    ],
)
async def test_production_gives_no_suggestions(
    real_redis: aioredis.Redis, settings: Settings, document: str, variables: dict[str, Any] | None
) -> None:
    async with serve(production_settings(settings), real_redis) as production:
        answer = await production.post(document, variables, as_user="a")
    async with serve(settings, real_redis) as development:
        hinted = await development.post(document, variables, as_user="a")

    assert answer.status_code == 400
    assert "Did you mean" in hinted.text
    assert "Did you mean" not in answer.text, answer.json()["errors"]


# Mutations only over POST with a JSON body (the basic cases are in tests/transport/test_graphql_http.py)

FOLLOW_B = 'mutation { follow(input: {userId: "b"}) { changed } }'


async def test_a_mutation_cannot_ride_on_a_get_or_head(served: Served) -> None:
    await served.register("a", "b")
    before = await full_dump(served.store.redis)
    document = "query Q { __typename } " + FOLLOW_B.replace("mutation", "mutation M")

    chosen = await served.client.get(
        "/graphql", params={"query": document, "operationName": "M"}, headers=served.auth("a")
    )
    head = await served.client.head("/graphql", params={"query": FOLLOW_B}, headers=served.auth("a"))

    assert chosen.status_code == 405
    assert "POST" in chosen.headers["allow"]
    assert head.status_code == 405
    assert await full_dump(served.store.redis) == before


@pytest.mark.parametrize(
    ("content_type", "content"),
    [
        ("text/json", json.dumps({"query": FOLLOW_B})),
        ("application/json-patch+json", json.dumps({"query": FOLLOW_B})),
        ("application/jsonp", json.dumps({"query": FOLLOW_B})),
        ("application/x-www-form-urlencoded", "query=" + FOLLOW_B),
        (
            "multipart/form-data; boundary=b",
            f'--b\r\nContent-Disposition: form-data; name="query"\r\n\r\n{FOLLOW_B}\r\n--b--',
        ),
    ],
)
async def test_a_mutation_in_the_url_of_a_non_json_post_is_not_run(
    served: Served, content_type: str, content: str
) -> None:
    # What a cross-site form can send: a "simple" content type, the operation in the URL or the body.
    await served.register("a", "b")
    before = await full_dump(served.store.redis)

    response = await served.client.post(
        "/graphql",
        params={"query": FOLLOW_B},
        content=content,
        headers={"content-type": content_type, **served.auth("a")},
    )

    assert response.status_code == 415
    assert response.json()["errors"][0]["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert await full_dump(served.store.redis) == before


async def test_a_json_post_ignores_an_operation_in_the_url(served: Served) -> None:
    await served.register("a", "b")
    before = await full_dump(served.store.redis)

    response = await served.client.post(
        "/graphql",
        params={"query": FOLLOW_B},
        json={},
        headers={"accept": GRAPHQL_RESPONSE, **served.auth("a")},
    )

    refused(response, "BAD_REQUEST")
    assert await full_dump(served.store.redis) == before


# CORS

APP_ORIGIN = "https://app.example"


def preflight(origin: str) -> dict[str, str]:
    return {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }


async def test_cors_allows_only_the_configured_origins(
    real_redis: aioredis.Redis, settings: Settings
) -> None:
    async with serve(replace(settings, cors_origins=(APP_ORIGIN,)), real_redis) as app:
        allowed = await app.client.options("/graphql", headers=preflight(APP_ORIGIN))
        other = await app.client.options("/graphql", headers=preflight("https://evil.example"))
        null = await app.client.options("/graphql", headers=preflight("null"))
        simple = await app.client.post(
            "/graphql", json={"query": "{ __typename }"}, headers={"origin": APP_ORIGIN}
        )
        cross = await app.client.post(
            "/graphql", json={"query": "{ __typename }"}, headers={"origin": "https://evil.example"}
        )

    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == APP_ORIGIN
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in allowed.headers
    for refused_preflight in (other, null):
        assert "access-control-allow-origin" not in refused_preflight.headers
        assert refused_preflight.status_code >= 400
    assert simple.headers["access-control-allow-origin"] == APP_ORIGIN
    assert "access-control-allow-origin" not in cross.headers


async def test_no_cors_headers_without_configured_origins(served: Served) -> None:
    responses = [
        await served.client.options("/graphql", headers=preflight(APP_ORIGIN)),
        await served.client.post(
            "/graphql", json={"query": "{ __typename }"}, headers={"origin": APP_ORIGIN}
        ),
        await served.client.get(
            "/graphql", params={"query": "{ __typename }"}, headers={"origin": APP_ORIGIN}
        ),
    ]

    for response in responses:
        assert not [name for name in response.headers if name.lower().startswith("access-control-")]


# Body size


async def test_a_body_past_a_configured_limit_is_413_and_writes_nothing(
    real_redis: aioredis.Redis, settings: Settings
) -> None:
    async with serve(replace(settings, max_body_bytes=2048, max_batch=10), real_redis) as small:
        await small.register("a", "b")
        before = await full_dump(real_redis)
        padded = await small.post(FOLLOW_B + " " * 2048, as_user="a")
        batch = await small.client.post("/graphql", json=[{"query": FOLLOW_B}] * 40, headers=small.auth("a"))
        after = await full_dump(real_redis)
        fits = await small.post(FOLLOW_B, as_user="a")

    for response in (padded, batch):
        assert response.status_code == 413
        assert response.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    assert after == before
    assert fits.json() == {"data": {"follow": {"changed": True}}}


# Request timeout


async def test_a_request_past_the_timeout_is_503_and_the_server_goes_on(
    real_redis: aioredis.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stuck(self: FollowStore, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(5)
        raise AssertionError("not cancelled")

    async with serve(replace(settings, request_timeout=0.2), real_redis) as app:
        await app.register("a")
        monkeypatch.setattr(FollowStore, "facts", stuck)
        started = time.perf_counter()
        response = await app.post('{ user(userId: "a") { userId } }', accept=None)
        elapsed = time.perf_counter() - started
        meanwhile = await app.post("{ __typename }")
        monkeypatch.undo()
        after = await app.post('{ user(userId: "a") { userId } }')

    assert response.status_code == 503
    assert response.json() == {
        "errors": [
            {
                "message": "The request did not finish within 0.2 s and was cancelled.",
                "extensions": {"code": "REQUEST_TIMEOUT"},
            }
        ]
    }
    assert elapsed < 2
    assert accepted(meanwhile) == {"__typename": "Query"}
    assert accepted(after) == {"user": {"userId": "a"}}


async def test_concurrent_stuck_requests_all_time_out(
    real_redis: aioredis.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stuck(self: FollowStore, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(5)

    async with serve(replace(settings, request_timeout=0.2), real_redis) as app:
        monkeypatch.setattr(FollowStore, "facts", stuck)
        started = time.perf_counter()
        responses: list[httpx.Response] = await asyncio.gather(
            *(app.post(f'{{ user(userId: "u{i}") {{ userId }} }}') for i in range(10))
        )
        elapsed = time.perf_counter() - started

    assert [r.status_code for r in responses] == [503] * 10
    assert elapsed < 2


# Shape before validation: a document made to produce many errors gets one


async def test_directive_overloading_is_refused_by_its_shape_before_validation(served: Served) -> None:
    # Ten unknown directives: validation would report each; the directive limit refuses the
    # document first, with one error.
    response = await served.post("query { __typename @aa@aa@aa@aa@aa@aa@aa@aa@aa@aa }")
    refused(response, "TOO_MANY_DIRECTIVES")


async def test_validation_stops_after_max_errors(served: Served) -> None:
    unknown = " ".join(f"f{i}" for i in range(50))
    body = (await served.post(f"{{ viewer {{ {unknown} }} }}")).json()
    errors = body["errors"]
    most = QueryLimits().max_errors
    assert len(errors) == most + 1
    assert errors[-1]["message"] == f"Too many errors: only the first {most} are reported."
    assert {e["extensions"]["code"] for e in errors} == {"GRAPHQL_VALIDATION_FAILED"}


async def test_variables_past_max_errors_get_max_errors_and_one_more(served: Served) -> None:
    # graphql-core stops coercing variables after 50 errors of its own; the cap is the setting's.
    names = [f"v{i}" for i in range(200)]
    declared = ", ".join(f"${name}: Boolean!" for name in names)
    used = " ".join(f"__typename @include(if: ${name})" for name in names)
    response = await served.post(
        f"query Q({declared}) {{ {used} }}", variables=dict.fromkeys(names, "not a boolean")
    )

    error = refused(response, "BAD_USER_INPUT", several=True)
    errors = response.json()["errors"]
    most = QueryLimits().max_errors
    assert len(errors) == most + 1
    assert "Boolean cannot represent" in error["message"]
    assert errors[-1]["message"] == f"Too many errors: only the first {most} are reported."


async def test_resolver_errors_past_max_errors_get_max_errors_and_one_more(
    real_redis: aioredis.Redis, settings: Settings
) -> None:
    # Every aliased field fails on its own (a malformed id): one error each.
    fields = " ".join(f'a{i}: user(userId: "") {{ userId }}' for i in range(8))
    async with serve(replace(settings, max_errors=3), real_redis) as strict:
        body = (await strict.post(f"{{ {fields} }}")).json()

    assert len(body["errors"]) == 3 + 1, body
    assert body["errors"][-1]["message"] == "Too many errors: only the first 3 are reported."
    assert "data" in body
