"""The built front's files, each sent in the best encoding the browser accepts.

The build writes every text file also compressed beside it (`app-1a2b.js.br`, `app-1a2b.js.gz`:
web/vite.config.ts), once and at the highest levels. A request picks one by its Accept-Encoding, so
nothing is compressed while serving, and /graphql's answers pass through no compression layer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from mimetypes import guess_type
from pathlib import Path

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.staticfiles import NotModifiedResponse

# The encodings the build writes and the suffix of each file, the preferred first (brotli's files
# are 10 to 20% smaller than gzip's).
ENCODINGS = {"br": ".br", "gzip": ".gz"}
# Hashed names change with their content: a browser keeps them for a year without asking again.
IMMUTABLE = "public, max-age=31536000, immutable"
# The pages name the hashed files: a browser asks whether they changed on every load (a 304 when not).
REVALIDATE = "no-cache"


def accepted_encodings(header: str) -> list[str]:
    """The encodings of ENCODINGS that an Accept-Encoding header accepts, the most wanted first."""
    weights: dict[str, float] = {}
    for item in header.split(","):
        coding, *params = item.split(";")
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        coding = coding.strip().lower()
        weights["gzip" if coding == "x-gzip" else coding] = weight
    anything = weights.get("*", 0.0)
    ranked = sorted(ENCODINGS, key=lambda coding: -weights.get(coding, anything))  # stable: ties keep order
    return [coding for coding in ranked if weights.get(coding, anything) > 0]


@dataclass(frozen=True, slots=True)
class BuiltFile:
    """A file of the build, and the encodings it was also written in."""

    path: Path
    media_type: str
    encodings: frozenset[str]

    @classmethod
    def at(cls, path: Path) -> BuiltFile:
        media_type = guess_type(path.name)[0] or "application/octet-stream"
        beside = {coding: path.with_name(path.name + suffix) for coding, suffix in ENCODINGS.items()}
        return cls(path, media_type, frozenset(coding for coding, file in beside.items() if file.is_file()))

    def response(self, request_headers: Headers, *, cache_control: str) -> Response:
        """The file in the best encoding `request_headers` accept, or a 304 when their ETag is current."""
        headers = {"cache-control": cache_control}
        path = self.path
        if self.encodings:
            headers["vary"] = "Accept-Encoding"
            for coding in accepted_encodings(request_headers.get("accept-encoding", "")):
                if coding in self.encodings:
                    headers["content-encoding"] = coding
                    path = path.with_name(path.name + ENCODINGS[coding])
                    break
        try:
            stat = os.stat(path)
        except FileNotFoundError:  # the build was replaced while serving
            return PlainTextResponse("Not Found", status_code=404)
        response = FileResponse(path, headers=headers, media_type=self.media_type, stat_result=stat)
        if _current(request_headers.get("if-none-match"), response.headers["etag"]):
            return NotModifiedResponse(response.headers)
        return response


def _current(if_none_match: str | None, etag: str) -> bool:
    if if_none_match is None:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


class BuiltAssets:
    """GET /assets/{name}: the files of a build's assets/ folder, as found at start, cached for a year.

    Only names found at start are served, so no path from a request reaches the file system.
    """

    def __init__(self, directory: Path) -> None:
        suffixes = tuple(ENCODINGS.values())
        self.files = {
            path.relative_to(directory).as_posix(): BuiltFile.at(path)
            for path in sorted(directory.rglob("*"))
            if path.is_file() and not (path.suffix in suffixes and path.with_suffix("").is_file())
        }

    async def handle(self, request: Request) -> Response:
        found = self.files.get(request.path_params["name"])
        if found is None:
            return PlainTextResponse("Not Found", status_code=404)
        return found.response(request.headers, cache_control=IMMUTABLE)
