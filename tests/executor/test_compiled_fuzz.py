"""Generated documents of the shapes plans cover, with random fields, aliases, fragments, page sizes
and viewers: the compiled app answers each, the second time from its plan, exactly as an app
without plans does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, Phase, given, note
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from followgraph.executor.execute import Executor
from followgraph.executor.plan import Plan
from followgraph.schema.user import USER
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.transport.auth import mint_token
from tests.conftest import TEST_SECRET, clean_redis
from tests.served import serve

USERS = [f"u{i}" for i in range(8)]
FOLLOWS = [(a, b) for i, a in enumerate(USERS) for b in USERS[i + 1 :: 2]] + [("u7", "u0"), ("u5", "u1")]

SETTINGS = hypothesis_settings(
    max_examples=200,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def _fields(draw: st.DrawFn, names: list[str], max_size: int) -> str:
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=max_size, unique=True))
    out = [
        f"x_{name.split()[0].strip('_')}: {name}" if draw(st.integers(0, 4)) == 0 else name for name in chosen
    ]
    if draw(st.integers(0, 5)) == 0:
        out.append(chosen[0])  # the same field again, which GraphQL merges
    return " ".join(out)


def fields(names: list[str], *, max_size: int = 4) -> st.SearchStrategy[str]:
    """A few of `names`, some aliased, now and then one of them twice."""
    return _fields(names, max_size)


# Objects among the values (settings) with a selection of their own.
SUBSELECTIONS = {"settings": "settings { locked hideFollowing hideFans }"}
USER_FIELDS = fields(["__typename", *(SUBSELECTIONS.get(n, n) for n in sorted(USER.by_name))])
# The fields with a column form (schema/declared.py), so that many pages are built from columns.
COLUMN_FIELDS = fields(["__typename", *(n for n, v in sorted(USER.by_name.items()) if v.column is not None)])


@st.composite
def connection(draw: st.DrawFn, users: st.SearchStrategy[str] | None = None) -> str:
    name = draw(st.sampled_from(["following", "fans", "mutuals"]))
    # Now and then a size or cursor the plan must leave to the general executor's error.
    size = draw(st.one_of(st.none(), st.integers(0, 5), st.integers(0, 5), st.sampled_from([-1, 100, 101])))
    arguments = [] if size is None else [f"{draw(st.sampled_from(['first', 'first', 'last']))}: {size}"]
    if draw(st.integers(0, 9)) == 0:
        arguments.append('after: "junk"')
    edge = fields(["cursor", "followedAt", "relationship", "__typename", "node { NODE }"])
    if users is None:
        users = draw(st.sampled_from([USER_FIELDS, COLUMN_FIELDS]))
    parts = [
        "totalCount",
        "hidden",
        "__typename",
        f"edges {{ {draw(edge).replace('NODE', draw(users))} }}",
        f"nodes {{ {draw(users)} }}",
        "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }",
    ]
    chosen = draw(st.lists(st.sampled_from(parts), min_size=1, max_size=3, unique=True))
    args = f"({', '.join(arguments)})" if arguments else ""
    return f"{name}{args} {{ {' '.join(chosen)} }}"


@st.composite
def document(draw: st.DrawFn) -> str:
    roots = []
    for alias in draw(st.lists(st.sampled_from(["", "r1: ", "r2: "]), min_size=1, max_size=2, unique=True)):
        lists = draw(st.lists(connection(), max_size=2))
        inner = draw(USER_FIELDS) + " " + " ".join(f"c{i}: {c}" for i, c in enumerate(lists))
        if draw(st.booleans()):
            inner = f"... on User {{ {inner} }}"
        target = draw(
            st.sampled_from([*(f'user(userId: "{u}")' for u in USERS[:4]), 'user(userId: "ghost")'])
        )
        roots.append(f"{alias}{draw(st.sampled_from([target, target, 'viewer']))} {{ {inner} }}")
    return "{ " + " ".join(roots) + " }"


@st.composite
def page_document(draw: st.DrawFn) -> str:
    """One root user and one of its lists, the users' fields among those with columns: the shape
    that reads its page's users in columns."""
    target = draw(
        st.sampled_from([*(f'user(userId: "{u}")' for u in USERS[:4]), 'user(userId: "ghost")', "viewer"])
    )
    return f"{{ {target} {{ {draw(USER_FIELDS)} {draw(connection(COLUMN_FIELDS))} }} }}"


