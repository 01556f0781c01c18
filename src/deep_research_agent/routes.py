"""HTTP routes the agent server serves next to the LangGraph API (``langgraph.json`` ``http.app``).

- ``GET /evidence/{thread_id}``: every evidence record the thread's runs stored, full text included;
- ``GET /evidence/{thread_id}/{run_id}``: one run's records.

Each answers a JSON list of records (``run_id`` plus the fields of ``run/archive.py``: ``id, url, title,
kind, retrieved_at, agent, sha256, chars, text``), or 404 with a ``detail`` when nothing is stored there.
The thread state carries the same records without their texts.

The store is the server's: langgraph-api makes it reachable from a custom route through
``langgraph.config.get_store()``. Custom routes are not behind the server's auth unless
``http.enable_custom_route_auth`` is set.

Imported by the server only: Starlette comes with langgraph-api, it is no dependency of the package.
"""

from __future__ import annotations

from collections.abc import Callable

from langgraph.config import get_store
from langgraph.store.base import BaseStore, InvalidNamespaceError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .run.archive import stored_evidence

EVIDENCE_PATH = "/evidence"


async def evidence_response(store: BaseStore, thread_id: str, run_id: str | None = None) -> JSONResponse:
    """The answer of ``GET /evidence/{thread_id}[/{run_id}]`` from ``store`` (Aegra's routes answer the same)."""
    try:
        records = await stored_evidence(store, thread_id, run_id)
    except InvalidNamespaceError:
        records = []
    if not records:
        where = f"run {run_id} of thread {thread_id}" if run_id else f"thread {thread_id}"
        return JSONResponse({"detail": f"No evidence is stored for {where}."}, status_code=404)
    return JSONResponse(records)


def make_app(store: Callable[[], BaseStore]) -> Starlette:
    """The routes, reading the store ``store()`` returns at each request."""

    async def evidence(request: Request) -> JSONResponse:
        return await evidence_response(store(), request.path_params["thread_id"], request.path_params.get("run_id"))

    return Starlette(
        routes=[
            Route(EVIDENCE_PATH + "/{thread_id}", evidence, methods=["GET"]),
            Route(EVIDENCE_PATH + "/{thread_id}/{run_id}", evidence, methods=["GET"]),
        ]
    )


app = make_app(get_store)
