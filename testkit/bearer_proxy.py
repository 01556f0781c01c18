"""A bearer-checking reverse proxy on loopback, in front of a real MCP server, as gateways put one.

Every request must carry ``Authorization: Bearer <token>`` (compared in constant time) or gets 401 with
no body from upstream; the rest is forwarded as it came (method, path, query, body, headers but
``Host`` and the bearer itself) and the upstream answer streamed back, so streamable HTTP's SSE
responses and ``Mcp-Session-Id`` pass through. ``stats`` counts ``forwarded`` and ``unauthorized``.
"""

from __future__ import annotations

import hmac

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from testkit.forwarding import passed_back, upstream_request
from testkit.loopback import LoopbackServer


class BearerProxy(LoopbackServer):
    label = "bearer-proxy"

    def __init__(self, upstream: str, token: str) -> None:
        super().__init__()
        self.upstream = upstream.rstrip("/")
        self.token = token
        self.stats = {"forwarded": 0, "unauthorized": 0}

    def url(self, path: str = "/mcp") -> str:
        return f"{self.root_url}{path}"

    def build(self) -> Starlette:
        client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))

        async def health(request: Request) -> Response:
            return JSONResponse({"ok": True})

        async def forward(request: Request) -> Response:
            given = request.headers.get("authorization", "").encode()
            if not hmac.compare_digest(given, f"Bearer {self.token}".encode()):
                self.stats["unauthorized"] += 1
                return JSONResponse({"detail": "missing or invalid bearer token"}, status_code=401)
            self.stats["forwarded"] += 1
            body = await request.body()
            answer = await client.send(
                upstream_request(client, self.upstream, request, body, drop={"authorization"}), stream=True
            )
            return passed_back(answer)

        return Starlette(
            routes=[Route("/_health", health), Route("/{path:path}", forward, methods=["GET", "POST", "DELETE"])],
        )
