"""The product's own MCP server: the agent as a research tool for other agents, over streamable HTTP.

Contract:
- ``McpService().app`` is an ASGI app for ``MCP_PATH`` (``/mcp``) that ``routes`` mounts in the server's
  custom app, so it is served on the agent server's own port (``langgraph dev``, and Aegra once that app
  is mounted there); its ``lifespan`` runs the MCP SDK's session manager and must run with the app.
  Sessions are stateful (``Mcp-Session-Id``), so a client's ``notifications/cancelled`` reaches the call
  it cancels; answers stream as SSE, so progress notifications arrive while a call runs.
- Tools, described for a calling model: ``research(question, tier?, corpora?, max_cost_usd?, max_minutes?)``
  runs one run on a new thread, ``follow_up(thread_id, question)`` one more run on a thread (its evidence
  and report in context), ``get_report(thread_id)`` the thread's last report, ``get_evidence(thread_id)``
  every evidence record its runs stored, full texts included.
- Every run it starts is non-interactive (``clarify: false``): the orchestrator never asks and proceeds
  on stated assumptions; the question is the run's one human message, exactly as the caller wrote it.
- A question that is empty, blank or longer than ``max_question_chars`` (``DRA_MAX_QUESTION_CHARS``) is a
  tool error saying why (``domain/questions.py``), before any thread or run exists; the tools' input schema
  states the limit (``maxLength``, and ``minLength``/``pattern`` for a non-blank question).
- A run's answer is the report as Markdown text content, plus structured content (``ResearchResult``:
  report, sources, claim counts and citation accuracy, outcome, end status, thread and run ids, cost, run
  time). A run that ends without a report (a refused setting, too many runs) is a tool error saying why.
- While a run goes, each research unit started or done and each new source is a progress notification
  (for a caller that sent a ``progressToken``); the first names the thread, so a caller that cancels can
  still read the report later with ``get_report``.
- A cancelled call stops its run the way a user's "stop now" does (a stop request in the store,
  ``delivery/stop.py``), so the run ends ``done/stopped_by_user`` with a report assembled from what it had
  found, which stays on the thread; the call itself gets the SDK's "Request cancelled" answer.
- It talks to the LangGraph API through ``langgraph_sdk`` over HTTP on the address the request arrived at,
  forwarding the caller's ``Authorization`` and ``x-api-key`` headers: the deployment's auth decides who
  the caller is and which threads it may read (a thread it may not read is "not found"), the same as for
  any other API client. Not the SDK's in-process client: that one skips auth (``/noauth``).

Not langgraph-api's built-in ``/mcp``: it answers a run with the ``repr`` of the whole thread state and
offers no thread, progress, cancellation or per-run settings.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import anyio
import httpx
from langgraph_sdk.client import LangGraphClient
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from ..domain.charts import chart_path
from ..domain.claims import ClaimSummary
from ..domain.names import StatusState, StopMode
from ..domain.questions import question_problem
from ..protocol.events import STOP_REQUESTS_NAMESPACE
from ..report.charts import charts_as_markdown
from ..settings import TIER_ORDER, ResearchConfig
from .caller import caller_client

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
# The graph id of langgraph.json (graph.py is not imported for it: that would load the whole agent stack).
GRAPH_ID = "deep_research_agent"
EVIDENCE_PATH = "/evidence"
# Headers that say who the caller is; nothing else of the MCP request reaches the API.
# How long a cancelled call waits for its stopped run to assemble the report before it lets go.
STOP_WAIT_S = 120.0
_END_STATES = (StatusState.DONE, StatusState.ERROR)

INSTRUCTIONS = (
    "Deep research: each research call plans the work, searches and reads sources in full, and returns one "
    "cited report whose claims were checked against the text they cite. A run takes minutes and costs model "
    "calls; it never asks you questions, so put scope, timeframe and region in the question. Continue a "
    "thread with follow_up; read a past report with get_report and its source texts with get_evidence."
)
_RESEARCH = (
    "Research a question in depth and return a cited Markdown report (a # title, a summary, sections, and a "
    "## Sources list); every cited sentence was checked against the text of its source, and the structured "
    "result counts how many claims checked out. Takes minutes. It never asks clarifying questions: write one "
    "self-contained question with its scope, timeframe and region; where it is still ambiguous, the report "
    "states the assumptions it made. Keep the thread_id to ask follow-ups or read the report later."
)
_FOLLOW_UP = (
    "Ask a follow-up on a thread an earlier research call returned (its thread_id): the agent sees the "
    "earlier report and reuses its evidence, researches what is new, and returns a new cited report."
)
_GET_REPORT = (
    "The latest report of a thread (its thread_id from research or follow_up), as Markdown, with its sources "
    "and claim counts. Use it after a call was cancelled or timed out: a stopped run still leaves the report "
    "of what it had found, marked incomplete."
)
_GET_EVIDENCE = (
    "Every source text the thread's runs read (web pages, corpus passages, MCP results), full text included, "
    "with its URL, title and the evidence id the report's citations were checked against."
)

_QUESTION = "The research question, self-contained, as a user would ask it."
_ThreadId = Annotated[str, Field(min_length=1, description="A thread_id returned by research or follow_up.")]


class ResearchResult(BaseModel):
    """What one research run delivered, as a calling program reads it (the tools' structured content)."""

    thread_id: str = Field(description="The thread the run ran on: pass it to follow_up, get_report, get_evidence.")
    run_id: str | None = Field(default=None, description="The run's id; absent when read back with get_report.")
    report: str = Field(description="The checked report in Markdown, ending with its ## Sources list.")
    partial: bool | None = Field(
        default=None,
        description="True when the run stopped early and the report was assembled from its findings; "
        "absent when read back with get_report.",
    )
    sources: list[dict[str, Any]] = Field(description="The report's sources: url, title and how each was found.")
    claims: ClaimSummary | None = Field(
        description="How many of the report's claims were checked and checked out, per verdict; its coverage "
        "sentence states them."
    )
    citation_accuracy: float | None = Field(
        description="Supported claims ÷ checked claims (0 to 1); absent when none was checked. Read it with "
        "claims.checked of claims.claims."
    )
    outcome: str | None = Field(
        description="answered, partial, insufficient_evidence, partial_retrieval, budget_exhausted or recording_failed."
    )
    end: str | None = Field(default=None, description="How the run ended: state/reason, e.g. done/report_delivered.")
    cost_usd: float | None = Field(default=None, description="Dollars the run spent at the tier's prices.")
    run_seconds: float | None = Field(default=None, description="Wall-clock seconds the run took.")


class EvidenceRecord(BaseModel):
    """One source text a run stored (``run/archive.py``'s fields)."""

    model_config = {"extra": "allow"}

    id: str
    url: str = ""
    title: str = ""
    kind: str = ""
    text: str = ""


class EvidenceResult(BaseModel):
    thread_id: str
    records: list[EvidenceRecord] = Field(description="Every evidence record of the thread, full text included.")


@dataclass
class _Progress:
    """A run's progress as MCP progress notifications: one per unit started or done and per new source."""

    ctx: Context[Any, Any, Any]
    thread_id: str
    started: int = 0
    done: int = 0
    sources: int = 0
    steps: int = 0
    end: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    run_id: str | None = None
    partial: bool | None = None
    seen: set[str] = field(default_factory=set)

    async def say(self, what: str) -> None:
        self.steps += 1
        message = (
            f"{what} — units started {self.started}, done {self.done}, sources read {self.sources} "
            f"(thread {self.thread_id})"
        )
        await self.ctx.report_progress(self.steps, None, message)

    async def event(self, event: Mapping[str, Any]) -> None:
        kind, state = event.get("type"), event.get("state")
        if kind == "status" and state == StatusState.SUBAGENT_START:
            self.started += 1
            await self.say(f"Research unit started ({event.get('role', 'sub-agent')})")
        elif kind == "status" and state == StatusState.SUBAGENT_DONE:
            self.done += 1
            await self.say(f"Research unit done ({event.get('role', 'sub-agent')})")
        elif kind == "source" and (url := str(event.get("url") or "")) and url not in self.seen:
            self.seen.add(url)
            self.sources += 1
            await self.say(f"Source read: {event.get('title') or url}")
        elif kind == "status" and state in _END_STATES and event.get("role", "orchestrator") == "orchestrator":
            self.end = dict(event)
        elif kind == "report" and event.get("role", "orchestrator") == "orchestrator":
            self.partial = bool(event.get("partial"))
        elif kind == "usage" and event.get("role", "orchestrator") == "orchestrator":
            self.usage = dict(event)


class _Asgi:
    """The session manager as a plain ASGI endpoint, so Starlette routes ``/mcp`` itself without a redirect."""

    def __init__(self, server: FastMCP) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.server.session_manager.handle_request(scope, receive, send)


class McpService:
    """The research tools on one FastMCP server; ``app`` and ``lifespan`` are what a custom app mounts."""

    def __init__(
        self,
        *,
        transport_security: TransportSecuritySettings | None = None,
        max_question_chars: int | None = None,
        public_url: str | None = None,
    ) -> None:
        """``transport_security``: the MCP SDK's host and origin checks (DNS-rebinding protection); by
        default only loopback hosts are accepted, as the SDK does for a server on 127.0.0.1.
        ``max_question_chars``: the longest question the tools take (0: no limit); by default the server's
        ``DRA_MAX_QUESTION_CHARS``. ``public_url``: where callers reach this server, the base of a report's
        chart images (by default the server's ``DRA_PUBLIC_URL``; empty: charts are given as caption and
        table only)."""
        if max_question_chars is None or public_url is None:
            server = ResearchConfig.resolve(None)
            max_question_chars = server.max_question_chars if max_question_chars is None else max_question_chars
            public_url = server.public_url if public_url is None else public_url
        self.max_question_chars = max_question_chars
        self.public_url = public_url.rstrip("/")
        self.server = FastMCP(
            "deep-research-agent",
            instructions=INSTRUCTIONS,
            streamable_http_path=MCP_PATH,
            transport_security=transport_security,
        )
        self.server.streamable_http_app()  # creates the session manager the endpoint hands requests to
        self.app = _Asgi(self.server)
        readonly = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
        runs = ToolAnnotations(readOnlyHint=False, openWorldHint=True)
        question = _question_type(max_question_chars)
        self.server.add_tool(_asking(self.research, question), name="research", description=_RESEARCH, annotations=runs)
        self.server.add_tool(
            _asking(self.follow_up, question), name="follow_up", description=_FOLLOW_UP, annotations=runs
        )
        self.server.add_tool(self.get_report, name="get_report", description=_GET_REPORT, annotations=readonly)
        self.server.add_tool(self.get_evidence, name="get_evidence", description=_GET_EVIDENCE, annotations=readonly)

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: object = None) -> AsyncIterator[None]:
        async with self.server.session_manager.run():
            yield

    # --- the tools ---------------------------------------------------------------------------------------

    async def research(
        self,
        question: str,
        ctx: Context[Any, Any, Any],
        tier: Annotated[
            Literal[TIER_ORDER] | None,  # type: ignore[valid-type]
            Field(
                description="Model tier: extra-low is cheapest and fastest, high the most capable. Default: the server's."
            ),
        ] = None,
        corpora: Annotated[
            list[str] | None,
            Field(description="Names of the server's local document corpora to search (all when omitted)."),
        ] = None,
        max_cost_usd: Annotated[
            float | None, Field(gt=0, description="Dollar ceiling of the run; it stops and reports what it found.")
        ] = None,
        max_minutes: Annotated[
            float | None, Field(gt=0, description="Wall-clock ceiling of the run in minutes; it stops and reports.")
        ] = None,
    ) -> Annotated[CallToolResult, ResearchResult]:
        self._check(question)
        configurable: dict[str, Any] = {}
        if tier is not None:
            configurable["model_tier"] = tier
        if corpora:
            configurable["corpora"] = corpora
        if max_cost_usd is not None:
            configurable["max_cost_usd"] = max_cost_usd
        if max_minutes is not None:
            configurable["max_run_seconds"] = max_minutes * 60
        client = _client(ctx)
        thread_id = (await _api(client.threads.create(metadata={"created_by": "mcp"})))["thread_id"]
        return await self._run(client, ctx, thread_id, question, configurable)

    async def follow_up(
        self, thread_id: _ThreadId, question: str, ctx: Context[Any, Any, Any]
    ) -> Annotated[CallToolResult, ResearchResult]:
        self._check(question)
        client = _client(ctx)
        await _thread(client, thread_id)
        return await self._run(client, ctx, thread_id, question, {})

    async def get_report(
        self, thread_id: _ThreadId, ctx: Context[Any, Any, Any]
    ) -> Annotated[CallToolResult, ResearchResult]:
        client = _client(ctx)
        await _thread(client, thread_id)
        values = await _values(client, thread_id)
        if not values.get("final_report"):
            raise ToolError(f"Thread {thread_id} has no report yet (a run may still be going, or it delivered none).")
        return _answer(_result(thread_id, values, public_url=self.public_url))

    async def get_evidence(
        self, thread_id: _ThreadId, ctx: Context[Any, Any, Any]
    ) -> Annotated[CallToolResult, EvidenceResult]:
        client = _client(ctx)
        await _thread(client, thread_id)
        try:
            records = await client.http.get(f"{EVIDENCE_PATH}/{thread_id}")
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 404:
                raise _api_error(exc) from None
            records = []
        result = EvidenceResult(thread_id=thread_id, records=[EvidenceRecord.model_validate(r) for r in records])
        text = (
            "\n\n".join(f"## [{r.id}] {r.title or r.url}\n{r.url}\n\n{r.text}" for r in result.records)
            or f"No evidence is stored for thread {thread_id}."
        )
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structuredContent=result.model_dump(mode="json")
        )

    def _check(self, question: str) -> None:
        if problem := question_problem(question, max_chars=self.max_question_chars):
            raise ToolError(problem)

    # --- one run -----------------------------------------------------------------------------------------

    async def _run(
        self,
        client: LangGraphClient,
        ctx: Context[Any, Any, Any],
        thread_id: str,
        question: str,
        configurable: dict[str, Any],
    ) -> CallToolResult:
        progress = _Progress(ctx=ctx, thread_id=thread_id)
        began = time.monotonic()
        try:
            await progress.say("Research started")
            parts = client.runs.stream(
                thread_id,
                GRAPH_ID,
                input={"messages": [{"role": "user", "content": question}]},
                config={"configurable": {**configurable, "clarify": False}},
                stream_mode=["custom"],
                stream_subgraphs=True,
                # Our own cancellation stops the run with a report; a dropped stream must not cancel it unseen.
                on_disconnect="continue",
            )
            async for part in parts:
                if part.event == "metadata" and isinstance(part.data, dict):
                    progress.run_id = part.data.get("run_id")
                elif part.event.split("|")[0] == "custom" and isinstance(part.data, dict):
                    await progress.event(part.data)
                elif part.event == "error":
                    logger.warning("a research run on thread %s streamed an error", thread_id)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await _stop(client, thread_id, progress.run_id)
            raise
        except httpx.HTTPStatusError as exc:
            raise _api_error(exc) from None
        values = await _values(client, thread_id)
        end = progress.end or {}
        ended = f"{end.get('state')}/{end.get('reason')}" if end else None
        if not values.get("final_report") or end.get("reason") in ("config_error", "too_many_runs", "invalid_question"):
            detail = end.get("detail") or "no report was delivered"
            raise ToolError(f"The research run ended {ended or 'without an end status'}: {detail}")
        usage = progress.usage or {}
        result = _result(thread_id, values, run_id=progress.run_id, end=ended, public_url=self.public_url)
        result.partial = progress.partial
        result.cost_usd = usage.get("cost_usd")
        result.run_seconds = usage.get("elapsed_s", round(time.monotonic() - began, 1))
        return _answer(result)


