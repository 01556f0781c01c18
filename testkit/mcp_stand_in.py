"""A tiny MCP server of our own, for what no reference server does on demand: 429s, hangs, counting.

It speaks just enough of MCP's streamable HTTP transport for langchain-mcp-adapters: ``POST /mcp`` with a
JSON-RPC message, answered as ``application/json`` (``initialize``, ``tools/list``, ``tools/call``;
notifications get 202), ``GET /mcp`` 405 (no server-initiated stream), ``DELETE /mcp`` 200. Tools:

- ``lookup(key)``: ``"<key> = 42"``;
- ``slow(n)``: waits ``slow_s`` seconds, then ``"slow <n> done"``; the server keeps the highest number of
  ``tools/call`` requests it had in flight at once (``max_in_flight``);
- ``cities(count)``: a JSON list of ``count`` rows ``{"id", "city", "population"}`` (``cities_text``), for
  results larger than the agent lets into a model's context.

Behaviour (``POST /_behaviour``, reset by ``reset()``): ``rate_limit`` answers that many ``tools/call``
requests with HTTP 429 and ``Retry-After: retry_after`` first (-1: every one); ``slow_s`` is how long
``slow`` takes (a large value is a server that hangs). Credentials are checked by a real server behind
``bearer_proxy``, not here. ``stats`` holds the counters (``lists``, ``calls``, ``rate_limited``,
``max_in_flight``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from testkit.loopback import LoopbackServer

TOOLS = [
    {
        "name": "lookup",
        "description": "Look a key up in the stand-in's table.",
        "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
    },
    {
        "name": "cities",
        "description": "Every city of the stand-in's register, one row each.",
        "inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]},
    },
    {
        "name": "slow",
        "description": "Answer after a short wait.",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
]
DEFAULTS: dict[str, Any] = {"rate_limit": 0, "retry_after": "0", "slow_s": 0.3}


def cities_text(count: int) -> str:
    """What ``cities(count)`` returns, exactly."""
    return json.dumps([{"id": n, "city": f"city-{n}", "population": n * 2} for n in range(count)])


class McpStandIn(LoopbackServer):
    label = "mcp-stand-in"

    def __init__(self) -> None:
        super().__init__()
        self.behaviour: dict[str, Any] = dict(DEFAULTS)
        self.stats: dict[str, int] = {}
        self._in_flight = 0
        self.reset()

    @property
    def url(self) -> str:
        return f"{self.root_url}/mcp"

    def reset(self) -> None:
        self.behaviour = dict(DEFAULTS)
        self.stats = {"lists": 0, "calls": 0, "rate_limited": 0, "max_in_flight": 0}

    def set_behaviour(self, **behaviour: Any) -> None:
        self.behaviour = {**DEFAULTS, **behaviour}

    def build(self) -> Starlette:
        async def health(request: Request) -> Response:
            return JSONResponse({"ok": True})

        async def mcp(request: Request) -> Response:
            if request.method == "GET":
                return Response(status_code=405)
            if request.method == "DELETE":
                return Response(status_code=200)
            message = await request.json()
            method, request_id = message.get("method"), message.get("id")
            if request_id is None:
                return Response(status_code=202)
            if method == "initialize":
                return self._result(request_id, {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "mcp-stand-in", "version": "1"},
                })  # fmt: skip
            if method == "tools/list":
                self.stats["lists"] += 1
                return self._result(request_id, {"tools": TOOLS})
            if method == "tools/call":
                return await self._call(request_id, message["params"])
            return JSONResponse(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"Unknown method {method}"}}
            )

        return Starlette(routes=[Route("/_health", health), Route("/mcp", mcp, methods=["GET", "POST", "DELETE"])])

    async def _call(self, request_id: Any, params: dict[str, Any]) -> Response:
        limit = self.behaviour["rate_limit"]
        if limit == -1 or self.stats["rate_limited"] < limit:
            self.stats["rate_limited"] += 1
            return JSONResponse(
                {"error": "slow down"}, status_code=429, headers={"Retry-After": str(self.behaviour["retry_after"])}
            )
        self.stats["calls"] += 1
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "lookup":
            return self._text(request_id, f"{args.get('key')} = 42")
        if name == "cities":
            return self._text(request_id, cities_text(int(args.get("count", 0))))
        if name == "slow":
            self._in_flight += 1
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self._in_flight)
            try:
                await asyncio.sleep(self.behaviour["slow_s"])
            finally:
                self._in_flight -= 1
            return self._text(request_id, f"slow {args.get('n')} done")
        return self._result(
            request_id, {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True}
        )

    def _text(self, request_id: Any, text: str) -> Response:
        return self._result(request_id, {"content": [{"type": "text", "text": text}], "isError": False})

    @staticmethod
    def _result(request_id: Any, result: dict[str, Any]) -> Response:
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result})