@dataclass
class Pair:
    runner: asyncio.Runner
    compiled: httpx.AsyncClient
    general: httpx.AsyncClient
    executor: Executor
    settings: Settings
    stack: AsyncExitStack
    from_plans: int = 0
    from_columns: int = 0

    async def ask(self, client: httpx.AsyncClient, query: str, viewer: str | None) -> tuple[int, Any]:
        headers = {}
        if viewer is not None:
            headers["authorization"] = f"Bearer {mint_token(self.settings.auth_config(), viewer)}"
        response = await client.post("/graphql", json={"query": query}, headers=headers)
        body = response.json()
        for error in body.get("errors", []):
            error.get("extensions", {}).pop("requestId", None)
        return response.status_code, body

    async def compare(self, query: str, viewer: str | None) -> None:
        expected = await self.ask(self.general, query, viewer)
        note(f"{expected}")
        assert await self.ask(self.compiled, query, viewer) == expected
        plan = self.executor.plan(query, None)
        self.from_plans += plan is not None
        self.from_columns += (
            isinstance(plan, Plan)
            and not plan.batched
            and any(
                field.columns is not None for root in plan.roots if root.plan for field in root.plan.lists
            )
        )
        assert await self.ask(self.compiled, query, viewer) == expected

    def check_all(self, documents: st.SearchStrategy[str]) -> None:
        """Generated documents, each asked by a generated viewer, answered alike by both apps."""

        @SETTINGS
        @given(query=documents, viewer=st.sampled_from([None, "u0", "u1", "u5", "ghost"]))
        def check(query: str, viewer: str | None) -> None:
            self.runner.run(self.compare(query, viewer))

        check()


@contextmanager
def pair(redis_server: RedisServer, data_dir: Path) -> Iterator[Pair]:
    settings = Settings(data_dir=data_dir, jwt_secret=TEST_SECRET)
    with asyncio.Runner() as runner:

        async def start() -> Pair:
            stack = AsyncExitStack()
            client = await clean_redis(redis_server, stack)
            store = FollowStore(client)
            for user in USERS:
                await store.upsert_user(user, name=f"User {user}")
            for i, (a, b) in enumerate(FOLLOWS):
                await store.follow(follower=a, followee=b, at=1_700_000_000_000 + 1000 * (i % 5))
            # Lists hidden from some viewers, blocks, mutes and requests.
            await store.update_settings("u1", locked=True)
            await store.update_settings("u2", hide_following=True, hide_fans=True)
            await store.follow(follower="u6", followee="u1")
            await store.block(blocker="u3", blocked="u0")
            await store.mute(muter="u0", muted="u4")
            compiled = await stack.enter_async_context(serve(settings, client))
            general = await stack.enter_async_context(
                serve(replace(settings, compiled_queries=False), client)
            )
            executor = compiled.app.state.endpoint.executor
            return Pair(runner, compiled.client, general.client, executor, settings, stack)

        fixture = runner.run(start())
        try:
            yield fixture
        finally:
            runner.run(fixture.stack.aclose())


def test_generated_documents_answer_the_same_from_plans(redis_server: RedisServer, tmp_path: Path) -> None:
    with pair(redis_server, tmp_path / "data") as p:
        p.check_all(document())
        # Most generated documents compile: the comparison is about plans, not about fallbacks.
        assert p.from_plans >= 80, p.from_plans


def test_generated_pages_answer_the_same_from_columns(redis_server: RedisServer, tmp_path: Path) -> None:
    with pair(redis_server, tmp_path / "data") as p:
        p.check_all(page_document())
        # Documents that failed (a bad page size or cursor) or repeated one are not counted.
        assert p.from_columns >= 80, p.from_columns
