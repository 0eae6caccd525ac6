"""The browser front: the web app at /, the bundled GraphiQL at /graphql, the demo token endpoint.

Both pages are built from the repository's `web/` project (`make web`, Node.js 20.19+) into
`web/dist`, and every script, style, font and worker they load comes from this server. Without a
build, / says how to make one and /graphql falls back to Strawberry's GraphiQL page (from a CDN).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from followgraph.store.graph.ids import is_valid_user_id
from followgraph.transport.auth import AuthConfig, mint_token

# The source tree's web/ project; an installed copy without it simply has no build.
WEB_PROJECT = Path(__file__).resolve().parent.parent / "web"
DEMO_TOKEN_TTL = timedelta(hours=12)
# Whom the demo's pages are signed in as unless they ask for another user (the demo graph gives
# this user follow requests, blocks and mutes to show: cli/demo.py).
DEMO_VIEWER = "42"
_NO_STORE = {"cache-control": "no-store"}

_NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>FollowGraph</title>
<style>body{{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;
line-height:1.5}}code{{background:#f1f3f5;padding:0 .25rem}}</style></head>
<body><h1>FollowGraph</h1>
<p>The web app is not built. {reason}</p>
<p>The API answers at <a href="/graphql">/graphql</a> (GraphiQL in a browser).</p>
</body></html>
"""


@dataclass(frozen=True, slots=True)
class WebBuild:
    """The built pages of `web/` (index.html, graphiql.html and their assets)."""

    dist: Path

    @classmethod
    def find(cls, dist: Path) -> WebBuild | None:
        """The build in `dist`, or None when it lacks either page."""
        if (dist / "index.html").is_file() and (dist / "graphiql.html").is_file():
            return cls(dist)
        return None

    def page(self, name: str) -> str:
        return (self.dist / name).read_text(encoding="utf-8")


def build_notice(dist: Path, build: WebBuild | None) -> str | None:
    """What to tell the operator at start when the front is not built; None when it is."""
    if build is not None:
        return None
    if shutil.which("node") is None:
        how = "No Node.js was found to build them (20.19+ needed; then `make web`)."
    else:
        how = f"`make web` builds them into {dist}."
    return (
        f"The web app and the offline GraphiQL are not built. {how} "
        "Until then / says so and /graphql serves GraphiQL from a CDN."
    )


def _not_built(reason: str) -> HTMLResponse:
    return HTMLResponse(_NOT_BUILT.format(reason=reason), status_code=503, headers=_NO_STORE)


class DemoTokens:
    """GET /demo/token?user=ID: a token of a registered user, for the demo's pages.

    Mounted only in demo mode (`serve --demo`), which production mode refuses. The token has no
    admin scope and lasts 12 hours; the user must be registered.
    """

    def __init__(self, auth: AuthConfig) -> None:
        self.auth = auth

    async def handle(self, request: Request) -> Response:
        requested = request.query_params.get("user")
        user_id = requested if requested is not None else DEMO_VIEWER
        if not is_valid_user_id(user_id):
            message = {"error": "`user` is not a valid user id."}
            return JSONResponse(message, status_code=400, headers=_NO_STORE)
        store = request.app.state.store
        found, first = await store.registered([user_id, "1"])
        if not found:
            if requested is not None:
                return JSONResponse(
                    {"error": f"There is no user {user_id} in the demo graph."},
                    status_code=422,
                    headers=_NO_STORE,
                )
            if not first:
                message = {"error": "The demo graph is not loaded: `followgraph demo` loads it."}
                return JSONResponse(message, status_code=503, headers=_NO_STORE)
            user_id = "1"  # a demo graph smaller than the default viewer's id
        expires = datetime.now(UTC) + DEMO_TOKEN_TTL
        token = mint_token(self.auth, user_id, ttl_seconds=int(DEMO_TOKEN_TTL.total_seconds()))
        body = {"token": token, "userId": user_id, "expiresAt": expires.isoformat(timespec="seconds")}
        return JSONResponse(body, headers=_NO_STORE)


def web_routes(build: WebBuild | None, *, demo_auth: AuthConfig | None) -> list[BaseRoute]:
    """/ and /assets from the build (or a page saying it is missing), and /demo/token in demo mode."""
    routes: list[BaseRoute] = []
    if build is None:
        reason = "It needs Node.js 20.19+: run <code>make web</code> (or <code>make run</code>)."

        async def index(request: Request) -> Response:
            return _not_built(reason)

    else:
        html = build.page("index.html")

        async def index(request: Request) -> Response:
            return HTMLResponse(html, headers={"cache-control": "no-cache"})

        routes.append(Mount("/assets", StaticFiles(directory=build.dist / "assets"), name="assets"))
    routes.append(Route("/", index, methods=["GET", "HEAD"]))
    if demo_auth is not None:
        routes.append(Route("/demo/token", DemoTokens(demo_auth).handle, methods=["GET"]))
    return routes