def _question_type(max_chars: int) -> Any:
    """The question parameter's type: its schema states the limits, which ``McpService._check`` enforces with
    the reason (a validation constraint would answer in pydantic's words instead)."""
    limits: dict[str, Any] = {"minLength": 1, "pattern": r"\S"} | ({"maxLength": max_chars} if max_chars else {})
    return Annotated[str, Field(description=_QUESTION, json_schema_extra=limits)]


def _asking(tool: Callable[..., Awaitable[Any]], question: Any) -> Callable[..., Awaitable[Any]]:
    """``tool`` with its ``question`` parameter typed ``question``. FastMCP builds a tool's input schema from
    its signature, and the question's limit is a server setting, known only once the service is built."""
    signature = inspect.signature(tool, eval_str=True)
    parameters = [p.replace(annotation=question) if p.name == "question" else p for p in signature.parameters.values()]

    @functools.wraps(tool)
    async def asking(*args: Any, **kwargs: Any) -> Any:
        return await tool(*args, **kwargs)

    asking.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return asking


# --- the API, as the caller ---------------------------------------------------------------------------------


def _client(ctx: Context[Any, Any, Any]) -> LangGraphClient:
    """An SDK client for the server this request reached, carrying the caller's credentials."""
    request = ctx.request_context.request
    if not isinstance(request, Request):
        raise ToolError("This tool is served over HTTP only.")
    return caller_client(request)


