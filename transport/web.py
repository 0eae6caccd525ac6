"""The browser front: the web app at /, the bundled GraphiQL at /graphql, the demo token endpoint.

Both pages are built from the repository's `web/` project (`make web`) into `web/dist`, which a
release wheel carries as package data, and every script, style, font and worker they load comes
from this server: the files under /assets/ in the best encoding the browser accepts, kept by it for
a year (transport/assets.py). Without a build, / and /graphql say how to make one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from followgraph.store.graph.ids import is_valid_user_id
from followgraph.transport.assets import REVALIDATE, BuiltAssets, BuiltFile
from followgraph.transport.auth import AuthConfig, mint_token
from followgraph.transport.demo_viewer import DEMO_VIEWER

# The source tree's web/ project, whose build is web/dist. A wheel carries that build at the same
# place beside the packages, as followgraph/web/dist (pyproject.toml's package data).
WEB_PROJECT = Path(__file__).resolve().parent.parent / "web"
# The web app's operations, which its build writes into web/dist (web/persisted-query-manifest.config.json):
# the manifest of trusted documents when none is named (FOLLOWGRAPH_TRUSTED_DOCUMENTS_FILE).
WEB_MANIFEST = "persisted-query-manifest.json"
DEMO_TOKEN_TTL = timedelta(hours=12)
_NO_STORE = {"cache-control": "no-store"}

_NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>FollowGraph</title>
<style>body{{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;
line-height:1.5}}code{{background:#f1f3f5;padding:0 .25rem}}</style></head>
<body><h1>FollowGraph</h1>
<p>{what} is not built. <code>make web</code> (or <code>make run</code>) builds it, with Node.js
20.19+, taken from PyPI into the virtualenv when the system has none.</p>
<p>The API answers at <a href="/graphql">/graphql</a>: POST a query as JSON.</p>
</body></html>
"""
# /graphql's page for browsers when the build is missing (transport/graphql_http.py).
GRAPHIQL_NOT_BUILT = _NOT_BUILT.format(what="GraphiQL")


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
    return (
        f"The web app and GraphiQL are not built: / and /graphql say so. `make web` builds them "
        f"into {dist} (with Node.js from PyPI when the system's is missing or older than 20.19)."
    )


def graphiql_page(build: WebBuild | None) -> str:
    """The page /graphql shows browsers: the bundled GraphiQL, or one saying it is not built."""
    return build.page("graphiql.html") if build is not None else GRAPHIQL_NOT_BUILT


def _not_built() -> HTMLResponse:
    return HTMLResponse(_NOT_BUILT.format(what="The web app"), status_code=503, headers=_NO_STORE)


class DemoTokens:
    """GET /demo/token?user=ID: a token of a registered user, for the demo's pages.

    Mounted only in demo mode (`serve --demo`), which production mode refuses. The token has no
    admin scope and lasts 12 hours; the user must be registered (an account that is off included).
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
        if not found and requested is not None:
            # An account that is off (deactivated, suspended) signs in too, to come back or leave.
            found = await store.account_state(user_id) is not None
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

        async def index(request: Request) -> Response:
            return _not_built()

    else:
        page = BuiltFile.at(build.dist / "index.html")

        async def index(request: Request) -> Response:
            return page.response(request.headers, cache_control=REVALIDATE)

        assets = BuiltAssets(build.dist / "assets")
        routes.append(Route("/assets/{name:path}", assets.handle, methods=["GET", "HEAD"], name="assets"))
    routes.append(Route("/", index, methods=["GET", "HEAD"]))
    if demo_auth is not None:
        routes.append(Route("/demo/token", DemoTokens(demo_auth).handle, methods=["GET"]))
    return routes
