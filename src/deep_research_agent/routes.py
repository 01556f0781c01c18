"""HTTP routes the agent server serves next to the LangGraph API (``langgraph.json`` ``http.app``).

- ``GET /evidence/{thread_id}``: every evidence record the thread's runs stored, full text included;
- ``GET /evidence/{thread_id}/{run_id}``: one run's records;
- ``GET /reports/{thread_id}?format=md|html|pdf|docx``: the thread's delivered report as a document to hand on
  (``export/``); ``GET /reports/{thread_id}/{run_id}``: the report that run delivered;
- ``GET /charts/{thread_id}/{chart_id}.png|svg`` (and ``/charts/{thread_id}/{run_id}/...`` for the report one run
  delivered): a chart of the delivered report, drawn on demand from the checked spec its block carries
  (``export/charts.py``), so nothing but the report is stored; the turn's last AI message and the web UI link
  here. It reads the thread like the report routes, as the caller, so the same auth decides;
- ``POST /steer/{thread_id}`` with ``{"message": text}``: steers the thread's run in progress
  (``service/steering.py``): 202 with ``{thread_id, run_id}`` once the message is on the run's channel, 404 with
  a ``detail`` when the thread has no run in progress the caller may see, 422 for a body without a message;
- ``/mcp``: the agent's own MCP server (``service/mcp_server.py``), whose lifespan is this app's;
- ``GET /corpora``: the corpora of this server a search can use, ``{corpora: [{name, title, description,
  documents, passages}]}`` (the web UI's search page lists them);
- ``GET /corpora/search?corpus=NAME&q=TEXT[&k=10]``: a corpus of this server searched as the research units
  search it (keywords and meaning, ``corpora/search.py``): ``{corpus, query, method, note, hits: [{id, title,
  url, score, snippet, path, anchor, text}]}``; 404 with a ``detail`` naming the corpora for an unknown or
  unsearchable one, 422 for an empty query or a ``k`` outside 1-50;
- ``GET /schedules`` (``?user=U`` on a server without auth) and ``GET /schedules/{name}``: the caller's
  schedules as the Watching list shows them (``schedules/listing.py``); a name that is not one of the caller's
  schedules is 404 with a ``detail``, whoever else has one by that name;
- around all of it and the LangGraph API, the schedule guard (``schedules/guard.py``): the cron engine's API
  refuses a bad schedule (cron, timezone, frequency, webhook, duplicate name, per-user cap) before the engine
  sees it;
- ``GET /ui``, ``GET /ui/threads/{thread_id}`` and ``GET /ui/search``: the web UI (``ui/``, built into
  ``ui/dist``), the same page for all, which reads the thread id or the search from its URL; ``GET
  /ui/assets/...`` its bundle.

The evidence routes answer a JSON list of records (``run_id`` plus the fields of ``run/archive.py``: ``id,
url, title, kind, retrieved_at, agent, sha256, chars, text``), or 404 with a ``detail`` when nothing is
stored there. The thread state carries the same records without their texts.

The report routes read the thread through the server's own API with the caller's credentials (the
``Authorization`` or ``x-api-key`` header), so the deployment's auth decides what a caller may read: a thread
the caller may not read answers the same 404 as a thread without a report, and the answer never tells
which. They answer the file with its content type and a file name from the question (``Content-Disposition``,
with an RFC 6266 ``filename*`` for any script), 404 with a ``detail`` when there is no delivered report, and
422 with a ``detail`` naming the formats for any other ``format``.

The UI page is served with the server's mount prefix written into it (so its API calls and assets resolve
under ``http.mount_prefix`` too), a content security policy that lets it reach only this server, images
included (an image a report names would tell its host who reads the report: the UI shows it as a link), and
``no-cache``, so a rebuilt bundle shows at once. When the bundle is missing the page says how to build it
(503), rather than 404.

The report and steering routes call the server's API where ``service/caller.py`` says: ``DRA_SELF_URL``, else
plain http on the socket the request came in on, never a URL rebuilt from forwarded headers.

The store is the server's: langgraph-api makes it reachable from a custom route through
``langgraph.config.get_store()``. Custom routes are not behind the server's auth unless
``http.enable_custom_route_auth`` is set.

Imported by the server only: Starlette comes with langgraph-api, it is no dependency of the package.
"""

from __future__ import annotations