async def _api(call: Any) -> Any:
    try:
        return await call
    except httpx.HTTPStatusError as exc:
        raise _api_error(exc) from None


def _api_error(exc: httpx.HTTPStatusError) -> ToolError:
    status = exc.response.status_code
    if status in (401, 403):
        return ToolError(f"The agent server refused the caller's credentials (HTTP {status}).")
    return ToolError(f"The agent server answered HTTP {status}.")


async def _thread(client: LangGraphClient, thread_id: str) -> None:
    """Refuses a thread the caller may not read; the deployment's auth decides, and answers 404 for it."""
    try:
        await client.threads.get(thread_id)
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code in (404, 422):
            raise ToolError(f"No thread {thread_id} is yours to read.") from None
        raise _api_error(exc) from None


async def _values(client: LangGraphClient, thread_id: str) -> dict[str, Any]:
    state = await _api(client.threads.get_state(thread_id))
    values = state.get("values") if isinstance(state, dict) else None
    return values if isinstance(values, dict) else {}


async def _stop(client: LangGraphClient, thread_id: str, run_id: str | None) -> None:
    """Stops a run now (``delivery/stop.py``) and waits for it to leave its report, within ``STOP_WAIT_S``."""
    if run_id is None:
        return
    try:
        await client.store.put_item(list(STOP_REQUESTS_NAMESPACE), run_id, {"mode": StopMode.NOW, "by": "mcp"})
        with anyio.move_on_after(STOP_WAIT_S):
            await client.runs.join(thread_id, run_id)
    except Exception as exc:  # noqa: BLE001 - the call is cancelled already; the run's own ceilings still end it
        logger.warning("could not stop run %s after its MCP call was cancelled: %s", run_id, type(exc).__name__)


