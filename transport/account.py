"""A user's own files, with the user's bearer token:

- `GET /account/export/{following,followers,blocks,mutes}.csv`: the lists in Mastodon's CSV
  formats (store/graph/portability.py), streamed page by page, so that a million-fan list costs the
  server constant memory;
- `POST /account/import/{following,blocks,mutes}?mode=merge|overwrite` with such a file: checked
  whole first (400 for a file that is not UTF-8 CSV or names too many accounts), then applied in the
  background (202), one import at a time per user (409 while one runs);
- `GET /account/import`: the latest import's state and counts, and the rows it could not apply.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from followgraph.store import AccountState, FollowStore
from followgraph.store.graph.account_import import (
    IMPORTABLE,
    ImportFileError,
    ImportReport,
    Mode,
    addresses,
    import_list,
)
from followgraph.store.graph.portability import ExportedList, exported_csv
from followgraph.transport.auth import AuthConfig, AuthError, Principal, authenticate_async

log = logging.getLogger(__name__)

_NO_STORE = {"cache-control": "no-store"}
_CHALLENGE = {**_NO_STORE, "www-authenticate": 'Bearer realm="followgraph"'}
# A running import writes its counts at least this often; one silent for longer was cut short (a
# server stopped) and another may start.
HEARTBEAT_SECONDS = 30


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] = _NO_STORE) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers

    def response(self) -> Response:
        return JSONResponse({"error": self.message}, self.status, headers=self.headers)


class AccountFiles:
    """The export and import endpoints, checking tokens with `auth`; an import's file may be at
    most `max_bytes`."""

    def __init__(self, auth: AuthConfig, max_bytes: int) -> None:
        self.auth = auth
        self.max_bytes = max_bytes
        self._jobs: set[asyncio.Task[None]] = set()

    async def _principal(self, request: Request) -> Principal:
        try:
            principal = await authenticate_async(request.headers.get("authorization"), self.auth)
        except AuthError as exc:
            raise _Refused(401, exc.reason, _CHALLENGE) from None
        if principal is None:
            raise _Refused(401, "These are the user's own: send 'Authorization: Bearer <JWT>'.", _CHALLENGE)
        return principal

    async def export(self, request: Request) -> Response:
        try:
            which = _list(request.path_params["name"], tuple(ExportedList))
            user_id = await _existing(request, (await self._principal(request)).user_id, importing=False)
        except _Refused as refused:
            return refused.response()
        return StreamingResponse(
            exported_csv(request.app.state.store, user_id, which),
            media_type="text/csv; charset=utf-8",
            headers={**_NO_STORE, "content-disposition": f'attachment; filename="{which.file_name}"'},
        )

    async def start_import(self, request: Request) -> Response:
        try:
            which = _list(request.path_params["name"], IMPORTABLE)
            principal = await self._principal(request)
            mode = _mode(request.query_params.get("mode", "merge"))
            text = await self._text(request)
            rows, problems = addresses(text)
            user_id = await _existing(request, principal.user_id, importing=True)
        except _Refused as refused:
            return refused.response()
        except ImportFileError as exc:
            return JSONResponse({"error": str(exc)}, 400, headers=_NO_STORE)
        store: FollowStore = request.app.state.store
        key = store.keys.import_job(user_id)
        started = time.time()
        claimed = await _claim(store, key, started, which, mode, len(rows) + len(problems))
        if not claimed:
            message = "An import of this user's is running: GET /account/import says how far it is."
            return JSONResponse({"error": message}, 409, headers=_NO_STORE)
        job = asyncio.create_task(self._run(store, key, user_id, which, text, mode))
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        body = {
            "state": "running",
            "list": which.value,
            "mode": mode.value,
            "rows": len(rows) + len(problems),
        }
        return JSONResponse(body, 202, headers={**_NO_STORE, "location": "/account/import"})

    async def status(self, request: Request) -> Response:
        try:
            principal = await self._principal(request)
        except _Refused as refused:
            return refused.response()
        store: FollowStore = request.app.state.store
        fields = cast("dict[str, str]", await store.redis.hgetall(store.keys.import_job(principal.user_id)))
        if not fields:
            return JSONResponse({"error": "This user has imported nothing yet."}, 404, headers=_NO_STORE)
        return JSONResponse(_status(fields), headers=_NO_STORE)

    async def _text(self, request: Request) -> str:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > self.max_bytes:
                raise _Refused(413, f"The file exceeds {self.max_bytes} bytes.")
        try:
            return body.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise _Refused(400, "The file is not UTF-8 text.") from None

    async def _run(
        self, store: FollowStore, key: str, user_id: str, which: ExportedList, text: str, mode: Mode
    ) -> None:
        async def progress(report: ImportReport) -> None:
            await store.redis.hset(key, mapping=_counts(report))

        try:
            report = await import_list(store, user_id, which, text, mode, progress)
        except Exception:
            log.exception("the import of %s's %s failed", user_id, which.value)
            await store.redis.hset(key, mapping={"state": "failed", "finished": repr(time.time())})
            return
        await store.redis.hset(
            key, mapping={**_counts(report), "state": "done", "finished": repr(time.time())}
        )


async def _existing(request: Request, user_id: str, *, importing: bool) -> str:
    """`user_id`, whose account exists: one that is off may export (to leave with its lists), not
    import."""
    store: FollowStore = request.app.state.store
    state = await store.account_state(user_id)
    if state is None:
        raise _Refused(404, f"No user {user_id!r} is registered.")
    if importing and state is not AccountState.ACTIVE:
        raise _Refused(403, f"The account is {state.value.lower()}: it imports nothing until it is back on.")
    return user_id


def _list(name: str, allowed: tuple[ExportedList, ...]) -> ExportedList:
    try:
        which = ExportedList(name)
    except ValueError:
        which = None
    if which not in allowed:
        names = ", ".join(w.value for w in allowed)
        raise _Refused(404, f"No such list here: there are {names}.")
    return which


def _mode(value: str) -> Mode:
    try:
        return Mode(value)
    except ValueError:
        raise _Refused(
            400, "mode is merge (add to the list) or overwrite (the file becomes the list)."
        ) from None


async def _claim(
    store: FollowStore, key: str, now: float, which: ExportedList, mode: Mode, rows: int
) -> bool:
    """Record a new import in `key` unless one runs (its heartbeat fresh): whether it was recorded."""
    fields = await store.redis.hmget(key, ["state", "beat"])
    if fields[0] == "running" and now - float(fields[1] or 0) < HEARTBEAT_SECONDS:
        return False
    await store.redis.delete(key)
    start: dict[Any, Any] = {"state": "running", "list": which.value, "mode": mode.value, "rows": rows}
    await store.redis.hset(key, mapping={**start, "started": repr(now), "beat": repr(now)})
    return True


def _counts(report: ImportReport) -> dict[Any, Any]:
    problems = [{"line": p.line, "address": p.address, "reason": p.reason} for p in report.problems]
    return {
        "applied": report.applied,
        "failed": report.failed,
        "removed": report.removed,
        "problems": json.dumps(problems),
        "beat": repr(time.time()),
    }


def _status(fields: dict[str, str]) -> dict[str, Any]:
    state = fields.get("state", "failed")
    if state == "running" and time.time() - float(fields.get("beat", 0)) > HEARTBEAT_SECONDS:
        state = "interrupted"
    out: dict[str, Any] = {"state": state, "list": fields.get("list"), "mode": fields.get("mode")}
    for name in ("rows", "applied", "failed", "removed"):
        out[name] = int(fields.get(name, 0))
    out["problems"] = json.loads(fields.get("problems", "[]"))
    for name in ("started", "finished"):
        if name in fields:
            out[name] = int(float(fields[name]) * 1000)
    return out


def account_routes(auth: AuthConfig, *, max_bytes: int) -> list[BaseRoute]:
    files = AccountFiles(auth, max_bytes)
    return [
        Route("/account/export/{name}.csv", files.export, methods=["GET"]),
        Route("/account/import/{name}", files.start_import, methods=["POST"]),
        Route("/account/import", files.status, methods=["GET"]),
    ]
