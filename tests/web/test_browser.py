"""The web app and GraphiQL in headless Chromium (web/tests/browser/run.mjs): no request leaves
127.0.0.1, GraphiQL runs a query with the demo token and a viewerEvents subscription over WebSocket
that shows a follow made over HTTP, the app pages fans and follows one, asks a locked account
(Requested, withdrawn), answers requests, blocks and mutes, turns Follow off for a user who blocks
the viewer, fits a 390px-wide screen, keeps the picked demo user across a reload, offers a Retry
while the server is out of reach, and shows another browser context's follow as a toast and a
new-fans badge without a reload; the browser logs no error (a missing favicon, say)."""

from __future__ import annotations

from pathlib import Path

from tests.web.conftest import DemoServer, run_node


def test_app_and_graphiql_in_chromium(
    node: str, chromium: str, demo_server: DemoServer, tmp_path: Path
) -> None:
    env = {"FOLLOWGRAPH_URL": demo_server.url, "CHROMIUM": chromium, "SCREENSHOTS": str(tmp_path)}
    run_node([node, "tests/browser/run.mjs"], env, timeout=180)
    shots = (
        "app.png",
        "app-requests.png",
        "app-muted.png",
        "app-live.png",
        "app-390.png",
        "app-390-blocked.png",
        "app-unreachable.png",
    )
    for name in (*shots, "graphiql.png", "graphiql-subscription.png"):
        assert (tmp_path / name).stat().st_size > 10_000, name