import asyncio
import html
import unicodedata
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from langgraph.config import get_store
from langgraph.store.base import BaseStore, InvalidNamespaceError
from langgraph_sdk.errors import NotFoundError, PermissionDeniedError, UnprocessableEntityError
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .corpora.catalog import catalog_for
from .corpora.readers import borrow
from .corpora.search import CorpusSearch, hits_json, search_corpus
from .domain.charts import CHARTS_PATH, chart_path
from .embeddings import embedder_for
from .export import ExportFormat, NoReport, file_name, render, report_document
from .export.charts import ChartImage, NotDrawn, render_chart
from .report.charts import delivered_charts
from .run.archive import stored_evidence
from .run.owner import ANONYMOUS_USER
from .schedules.guard import ScheduleGuard
from .schedules.listing import watching
from .service import MCP_PATH, McpService, NoRunningRun, SteerRequest, caller_client, send_steering
from .settings import CorporaSettings, EmbeddingSettings, ResearchConfig, ScheduleSettings

CORPORA_PATH = "/corpora"
CORPUS_SEARCH_PATH = CORPORA_PATH + "/search"
MAX_CORPUS_HITS = 50
EVIDENCE_PATH = "/evidence"
REPORTS_PATH = "/reports"
STEER_PATH = "/steer"
SCHEDULES_PATH = "/schedules"
UI_PATH = "/ui"
# The cookie a shared deployment's UI sign-in keeps the caller's token in (deploy/routes.py, deploy/auth.py).
SESSION_COOKIE = "dra_token"
# The bundle `ui/scripts/build.mjs` writes; a source checkout (the package installed in place) has it here.
UI_DIST = Path(__file__).resolve().parents[2] / "ui" / "dist"
_ROOT_PLACEHOLDER = "__ROOT__"
# The bundle's build time on its asset URLs, so a browser never runs a stale bundle against a new page.
_VERSION_PLACEHOLDER = "__VERSION__"
_UI_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; "
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
        records = await stored_evidence(store, thread_id, run_id, adopted=False)
    except InvalidNamespaceError:
        records = []
    if not records:
        where = f"run {run_id} of thread {thread_id}" if run_id else f"thread {thread_id}"
        return JSONResponse({"detail": f"No evidence is stored for {where}."}, status_code=404)
    return JSONResponse(records)


ThreadState = tuple[Mapping[str, Any], str | None]
"""A thread state's ``values`` and its ``created_at``."""
StateReader = Callable[[Request, str, str | None], Awaitable[ThreadState | None]]


async def steer_response(request: Request, thread_id: str) -> JSONResponse:
    """The answer of ``POST /steer/{thread_id}``: the message sent through the server's API as the caller."""
    try:
        body = SteerRequest.model_validate_json(await request.body())
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())
        return JSONResponse({"detail": f"A steering message is a JSON object with a message: {problems}."}, 422)
    client = caller_client(request)
    try:
        steered = await send_steering(client, thread_id, body.message, by="http")
    except NoRunningRun as exc:
        return JSONResponse({"detail": str(exc)}, status_code=404)
    finally:
        await client.aclose()
    return JSONResponse(steered.model_dump(), status_code=202)


def caller_identity(request: Request) -> str | None:
    """The user the server's auth named for this request, or None on a server without auth."""
    identity = getattr(request.scope.get("user"), "identity", None)
    return str(identity) if identity else None


async def schedules_response(request: Request, store: BaseStore, name: str | None = None) -> JSONResponse:
    """The answer of ``GET /schedules[/{name}]``: the caller's Watching list, or one schedule of it."""
    user = caller_identity(request) or request.query_params.get("user") or ANONYMOUS_USER
    client = caller_client(request, read_timeout_s=30.0)
    try:
        views = await watching(client, store, user)
    finally:
        await client.aclose()
    if name is None:
        return JSONResponse({"user": user, "schedules": [view.model_dump(mode="json") for view in views]})
    for view in views:
        if view.name == name:
            return JSONResponse(view.model_dump(mode="json"))
    return JSONResponse({"detail": f"No schedule named {name!r} of user {user} is on this server."}, status_code=404)


def schedule_guard(settings: ScheduleSettings | None = None, *, defer_first_run: bool = False) -> Middleware:
    """The schedule guard with this server's settings (``DRA_SCHEDULE_*``, ``DRA_WEBHOOK_ALLOW_HOSTS``)."""
    settings = settings or ResearchConfig.resolve(None).part(ScheduleSettings)
    return Middleware(ScheduleGuard, settings=settings, defer_first_run=defer_first_run)


