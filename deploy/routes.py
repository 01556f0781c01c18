"""The agent's HTTP routes on Aegra (``aegra.json`` ``http.app``): ``GET /evidence/{thread_id}[/{run_id}]``.

The same answers as ``deep_research_agent/routes.py`` on ``langgraph dev``, read from Aegra's store (the
Postgres store every instance shares). Aegra mounts only FastAPI apps, and a graph-free route reaches its
store through ``db_manager`` rather than ``langgraph.config.get_store()``.

Unlike on ``langgraph dev``, the routes sit behind the deployment's auth (``enable_custom_route_auth``),
and a caller reads only the evidence of threads it owns: any other thread id answers 404, the same as a
thread with nothing stored, so the answer does not tell whether the thread exists.
"""

from __future__ import annotations

from typing import Annotated

from aegra_api.core.auth_deps import require_auth
from aegra_api.core.database import db_manager
from aegra_api.core.orm import Thread, get_session_maker
from aegra_api.models.auth import User
from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse
from sqlalchemy import select

from deep_research_agent.routes import EVIDENCE_PATH, evidence_response

app = FastAPI(title="deep-research-agent routes")


async def _owns(thread_id: str, user: User) -> bool:
    async with get_session_maker()() as session:
        owner = await session.scalar(select(Thread.user_id).where(Thread.thread_id == thread_id))
    return owner == user.identity


async def _answer(thread_id: str, run_id: str | None, user: User) -> JSONResponse:
    if not await _owns(thread_id, user):
        where = f"run {run_id} of thread {thread_id}" if run_id else f"thread {thread_id}"
        return JSONResponse({"detail": f"No evidence is stored for {where}."}, status_code=404)
    return await evidence_response(db_manager.get_store(), thread_id, run_id)


@app.get(EVIDENCE_PATH + "/{thread_id}")
async def thread_evidence(thread_id: str, user: Annotated[User, Depends(require_auth)]) -> JSONResponse:
    return await _answer(thread_id, None, user)


@app.get(EVIDENCE_PATH + "/{thread_id}/{run_id}")
async def run_evidence(thread_id: str, run_id: str, user: Annotated[User, Depends(require_auth)]) -> JSONResponse:
    return await _answer(thread_id, run_id, user)
