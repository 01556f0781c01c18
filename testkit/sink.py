"""An internal service a run must never reach: it answers every request 404 with a body that names it, and
keeps each request, so a test can assert that nothing was sent to it and nothing of its answer came back."""

from __future__ import annotations

import threading

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from testkit.loopback import LoopbackServer

SINK_ANSWER = "sink: nothing here"


class InternalSink(LoopbackServer):
    """``requests`` lists ``METHOD /path`` of every request but its own health check."""

    label = "internal sink"

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._requests: list[str] = []

    @property
    def requests(self) -> list[str]:
        with self._lock:
            return list(self._requests)

    def build(self) -> Starlette:
        async def health(_: Request) -> Response:
            return JSONResponse({"ok": True})

        async def anything(request: Request) -> Response:
            with self._lock:
                self._requests.append(f"{request.method} {request.url.path}")
            return PlainTextResponse(SINK_ANSWER, status_code=404)

        methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]
        return Starlette(routes=[Route("/_health", health), Route("/{path:path}", anything, methods=methods)])
