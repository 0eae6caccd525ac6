"""Apollo Client and urql against a real server: relay-style paging and follow cache updates; and
viewerEvents subscriptions with the graphql-ws client and Apollo Client's GraphQLWsLink."""

from __future__ import annotations

from tests.web.conftest import DemoServer, run_node


def test_apollo_urql_and_subscription_suites(node: str, demo_server: DemoServer) -> None:
    vitest = "node_modules/vitest/vitest.mjs"
    args = [node, vitest, "run", "--config", "tests/clients/vitest.config.ts", "--reporter", "verbose"]
    run_node(args, {"FOLLOWGRAPH_URL": demo_server.url, "NO_COLOR": "1"}, timeout=120)
