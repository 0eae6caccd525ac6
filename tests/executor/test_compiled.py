"""Compiled plans answer exactly as the general executor does, with the same Redis round trips.

Every case runs on two apps over the same data: one with compiled plans (the default) and one
without. The first app answers each document once through the general executor (and compiles
it), then again from its plan; all three answers must be identical, byte for byte. Cases that make
the plan stop (bad ids, cursors, sizes, variables) must give the general executor's error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from graphql import GraphQLObjectType, get_named_type
from redis.exceptions import ConnectionError as RedisConnectionError

from followgraph.executor.compiler import NotCompilable, compile_document
from followgraph.executor.execute import Executor
from followgraph.executor.plan import Plan
from followgraph.schema import schema
from followgraph.schema import user as declarations
from followgraph.schema.declared import Values
from followgraph.schema.document import core_schema
from followgraph.schema.limits import QueryLimits
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.store.redis.lua import Client
from followgraph.transport.auth import mint_token
from tests.served import serve

USERS = ["ann", "bob", "cat", "dan", "eve", "fay", "gus"]
FOLLOWS = [
    ("ann", "bob"), ("bob", "ann"), ("cat", "ann"), ("dan", "ann"), ("eve", "ann"), ("fay", "ann"),
    ("ann", "cat"), ("bob", "cat"), ("eve", "bob"), ("ann", "fay"), ("fay", "bob"),
]  # fmt: skip


async def add_controls(store: FollowStore) -> None:
    """Blocks, mutes, locks, hidden lists and requests, so that every new flag and hidden list shows."""
    await store.update_settings("cat", locked=True)  # ann and bob are fans, eve is not
    await store.update_settings("fay", hide_following=True)
    await store.update_settings("gus", locked=True)
    await store.follow(follower="ann", followee="gus")  # a request
    await store.follow(follower="eve", followee="cat")  # a request
    await store.block(blocker="dan", blocked="eve")
    await store.mute(muter="ann", muted="cat")


def _leaves() -> list[str]:
    """The declared User values that are not objects (plans leave objects to the general executor)."""
    user = core_schema(schema).type_map["User"]
    assert isinstance(user, GraphQLObjectType)
    names = declarations.USER.by_name
    return [n for n in names if not isinstance(get_named_type(user.fields[n].type), GraphQLObjectType)]


# Every declared User value: a new field is in the differential documents without an edit here.
USER_FIELDS = " ".join(["__typename", *_leaves()])
EDGES = f"edges {{ __typename cursor followedAt relationship node {{ {USER_FIELDS} }} }}"
PAGE_INFO = "pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor }"
EVERYTHING = f"__typename totalCount hidden {EDGES} nodes {{ userId name relationship }} {PAGE_INFO}"

COMPILABLE: list[tuple[str, str, dict[str, Any]]] = [
    (
        "the benchmark's page",
        "query Fans($userId: ID!, $first: Int) { user(userId: $userId) { fans(first: $first) "
        "{ edges { cursor followedAt relationship node { userId name } } } } }",
        {"userId": "ann", "first": 3},
    ),
    ("every field", f'{{ user(userId: "ann") {{ {USER_FIELDS} fans {{ {EVERYTHING} }} }} }}', {}),
    (
        "lists hidden from some viewers",
        "query Hidden($locked: ID!, $hiding: ID!, $blocking: ID!) { "
        f"locked: user(userId: $locked) {{ {USER_FIELDS} fans {{ {EVERYTHING} }} following {{ hidden }} }} "
        f"hiding: user(userId: $hiding) {{ following {{ {EVERYTHING} }} mutuals {{ hidden totalCount }} }} "
        f"blocking: user(userId: $blocking) {{ {USER_FIELDS} "
        "fans { hidden totalCount nodes { userId } } } }",
        {"locked": "cat", "hiding": "fay", "blocking": "dan"},
    ),
    (
        "three lists and the viewer",
        f"{{ __typename viewer {{ {USER_FIELDS} following(first: 2) {{ {EVERYTHING} }} "
        f"fans(last: 2) {{ totalCount {EDGES} }} mutuals {{ nodes {{ userId }} }} }} }}",
        {},
    ),
    (
        "aliases and two roots",
        "query Two($a: ID!) { me: viewer { who: userId } them: user(userId: $a) { n: name "
        "first: fans(first: 1) { total: totalCount e: edges { c: cursor u: node { i: userId } } } "
        "rest: fans(first: 10) { totalCount } } }",
        {"a": "ann"},
    ),
    (
        "fragments",
        'query F { user(userId: "bob") { ...U fans(first: 5) { ...C } } } '
        "fragment U on User { userId ... on User { name relationship } } "
        "fragment C on FollowConnection { totalCount edges { node { ...U } } pageInfo { endCursor } }",
        {},
    ),
    ("an unknown user", '{ user(userId: "nobody") { userId fans { totalCount } } }', {}),
    (
        "no token needed",
        '{ user(userId: "ann") { relationship fans(first: 0) { totalCount edges { cursor } } } }',
        {},
    ),
    (
        "an empty list",
        '{ user(userId: "dan") { following { totalCount } mutuals { edges { cursor } } } }',
        {},
    ),
    (
        "variables with defaults",
        'query D($n: Int = 2) { user(userId: "ann") { fans(first: $n) { totalCount edges { cursor } } } }',
        {},
    ),
]

# Documents that compile but whose request makes the plan stop: the general executor's error.
FAILING: list[tuple[str, str, dict[str, Any]]] = [
    ("a malformed id", "query Q($u: ID!) { user(userId: $u) { name } }", {"u": "no spaces allowed"}),
    (
        "a page too large",
        'query Q($n: Int) { user(userId: "ann") { fans(first: $n) { totalCount } } }',
        {"n": 500},
    ),
    (
        "a negative page",
        'query Q($n: Int) { user(userId: "ann") { fans(last: $n) { totalCount } } }',
        {"n": -1},
    ),
    (
        "a bad cursor",
        'query Q($c: String) { user(userId: "ann") { fans(after: $c) { totalCount } } }',
        {"c": "nonsense"},
    ),
    (
        "a wrong variable type",
        'query Q($n: Int) { user(userId: "ann") { fans(first: $n) { totalCount } } }',
        {"n": "x"},
    ),
    ("a missing variable", "query Q($u: ID!) { user(userId: $u) { name } }", {}),
]

NOT_COMPILED = [
    '{ user(userId: "ann") { fans { edges { node { fans { totalCount } } } } } }',
    '{ user(userId: "ann") { name @include(if: true) } }',
    '{ user(userId: "ann") { newFansCount } }',
    '{ users(userIds: ["ann"]) { name } }',
    '{ user(userId: "ann") { commonFollowing(userId: "bob") { totalCount } } }',
    '{ user(userId: "ann") { fans { totalCount } fans { totalCount } } }',
    'mutation { follow(input: {userId: "ann"}) { changed user { fans { totalCount } } } }',
    'mutation { unfollow(input: {userId: "no"}) { changed } b: unfollow(input: {userId: "x"}) { changed } }',
    'mutation { mute(input: {userId: "nobody"}) { changed errors { code } } }',
    "{ __schema { queryType { name } } }",
]


@dataclass
class Apps:
    compiled: httpx.AsyncClient
    general: httpx.AsyncClient
    executor: Executor
    settings: Settings

    def plan_only(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """From now on the compiled app may not use the general executor."""

        async def refuse(*args: object) -> None:
            raise AssertionError("the general executor ran")

        monkeypatch.setattr(self.executor, "_general", refuse)

    async def ask(
        self, client: httpx.AsyncClient, query: str, variables: dict[str, Any], viewer: str | None
    ) -> tuple[int, Any]:
        headers = {}
        if viewer is not None:
            headers["authorization"] = f"Bearer {mint_token(self.settings.auth_config(), viewer)}"
        response = await client.post(
            "/graphql", json={"query": query, "variables": variables}, headers=headers
        )
        return response.status_code, _without_request_ids(response.json())


def _without_request_ids(body: Any) -> Any:
    for error in body.get("errors", []) if isinstance(body, dict) else []:
        error.get("extensions", {}).pop("requestId", None)
    return body


@pytest.fixture
async def apps(served_redis: Client, settings: Settings) -> AsyncIterator[Apps]:
    store = FollowStore(served_redis)
    for user in USERS:
        await store.upsert_user(user, name=f"User {user}", avatar_url=f"https://a.example/{user}.png")
    for i, (a, b) in enumerate(FOLLOWS):
        await store.follow(follower=a, followee=b, at=1_700_000_000_000 + i * 1000)
    await add_controls(store)
    async with (
        serve(settings, served_redis) as compiled,
        serve(replace(settings, compiled_queries=False), served_redis) as general,
    ):
        executor = compiled.app.state.endpoint.executor
        assert executor.plans is not None and general.app.state.endpoint.executor.plans is None
        yield Apps(compiled.client, general.client, executor, settings)


@pytest.mark.parametrize("viewer", ["ann", "eve", None])
@pytest.mark.parametrize(("case", "query", "variables"), COMPILABLE, ids=[c[0] for c in COMPILABLE])
async def test_a_plan_answers_as_the_general_executor(
    apps: Apps,
    case: str,
    query: str,
    variables: dict[str, Any],
    viewer: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = await apps.ask(apps.general, query, variables, viewer)
    assert expected[0] == 200 and "errors" not in expected[1], expected
    first = await apps.ask(apps.compiled, query, variables, viewer)
    assert apps.executor.plan(query, None) is not None, "the document should have compiled"
    apps.plan_only(monkeypatch)
    again = await apps.ask(apps.compiled, query, variables, viewer)
    assert first == expected
    assert again == expected


@pytest.mark.parametrize(("case", "query", "variables"), FAILING, ids=[c[0] for c in FAILING])
async def test_a_request_the_plan_cannot_answer_gets_the_general_error(
    apps: Apps, case: str, query: str, variables: dict[str, Any]
) -> None:
    good = {"u": "ann", "n": 1, "c": None}
    await apps.ask(apps.compiled, query, {k: v for k, v in good.items() if k in query}, "ann")
    assert apps.executor.plan(query, None) is not None
    expected = await apps.ask(apps.general, query, variables, "ann")
    assert "errors" in expected[1]
    assert await apps.ask(apps.compiled, query, variables, "ann") == expected


@pytest.mark.parametrize("query", NOT_COMPILED)
async def test_documents_beyond_the_plans_stay_with_the_general_executor(apps: Apps, query: str) -> None:
    expected = await apps.ask(apps.general, query, {}, "ann")
    assert await apps.ask(apps.compiled, query, {}, "ann") == expected
    assert apps.executor.plan(query, None) is None


def test_a_cost_limit_below_the_worst_case_is_checked_per_request() -> None:
    query = (
        'query Q($n: Int) { user(userId: "a") { fans(first: $n) { totalCount } following { totalCount } } }'
    )
    plans = [
        compile_document(core_schema(schema), query, None, QueryLimits(max_cost=c)) for c in (10_000, 150)
    ]
    assert [isinstance(plan, Plan) and plan.check_cost for plan in plans] == [False, True]


@pytest.mark.parametrize(
    ("selection", "columns"),
    [
        ("edges { cursor followedAt relationship node { userId name } }", True),
        ("totalCount pageInfo { endCursor } nodes { id avatarUrl createdAt isLocked }", True),
        ("edges { node { viewerIsFollowing isFollowingViewer viewerFollowedAt followedViewerAt } }", True),
        ("edges { __typename node { __typename } }", True),
        ("edges { node { userId followingCount } }", False),  # counts have no column form
        ("nodes { viewerBlocks }", False),
    ],
)
def test_a_page_whose_fields_all_have_columns_builds_from_them(selection: str, columns: bool) -> None:
    query = f'{{ user(userId: "a") {{ name fans(first: 5) {{ {selection} }} }} }}'
    plan = compile_document(core_schema(schema), query, None, QueryLimits())
    assert isinstance(plan, Plan) and plan.roots[0].plan is not None
    [connection] = plan.roots[0].plan.lists
    assert (connection.columns is not None) == columns


def test_documents_beyond_the_plans_are_recognised() -> None:
    for query in NOT_COMPILED:
        with pytest.raises(NotCompilable):
            compile_document(core_schema(schema), query, None, QueryLimits())


TWO_LISTS = 'query Two { user(userId: "ann") { name fans { totalCount } following { edges { cursor } } } }'


@pytest.mark.parametrize(
    ("query", "failing", "answered_by_plan"),
    [
        # Users' facts, as objects (FollowStore.facts) and in columns, are read by `columns`.
        (COMPILABLE[0][1], "columns", True),
        (COMPILABLE[0][1], "pages", True),
        (TWO_LISTS, "columns", True),  # the root's own read runs alone
        (TWO_LISTS, "pages", False),  # two lists read side by side: the general executor answers
    ],
)
async def test_redis_failing_under_a_plan_gives_the_general_executors_answer(
    apps: Apps, monkeypatch: pytest.MonkeyPatch, query: str, failing: str, answered_by_plan: bool
) -> None:
    variables = COMPILABLE[0][2] if "$" in query else {}
    await apps.ask(apps.compiled, query, variables, "ann")
    assert apps.executor.plan(query, None) is not None

    async def broken(*args: object, **kwargs: object) -> None:
        raise RedisConnectionError("Connection reset by peer")

    monkeypatch.setattr(FollowStore, failing, broken)
    if answered_by_plan:
        apps.plan_only(monkeypatch)
    expected = await apps.ask(apps.general, query, variables, "ann")
    assert expected[1]["data"] == {"user": None}
    assert {e["extensions"]["code"] for e in expected[1]["errors"]} == {"SERVICE_UNAVAILABLE"}
    assert await apps.ask(apps.compiled, query, variables, "ann") == expected


@pytest.mark.parametrize(
    "values",
    [declarations.USER, declarations.EDGE, declarations.CONNECTION, declarations.PAGE_INFO],
    ids=lambda v: v.type_name,
)
def test_every_field_of_the_types_plans_cover_is_declared(values: Values[Any]) -> None:
    # A plain field needs a declared value (both executors read it); anything else is an object
    # the plans build from its own declarations, or a field with a resolver of its own.
    graphql_type = core_schema(schema).type_map[values.type_name]
    assert isinstance(graphql_type, GraphQLObjectType)
    assert set(graphql_type.fields) == set(values.by_name) | values.composites
    composites = {
        "User": {
            "following",
            "fans",
            "mutuals",
            "commonFollowing",
            "fansYouFollow",
            "newFansCount",
            "followRequests",
            "sentFollowRequests",
            "blocking",
            "muting",
            "followRequestCount",
            "suggestions",
        },
        "FollowEdge": {"node"},
        "FollowConnection": {"edges", "nodes", "pageInfo"},
        "PageInfo": set(),
    }
    assert values.composites == composites[values.type_name]
