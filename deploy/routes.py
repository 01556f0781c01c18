"""The product's own HTTP app on Aegra (``aegra.json`` ``http.app``): every route of
``deep_research_agent.routes.make_app`` (the web UI at ``/ui``, ``/evidence``, and whatever else the project
serves there), behind the deployment's auth, plus a per-user view of the store for ``./run.sh kb`` and ``tasks``.

Aegra mounts only a FastAPI app, puts its routes ahead of its own API, and guards only FastAPI routes; the
project's app is Starlette, reads its store through a callable, and may hold a lifespan of its own. So:
- the project's app is built here on Aegra's store (``db_manager.get_store``, the Postgres store every
  instance shares) and served whole: one route matches exactly the paths the project's routes match (so Aegra's
  API is never shadowed) and hands the request to that app, whose lifespan runs inside Aegra's;
- every request to it is authenticated with Aegra's auth (``deploy/auth.py``): a request without a known
  token gets 401; the user is ``request.scope["user"]`` (``identity``) for the project's routes to read;
- a route with a ``thread_id`` path parameter answers 404 for a thread the caller does not own, so an
  answer never tells whether another user's thread exists;
- the web UI's page cannot send a bearer token, so with tokens configured it asks for one (``POST
  /ui/session``), which comes back as an HttpOnly, SameSite=Strict cookie ``deploy/auth.py`` accepts; its
  static assets are public. Without tokens every caller is the anonymous user and no sign-in is asked;
- around Aegra's whole API, the schedule guard (``schedules/guard.py``, its first run deferred: Aegra's cron
  create would start one at once) refuses a bad schedule before Aegra's cron engine sees it, and the lifespan
  runs the webhook outbox (``deploy/webhooks.py``), which posts LangGraph's run webhook for schedules' runs,
  since Aegra does not;
- ``/dra/store/...`` answers the LangGraph store API's item search, namespace listing and item delete on
  the namespaces the graph keeps per user (knowledge base, tasks, task decisions), for the caller's own
  only: Aegra's own store API scopes a client's items under ``["users", <identity>]``, where the graph never
  writes. ``./run.sh kb`` and ``tasks`` point their store client here when it answers.
"""

from __future__ import annotations

import html
import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from aegra_api.core.auth_deps import require_auth
from aegra_api.core.auth_middleware import get_auth_backend
from aegra_api.core.database import db_manager
from aegra_api.core.orm import Thread, get_session_maker
from aegra_api.models.auth import User
from fastapi import Body, Depends, FastAPI, HTTPException
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Match, get_route_path
from starlette.types import Receive, Scope, Send

from deep_research_agent.knowledge.namespace import KNOWLEDGE_NAMESPACE
from deep_research_agent.routes import SESSION_COOKIE, UI_PATH, make_app, schedule_guard
from deep_research_agent.run.owner import namespace_label
from deep_research_agent.settings import ResearchConfig, ScheduleSettings
from deep_research_agent.tasks.store import DECISIONS_NAMESPACE, TASKS_NAMESPACE

# Aegra loads this file by its path, as a module of its own: its sibling is loaded the same way.
_spec = importlib.util.spec_from_file_location("dra_deploy_webhooks", Path(__file__).with_name("webhooks.py"))
assert _spec is not None and _spec.loader is not None
webhooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(webhooks)

SESSION_PATH = UI_PATH + "/session"
STORE_PREFIX = "/dra"
_SESSION_SECONDS = 12 * 3600
_PER_USER = (KNOWLEDGE_NAMESPACE, TASKS_NAMESPACE, DECISIONS_NAMESPACE)
_SIGN_IN = """<!doctype html><html lang="en"><meta charset="utf-8"><title>Sign in · deep research agent</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<body style="font-family: system-ui, sans-serif; max-width: 28rem; margin: 4rem auto; line-height: 1.5">
<h1>Sign in</h1>
<p>This server is shared: enter the API token your operator gave you.</p>
{error}<form method="post" action="{action}">
<input type="hidden" name="next" value="{next}">
<label>Token <input name="token" type="password" autocomplete="current-password" required autofocus
style="width: 100%; font: inherit"></label>
<p><button type="submit">Sign in</button></p>
</form></body></html>
"""

project = make_app(db_manager.get_store)


async def _authenticate(request: Request) -> User | None:
    try:
        return await require_auth(request)
    except HTTPException:
        return None


async def _owns(thread_id: str, user: User) -> bool:
    async with get_session_maker()() as session:
        owner = await session.scalar(select(Thread.user_id).where(Thread.thread_id == thread_id))
    return owner == user.identity


def _is_ui(path: str) -> bool:
    return path == UI_PATH or path.startswith(UI_PATH + "/")


def _sign_in_page(request: Request, next_path: str, error: str = "", status: int = 200) -> HTMLResponse:
    root = request.scope.get("root_path", "").rstrip("/")
    body = _SIGN_IN.format(
        action=html.escape(root + SESSION_PATH, quote=True),
        next=html.escape(next_path, quote=True),
        error=f'<p role="alert" style="color: #b00">{html.escape(error)}</p>' if error else "",
    )
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


