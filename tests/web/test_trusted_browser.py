"""The built web app against a server that runs only the app's own operations
(FOLLOWGRAPH_TRUSTED_DOCUMENTS=require, with the manifest the build writes into web/dist), in
headless Chromium (web/tests/browser/trusted.mjs): every query and mutation goes by its id alone,
the live events' subscription is one of the manifest's, and another document is refused."""

from __future__ import annotations

import pytest

from tests.web.conftest import DemoServer, run_node


@pytest.mark.timeout(180)
def test_the_app_sends_ids_alone_to_a_server_that_requires_trusted_documents(
    node: str, chromium: str, trusted_demo_server: DemoServer
) -> None:
    env = {"FOLLOWGRAPH_URL": trusted_demo_server.url, "CHROMIUM": chromium}
    run_node([node, "tests/browser/trusted.mjs"], env, timeout=150)
