"""HTTP routes the agent server serves next to the LangGraph API (``langgraph.json`` ``http.app``).

- ``GET /evidence/{thread_id}``: every evidence record the thread's runs stored, full text included;
- ``GET /evidence/{thread_id}/{run_id}``: one run's records;
- ``GET /ui`` and ``GET /ui/threads/{thread_id}``: the live-research web UI (``ui/``, built into ``ui/dist``),
  the same page for both, which reads the thread id from its URL; ``GET /ui/assets/...`` its bundle.

The evidence routes answer a JSON list of records (``run_id`` plus the fields of ``run/archive.py``: ``id,
url, title, kind, retrieved_at, agent, sha256, chars, text``), or 404 with a ``detail`` when nothing is
stored there. The thread state carries the same records without their texts.

The UI page is served with the server's mount prefix written into it (so its API calls and assets resolve
under ``http.mount_prefix`` too), a content security policy that lets it reach only this server (images
excepted: a site's favicon comes from the site), and ``no-cache``, so a rebuilt bundle shows at once. When
the bundle is missing the page says how to build it (503), rather than 404.

The store is the server's: langgraph-api makes it reachable from a custom route through
``langgraph.config.get_store()``. Custom routes are not behind the server's auth unless
``http.enable_custom_route_auth`` is set.

Imported by the server only: Starlette comes with langgraph-api, it is no dependency of the package.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from langgraph.config import get_store
from langgraph.store.base import BaseStore, InvalidNamespaceError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .run.archive import stored_evidence

EVIDENCE_PATH = "/evidence"
UI_PATH = "/ui"
# The cookie a shared deployment's UI sign-in keeps the caller's token in (deploy/routes.py, deploy/auth.py).
SESSION_COOKIE = "dra_token"
# The bundle `ui/scripts/build.mjs` writes; a source checkout (the package installed in place) has it here.
UI_DIST = Path(__file__).resolve().parents[2] / "ui" / "dist"
_ROOT_PLACEHOLDER = "__ROOT__"
# The bundle's build time on its asset URLs, so a browser never runs a stale bundle against a new page.
_VERSION_PLACEHOLDER = "__VERSION__"
_UI_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' https: data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"
)
_NOT_BUILT = """<!doctype html><html lang="en"><meta charset="utf-8"><title>Web UI not built</title>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; line-height: 1.5">
<h1>The web UI is not built</h1>
<p>The agent server is running, but <code>{dist}</code> has no <code>index.html</code>.
Build it with <code>./run.sh</code> (which builds the UI when its bundle is missing) or
<code>cd ui &amp;&amp; npm ci &amp;&amp; npm run build</code>; it needs Node.js 18 or newer.</p>
</body></html>
"""


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


def make_app(store: Callable[[], BaseStore], ui_dist: Path = UI_DIST) -> Starlette:
    """The routes, reading the store ``store()`` returns at each request and the UI bundle from ``ui_dist``."""

    async def evidence(request: Request) -> JSONResponse:
        return await evidence_response(store(), request.path_params["thread_id"], request.path_params.get("run_id"))

    async def ui_page(request: Request) -> Response:
        index = ui_dist / "index.html"
        if not index.is_file():
            return HTMLResponse(_NOT_BUILT.format(dist=html.escape(str(ui_dist))), status_code=503)
        root = html.escape(request.scope.get("root_path", "").rstrip("/"), quote=True)
        version = str(int(index.stat().st_mtime))
        page = index.read_text(encoding="utf-8").replace(_ROOT_PLACEHOLDER, root).replace(_VERSION_PLACEHOLDER, version)
        return HTMLResponse(page, headers={"Cache-Control": "no-cache", "Content-Security-Policy": _UI_POLICY})

    async def ui_asset(request: Request) -> Response:
        # Starlette's StaticFiles refuses to start serving once its folder is missing; an unbuilt UI must
        # still answer every asset with a plain 404 and build later without a restart.
        assets = (ui_dist / "assets").resolve()
        wanted = (assets / request.path_params["path"]).resolve()
        if not wanted.is_relative_to(assets) or not wanted.is_file():
            return PlainTextResponse("Not found", status_code=404)
        return FileResponse(wanted)

    return Starlette(
        routes=[
            Route(EVIDENCE_PATH + "/{thread_id}", evidence, methods=["GET"]),
            Route(EVIDENCE_PATH + "/{thread_id}/{run_id}", evidence, methods=["GET"]),
            Route(UI_PATH, ui_page, methods=["GET"]),
            Route(UI_PATH + "/", ui_page, methods=["GET"]),
            Route(UI_PATH + "/threads/{thread_id}", ui_page, methods=["GET"]),
            Route(UI_PATH + "/assets/{path:path}", ui_asset, methods=["GET", "HEAD"]),
        ]
    )


app = make_app(get_store)