def _result(
    thread_id: str,
    values: Mapping[str, Any],
    *,
    run_id: str | None = None,
    end: str | None = None,
    public_url: str = "",
) -> ResearchResult:
    """The run's result; its report's charts as a calling model reads them (image link, caption, notes and
    data table), never their JSON."""
    image = (lambda record: public_url + chart_path(thread_id, run_id, record.id)) if public_url else None
    report = charts_as_markdown(str(values.get("final_report") or ""), image or (lambda record: None))
    summary = values.get("claim_summary")
    claims = ClaimSummary.model_validate(summary) if isinstance(summary, dict) else None
    return ResearchResult(
        thread_id=thread_id,
        run_id=run_id,
        report=report,
        sources=list(values.get("sources") or []),
        claims=claims,
        citation_accuracy=claims.citation_accuracy if claims else None,
        outcome=values.get("outcome"),
        end=end,
    )


def _answer(result: ResearchResult) -> CallToolResult:
    """The report as the text a calling model reads, and the whole result as structured content."""
    facts = [f"thread_id: {result.thread_id}"]
    if result.claims is not None and result.claims.claims:
        facts.append(f"claims: {result.claims.coverage}")
    if result.outcome:
        facts.append(f"outcome: {result.outcome}")
    if result.partial:
        facts.append("incomplete: the run stopped early")
    if result.cost_usd is not None:
        facts.append(f"cost: ${result.cost_usd:.4f}")
    if result.run_seconds is not None:
        facts.append(f"run time: {result.run_seconds:.0f} s")
    return CallToolResult(
        content=[TextContent(type="text", text=result.report), TextContent(type="text", text=" · ".join(facts))],
        structuredContent=result.model_dump(mode="json"),
    )
