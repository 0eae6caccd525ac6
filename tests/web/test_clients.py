"""Client libraries against a real server: Apollo Client and urql (relay-style paging and follow
cache updates), Apollo's persisted-query link, and viewerEvents subscriptions with graphql-ws and
Apollo's GraphQLWsLink."""

from __future__ import annotations

from tests.web.conftest import DemoServer, run_node

VITEST = ["node_modules/vitest/vitest.mjs", "run", "--config", "tests/clients/vitest.config.ts"]


def _vitest(node: str, demo_server: DemoServer, *files: str) -> None:
    args = [node, *VITEST, "--reporter", "verbose", *files]
    run_node(args, {"FOLLOWGRAPH_URL": demo_server.url, "NO_COLOR": "1"}, timeout=120)


def test_apollo_and_urql_suites(node: str, demo_server: DemoServer) -> None:
    _vitest(
        node,
        demo_server,
        "tests/clients/apollo.test.ts",
        "tests/clients/urql.test.ts",
        "tests/clients/persisted.test.ts",
    )


def test_subscription_suites(node: str, demo_server: DemoServer) -> None:
    _vitest(node, demo_server, "tests/clients/subscriptions-")
