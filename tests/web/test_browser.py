"""The web app and GraphiQL in headless Chromium (web/tests/browser/run.mjs): no request leaves
127.0.0.1, GraphiQL runs a query with the demo token and a viewerEvents subscription over WebSocket
that shows a follow made over HTTP (and a bad token's reason, as a query shows it), the app pages
fans and follows one, asks a locked account (Requested, withdrawn), answers and withdraws requests,
blocks (after a question) and mutes, removes a fan, undoes an unfollow, changes its settings,
searches, restores the scroll position on Back, keeps its tabs on one row, fits 360 to 414px wide
screens, follows the ARIA tabs pattern with no serious axe violation, keeps the picked demo user
across a reload, offers a Retry while the server is out of reach, shows another browser
context's follow as a toast and a new-fans badge without a reload, and runs the account's lifecycle
(lists downloaded and uploaded as CSV with the import's report, deactivated and reactivated,
suspended by an admin mid-session, deleted after a typed confirmation); the browser logs no error.

FOLLOWGRAPH_SCREENSHOTS=web/screenshots keeps the screenshots there (the docs' images)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from followgraph.server.settings import Settings
from followgraph.transport.auth import mint_token
from tests.conftest import TEST_SECRET
from tests.web.conftest import DemoServer, run_node


# About thirty steps in one browser, a few of them at three phone widths: minutes, not seconds.
@pytest.mark.timeout(480)
def test_app_and_graphiql_in_chromium(
    node: str, chromium: str, demo_server: DemoServer, tmp_path: Path
) -> None:
    shots_dir = Path(os.environ.get("FOLLOWGRAPH_SCREENSHOTS") or tmp_path).resolve()
    # For suspendUser: the demo server signs with TEST_SECRET (tests/web/conftest.py).
    auth = Settings(data_dir=tmp_path / "auth", jwt_secret=TEST_SECRET).auth_config()
    env = {
        "FOLLOWGRAPH_URL": demo_server.url,
        "CHROMIUM": chromium,
        "SCREENSHOTS": str(shots_dir),
        "ADMIN_TOKEN": mint_token(auth, "admin", admin=True),
    }
    run_node([node, "tests/browser/run.mjs"], env, timeout=420)
    shots = (
        "app.png",
        "app-search.png",
        "app-search-page.png",
        "app-block.png",
        "app-settings.png",
        "app-phone.png",
        "app-phone-requests.png",
        "app-requests.png",
        "app-muted.png",
        "app-live.png",
        "app-390.png",
        "app-390-blocked.png",
        "app-unreachable.png",
        "app-account.png",
        "app-account-import.png",
        "app-deactivated.png",
        "app-suspended.png",
        "app-deleted.png",
        "app-phone-account.png",
        "app-phone-deactivated.png",
    )
    for name in (*shots, "graphiql.png", "graphiql-subscription.png"):
        assert (shots_dir / name).stat().st_size > 10_000, name
