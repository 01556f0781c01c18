"""A loopback webhook receiver: it keeps every JSON body POSTed to ``/hooks/<name>``, as a team's chat bot would.

``url(name)`` is where a schedule posts; ``received(name)`` the bodies that came, in order; ``wait_for(name,
count)`` waits until that many came. The server under test reaches it on 127.0.0.1, which the tests allow
with ``DRA_WEBHOOK_ALLOW_HOSTS``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from testkit.loopback import LoopbackServer


class WebhookReceiver(LoopbackServer):
    label = "webhook receiver"

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._bodies: dict[str, list[Any]] = {}

    def build(self) -> Starlette:
        async def hook(request: Request) -> Response:
            body = await request.json()
            with self._lock:
                self._bodies.setdefault(request.path_params["name"], []).append(body)
            return Response(status_code=204)

        async def health(_: Request) -> Response:
            return JSONResponse({"ok": True})

        return Starlette(
            routes=[Route("/hooks/{name}", hook, methods=["POST"]), Route("/_health", health, methods=["GET"])]
        )

    def url(self, name: str) -> str:
        return f"{self.root_url}/hooks/{name}"

    def received(self, name: str) -> list[Any]:
        with self._lock:
            return list(self._bodies.get(name, ()))

    def wait_for(self, name: str, count: int, timeout: float) -> list[Any]:
        deadline = time.monotonic() + timeout
        while len(bodies := self.received(name)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(bodies)} of {count} webhook posts to {name} came within {timeout:.0f} s")
            time.sleep(0.5)
        return bodies
