"""A user's own files: `GET /account/export/{following,followers,blocks,mutes}.csv` with the
user's bearer token, in Mastodon's CSV formats (store/graph/portability.py), streamed page by page
so that a million-fan list costs the server constant memory."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from followgraph.store.graph.portability import ExportedList, exported_csv
from followgraph.transport.auth import AuthConfig, AuthError, authenticate

_NO_STORE = {"cache-control": "no-store"}
_CHALLENGE = {**_NO_STORE, "www-authenticate": 'Bearer realm="followgraph"'}


class AccountExport:
    """The export endpoint, checking tokens with `auth`."""

    def __init__(self, auth: AuthConfig) -> None:
        self.auth = auth

    async def handle(self, request: Request) -> Response:
        try:
            which = ExportedList(request.path_params["name"])
        except ValueError:
            names = ", ".join(f"{w.value}.csv" for w in ExportedList)
            return JSONResponse({"error": f"No such export: there are {names}."}, 404, headers=_NO_STORE)
        try:
            principal = authenticate(request.headers.get("authorization"), self.auth)
        except AuthError as exc:
            return JSONResponse({"error": exc.reason}, 401, headers=_CHALLENGE)
        if principal is None:
            message = "Exports are the user's own: send 'Authorization: Bearer <JWT>'."
            return JSONResponse({"error": message}, 401, headers=_CHALLENGE)
        store = request.app.state.store
        return StreamingResponse(
            exported_csv(store, principal.user_id, which),
            media_type="text/csv; charset=utf-8",
            headers={**_NO_STORE, "content-disposition": f'attachment; filename="{which.file_name}"'},
        )


def account_routes(auth: AuthConfig) -> list[BaseRoute]:
    return [Route("/account/export/{name}.csv", AccountExport(auth).handle, methods=["GET"])]
