"""The product's HTTP routes plus an event-loop lag probe, served by ``bench.burst`` as ``http.app``.

``POST /bench/lag`` starts a probe task on the server's event loop (the loop every run shares): it sleeps
10 ms again and again and keeps how late it woke, at worst. ``GET /bench/lag`` answers that worst lag
in milliseconds and the number of probes, and starts a new window.
"""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from deep_research_agent.routes import app as product_routes

PROBE_S = 0.01
_window = {"worst_s": 0.0, "probes": 0}
_probe: list[asyncio.Task[None]] = []


async def _measure() -> None:
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        await asyncio.sleep(PROBE_S)
        _window["worst_s"] = max(_window["worst_s"], loop.time() - started - PROBE_S)
        _window["probes"] += 1


async def lag(request: Request) -> JSONResponse:
    if request.method == "POST" and not _probe:
        _probe.append(asyncio.create_task(_measure()))
    answer = {"worst_ms": round(_window["worst_s"] * 1000, 2), "probes": _window["probes"]}
    _window.update(worst_s=0.0, probes=0)
    return JSONResponse(answer)


# The product routes themselves, not a catch-all mount, so the LangGraph API keeps every other path.
app = Starlette(routes=[Route("/bench/lag", lag, methods=["GET", "POST"]), *product_routes.routes])