def unknown_format(requested: str) -> JSONResponse | None:
    """The 422 for a ``format`` that is none of ``ExportFormat``, else None."""
    if requested in {value.value for value in ExportFormat}:
        return None
    formats = ", ".join(value.value for value in ExportFormat)
    return JSONResponse({"detail": f"Unknown format {requested!r}: use one of {formats}."}, status_code=422)


async def report_response(
    state: ThreadState | None, format: ExportFormat, thread_id: str, run_id: str | None = None, base_url: str = ""
) -> Response:
    """The answer of ``GET /reports/{thread_id}[/{run_id}]`` for the state read (None: none the caller may read);
    ``base_url``: the address the caller used, under which the Markdown export links its chart images."""
    try:
        if state is None:
            raise NoReport
        document = report_document(state[0], created_at=state[1])
        link = chart_path(thread_id, run_id, "x").rpartition("/")[0]
        document = document.model_copy(update={"chart_link": base_url.rstrip("/") + link})
    except NoReport:
        where = f"run {run_id} of thread {thread_id}" if run_id else f"thread {thread_id}"
        return JSONResponse({"detail": f"No delivered report on {where}."}, status_code=404)
    # Laying out a PDF takes a second of CPU: off the event loop, so the server's other requests go on.
    content = await asyncio.to_thread(render, document, format)
    disposition = content_disposition(file_name(document, format))
    return Response(content, media_type=format.media_type, headers={"Content-Disposition": disposition})


async def chart_response(state: ThreadState | None, thread_id: str, file: str, run_id: str | None = None) -> Response:
    """The answer of ``GET /charts/{thread_id}[/{run_id}]/{chart_id}.png|svg``: the chart of the delivered report
    in the state read (None: none the caller may read), drawn from its checked spec (``export/charts.py``)."""
    chart_id, _, extension = file.rpartition(".")
    if extension not in {image.value for image in ChartImage}:
        return JSONResponse({"detail": f"A chart is served as .png or .svg, not {file!r}."}, status_code=404)
    report = state[0].get("final_report") if state is not None else None
    record = next((r for r in delivered_charts(report) if r.id == chart_id), None) if isinstance(report, str) else None
    if record is None:
        where = f"run {run_id} of thread {thread_id}" if run_id else f"thread {thread_id}"
        return JSONResponse({"detail": f"No chart {chart_id} in the delivered report of {where}."}, status_code=404)
    image = ChartImage(extension)
    try:
        # Drawing takes a tenth of a second of CPU: off the event loop.
        content = await asyncio.to_thread(render_chart, record, image)
    except NotDrawn as exc:
        return JSONResponse({"detail": f"Chart {chart_id} is not drawn: {exc}."}, status_code=404)
    return Response(content, media_type=image.media_type, headers={"Cache-Control": "private, max-age=300"})


def content_disposition(name: str) -> str:
    """An attachment header that keeps any script (``filename*``) with an ASCII ``filename`` for old clients."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().replace('"', "")
    stem, _, suffix = ascii_name.rpartition(".")
    ascii_name = ascii_name if stem.strip("-_") else f"report.{suffix}"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


async def read_thread_state(request: Request, thread_id: str, run_id: str | None) -> ThreadState | None:
    """The thread's state (or the last state of one of its runs) as the caller may read it through this server."""
    client = caller_client(request, read_timeout_s=30.0)
    try:
        if run_id is None:
            state: Any = await client.threads.get_state(thread_id)
        else:
            history = await client.threads.get_history(thread_id, limit=1, metadata={"run_id": run_id})
            state = history[0] if history else None
    except (NotFoundError, PermissionDeniedError, UnprocessableEntityError):
        # No such thread, one the caller may not read, or an id that is none: the same 404 for all.
        return None
    finally:
        await client.aclose()
    if not isinstance(state, Mapping) or not isinstance(state.get("values"), Mapping):
        return None
    return state["values"], state.get("created_at")


async def corpora_response() -> JSONResponse:
    """The corpora of this server that can be searched now, with their sizes."""
    catalog = await catalog_for(ResearchConfig.resolve(None).part(CorporaSettings))
    return JSONResponse(
        {
            "corpora": [
                {
                    "name": entry.spec.name,
                    "title": entry.spec.display_title,
                    "description": entry.spec.description,
                    "documents": entry.meta.documents if entry.meta else 0,
                    "passages": entry.meta.passages if entry.meta else 0,
                }
                for entry in catalog.ready()
            ]
        }
    )