async def _sign_in(request: Request) -> Response:
    form = await request.form()
    token, next_path = str(form.get("token") or "").strip(), str(form.get("next") or UI_PATH)
    if not _is_ui(next_path):
        next_path = UI_PATH
    probe = Request(
        {"type": "http", "method": "GET", "path": "/", "headers": [(b"authorization", f"Bearer {token}".encode())]}
    )
    try:
        result = await get_auth_backend().authenticate(probe)
    except Exception:  # noqa: BLE001 - any refusal of the backend is a wrong token here
        result = None
    if not token or result is None:
        return _sign_in_page(request, next_path, "That token is not known here.", status=401)
    response = RedirectResponse(request.scope.get("root_path", "").rstrip("/") + next_path, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=_SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
    """The project's app behind the deployment's auth and thread ownership (see the module contract)."""
    if scope["type"] != "http":
        await project(scope, receive, send)
        return
    request = Request(scope, receive)
    path = get_route_path(scope)
    if path == SESSION_PATH and request.method == "POST":
        await (await _sign_in(request))(scope, receive, send)
        return
    user = None if path.startswith(UI_PATH + "/assets/") else await _authenticate(request)
    if _is_ui(path):
        if user is None and not path.startswith(UI_PATH + "/assets/"):
            await _sign_in_page(request, path)(scope, receive, send)
            return
    elif user is None:
        await JSONResponse({"detail": "Unknown or missing API token."}, status_code=401)(scope, receive, send)
        return
    elif (thread_id := _path_params(scope).get("thread_id")) and not await _owns(str(thread_id), user):
        await JSONResponse({"detail": f"No thread {thread_id} of yours is on this server."}, status_code=404)(
            scope, receive, send
        )
        return
    await project(scope, receive, send)


def _path_params(scope: Scope) -> dict[str, Any]:
    for route in project.routes:
        match, child = route.matches(scope)
        if match == Match.FULL:
            return dict(child.get("path_params") or {})
    return {}


class ProjectRoutes(BaseRoute):
    """Matches what the project's app serves (and the UI's sign-in), and hands it to ``guarded``."""

    path = "(the project's routes, guarded in deploy/routes.py)"

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and get_route_path(scope) == SESSION_PATH:
            return Match.FULL, {}
        best = Match.NONE
        for route in project.routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return Match.FULL, {}
            if match == Match.PARTIAL:
                best = Match.PARTIAL
        return best, {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await guarded(scope, receive, send)


SCHEDULES = ResearchConfig.resolve(None).part(ScheduleSettings)


@asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    outbox = webhooks.WebhookOutbox(SCHEDULES.webhook_allow_hosts)
    async with project.router.lifespan_context(project):
        await outbox.start()
        try:
            yield
        finally:
            await outbox.stop()


app = FastAPI(title="deep-research-agent routes", lifespan=lifespan)
app.router.routes.append(ProjectRoutes())
guard = schedule_guard(SCHEDULES, defer_first_run=True)
app.add_middleware(guard.cls, *guard.args, **guard.kwargs)


# --- the caller's own per-user store namespaces -------------------------------------------------------------


def _own(namespace: list[str], user: User) -> bool:
    """True when ``namespace`` is (under) one of the caller's own per-user namespaces."""
    label = namespace_label(user.identity)
    return any(tuple(namespace[: len(base) + 1]) == (*base, label) for base in _PER_USER)


def _refuse(namespace: list[str]) -> HTTPException:
    return HTTPException(
        403, f"{'.'.join(namespace) or 'the root'}: a caller reads only its own knowledge base and tasks here"
    )


@app.get(STORE_PREFIX + "/store")
async def store_view(user: Annotated[User, Depends(require_auth)]) -> dict[str, Any]:
    """Says the per-user store view is here, and whose it is."""
    return {"user": user.identity, "namespaces": [[*base, namespace_label(user.identity)] for base in _PER_USER]}


@app.post(STORE_PREFIX + "/store/items/search")
async def search_items(
    user: Annotated[User, Depends(require_auth)], body: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    prefix = [str(part) for part in body.get("namespace_prefix") or []]
    if not _own(prefix, user):
        raise _refuse(prefix)
    found = await db_manager.get_store().asearch(
        tuple(prefix),
        query=body.get("query"),
        filter=body.get("filter"),
        limit=int(body.get("limit") or 10),
        offset=int(body.get("offset") or 0),
    )
    return {"items": [item.dict() for item in found]}


@app.post(STORE_PREFIX + "/store/namespaces")
async def list_namespaces(
    user: Annotated[User, Depends(require_auth)], body: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    prefix = [str(part) for part in body.get("prefix") or []]
    label = namespace_label(user.identity)
    # A listing above the user label (kb's "every user and dataset") gives the caller's own only.
    bases = [base for base in _PER_USER if tuple(prefix[: len(base)]) == base[: len(prefix)]]
    if not bases and not _own(prefix, user):
        raise _refuse(prefix)
    found = await db_manager.get_store().alist_namespaces(
        prefix=tuple(prefix) or None,
        suffix=tuple(body["suffix"]) if body.get("suffix") else None,
        max_depth=body.get("max_depth"),
        limit=int(body.get("limit") or 100),
        offset=int(body.get("offset") or 0),
    )
    mine = [list(ns) for ns in found if any(tuple(ns[: len(base) + 1]) == (*base, label) for base in _PER_USER)]
    return {"namespaces": mine}


@app.delete(STORE_PREFIX + "/store/items", status_code=204)
async def delete_item(
    user: Annotated[User, Depends(require_auth)], body: Annotated[dict[str, Any], Body()]
) -> Response:
    namespace = [str(part) for part in body.get("namespace") or []]
    if not _own(namespace, user):
        raise _refuse(namespace)
    await db_manager.get_store().adelete(tuple(namespace), str(body.get("key") or ""))
    return Response(status_code=204)