async def corpus_search_response(params: Mapping[str, str]) -> JSONResponse:
    """One corpus searched for the web UI, with the server's own settings (corpora, data dir, embedder)."""
    name, query = params.get("corpus", "").strip(), " ".join(params.get("q", "").split())
    try:
        k = int(params.get("k", "10"))
    except ValueError:
        k = 0
    if not query or not 1 <= k <= MAX_CORPUS_HITS:
        return JSONResponse({"detail": f"pass q (the words to look for) and k between 1 and {MAX_CORPUS_HITS}."}, 422)
    settings = ResearchConfig.resolve(None)
    catalog = await catalog_for(settings.part(CorporaSettings))
    entry = next((e for e in catalog.ready() if e.spec.name == name), None)
    if entry is None:
        known = ", ".join(e.spec.name for e in catalog.ready()) or "none"
        return JSONResponse({"detail": f"no searchable corpus {name!r}; the corpora are: {known}."}, 404)
    embedder = embedder_for(settings.part(EmbeddingSettings))

    def search() -> CorpusSearch:
        with borrow(entry.spec.name, entry.index) as index:
            return search_corpus(index, query, k, embedder)

    found = await asyncio.to_thread(search)
    return JSONResponse(
        {
            "corpus": name,
            "query": query,
            "method": found.method,
            "note": found.note,
            "hits": hits_json(found, entry.spec.display_title),
        }
    )


def make_app(
    store: Callable[[], BaseStore],
    ui_dist: Path = UI_DIST,
    thread_state: StateReader = read_thread_state,
    mcp: McpService | None = None,
    guard: Middleware | None = None,
) -> Starlette:
    """The routes, reading the store ``store()`` returns at each request, the UI bundle from ``ui_dist`` and
    a thread's state through ``thread_state``, with the MCP server ``mcp`` (a new one when not given) at ``/mcp``,
    behind ``guard`` (none when not given; ``app`` has the server's ``schedule_guard``)."""
    mcp = mcp or McpService()

    async def schedules(request: Request) -> JSONResponse:
        return await schedules_response(request, store(), request.path_params.get("name"))

    async def evidence(request: Request) -> JSONResponse:
        return await evidence_response(store(), request.path_params["thread_id"], request.path_params.get("run_id"))

    async def report(request: Request) -> Response:
        thread_id, run_id = request.path_params["thread_id"], request.path_params.get("run_id")
        requested = request.query_params.get("format", ExportFormat.MD.value)
        if refused := unknown_format(requested):
            return refused
        state = await thread_state(request, thread_id, run_id)
        return await report_response(state, ExportFormat(requested), thread_id, run_id, str(request.base_url))

    async def chart(request: Request) -> Response:
        thread_id, run_id = request.path_params["thread_id"], request.path_params.get("run_id")
        state = await thread_state(request, thread_id, run_id)
        return await chart_response(state, thread_id, request.path_params["file"], run_id)

    async def steer(request: Request) -> JSONResponse:
        return await steer_response(request, request.path_params["thread_id"])

    async def corpora(request: Request) -> JSONResponse:
        return await corpora_response()

    async def corpus_search(request: Request) -> JSONResponse:
        return await corpus_search_response(request.query_params)

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
            Route(REPORTS_PATH + "/{thread_id}", report, methods=["GET"]),
            Route(REPORTS_PATH + "/{thread_id}/{run_id}", report, methods=["GET"]),
            Route(CHARTS_PATH + "/{thread_id}/{file}", chart, methods=["GET"]),
            Route(CHARTS_PATH + "/{thread_id}/{run_id}/{file}", chart, methods=["GET"]),
            Route(STEER_PATH + "/{thread_id}", steer, methods=["POST"]),
            Route(CORPORA_PATH, corpora, methods=["GET"]),
            Route(CORPUS_SEARCH_PATH, corpus_search, methods=["GET"]),
            Route(SCHEDULES_PATH, schedules, methods=["GET"]),
            Route(SCHEDULES_PATH + "/{name}", schedules, methods=["GET"]),
            Route(UI_PATH, ui_page, methods=["GET"]),
            Route(UI_PATH + "/", ui_page, methods=["GET"]),
            Route(UI_PATH + "/threads/{thread_id}", ui_page, methods=["GET"]),
            Route(UI_PATH + "/search", ui_page, methods=["GET"]),
            Route(UI_PATH + "/assets/{path:path}", ui_asset, methods=["GET", "HEAD"]),
            Route(MCP_PATH, mcp.app, methods=["GET", "POST", "DELETE"]),
        ],
        lifespan=mcp.lifespan,
        middleware=[guard] if guard is not None else [],
    )


app = make_app(get_store, guard=schedule_guard())
