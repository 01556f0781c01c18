"""Run lifecycle: the first event, the last events, and the single authoritative end state.

Contract (orchestrator only; it must be the outermost middleware):
- ``run_start`` is the first event of every run; config warnings follow it as ``status: warning``;
- a config problem (refused ``base_url``, missing key) ends the run before any model call;
- a model call that fails for good (once the retry middleware gave up) does not raise: the error is
  classified into a detail that says what to fix, and the agent stops;
- an unexpected exception in a model call or a tool call of the orchestrator (its middleware included),
  or in one of the harness's node hooks (``containment.py``), does not reach the user as a traceback: it
  is logged, the run ends with reason ``internal_error``;
- a run that ends without a delivered report, for any reason, still delivers one once research started:
  the orchestrator's last report-like text (prose, or a draft the report gate sent back) under an
  ``incomplete_banner``, or else ``salvage_report`` from the validated findings. Its citations are
  vetted like a submitted report's (never-retrieved ones removed, unverifiable ones flagged); it is sent
  as a ``report`` with ``partial: true`` and stored as ``final_report``;
- at the end, exactly one ``usage`` event (with the citation summary) and exactly one ``status``
  ``done``/``error`` with a reason code, by first match: ``report_delivered``, ``awaiting_clarification``,
  ``direct_answer``, a halt (``done``: ``stopped_by_user``; ``error``: ``budget_exhausted``,
  ``recursion_limit``, ``loop_halt``, ``runaway_halt``, ``stalled_after_nudges``), ``report_salvaged``,
  ``ended_without_report``; a run error
  (``config_error``, ``model_error``, ``internal_error``) comes first of all. The status carries the run's
  tool calls, tokens, report size and run time, and a ``detail`` ending in ``Run time Xm Ys.``;
  the run's sources, evidence and the delivered report's citations are copied into state;
- a cancelled run ends without any of this (the server stops it mid-step), but its ledger is dropped so
  the pages it read do not stay in memory.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

import httpx
import openai
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from ..settings.resolve import ResearchConfig
from ..protocol.events import emit, format_elapsed
from ..protocol.secrets import redact
from ..run.ledger import RunLedger, close_ledger, current_ledger, run_key
from ..delivery.final_text import classify_final_text, incomplete_banner
from ..report.salvage import salvage_report
from ..delivery.submit import SUBMIT_REPORT
from ..report.vetting import finalise, vet_report
from ..guards.budget import effective_recursion_limit
from .containment import INTERNAL_ERROR, contain_hook_failures
from ..conversation import is_harness_message
from ..delivery.stop import STOPPED_BY_USER

logger = logging.getLogger(__name__)

class LifecycleState(AgentState):
    run_error: NotRequired[Annotated[dict[str, str] | None, PrivateStateAttr]]


class RunLifecycleMiddleware(AgentMiddleware):
    """Opens and closes every run with the protocol's handshake, ledger and end state."""

    state_schema = LifecycleState

    def __init__(self, settings: ResearchConfig) -> None:
        super().__init__()
        self.settings = settings

    @hook_config(can_jump_to=["end"])
    @contain_hook_failures
    async def abefore_agent(self, state: LifecycleState, runtime: Runtime) -> dict[str, Any] | None:
        config = get_config()
        ledger = current_ledger(config)
        configurable = config.get("configurable") or {}
        emit(
            "run_start",
            started_at=ledger.started_at,
            thread_id=configurable.get("thread_id"),
            run_id=configurable.get("run_id"),
        )
        for warning in self.settings.warnings:
            emit("status", state="warning", reason="config", detail=warning)
        if self.settings.problems:
            return {"run_error": {"reason": "config_error", "detail": " ".join(self.settings.problems)}, "jump_to": "end"}
        return {"run_error": None}

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        if request.state.get("run_error"):
            # A tool call failed internally: end the run here instead of asking the model again.
            return ModelResponse(result=[AIMessage(content="(The run stopped on an internal error.)")])
        try:
            return await handler(request)
        except asyncio.CancelledError:
            _forget_cancelled_run()
            raise
        except (openai.APIError, httpx.HTTPError) as exc:
            detail = describe_model_error(exc, self.settings)
            logger.warning("model call failed: %s", detail)
            notice = AIMessage(content=f"(The model call failed: {detail})")
            return ExtendedModelResponse(
                model_response=ModelResponse(result=[notice]),
                command=Command(update={"run_error": {"reason": "model_error", "detail": detail}}),
            )
        except GraphBubbleUp:
            raise
        except Exception:  # noqa: BLE001 - the user gets an end status, never a traceback
            logger.exception("internal error in a model call of the orchestrator")
            return ExtendedModelResponse(
                model_response=ModelResponse(result=[AIMessage(content="(The run stopped on an internal error.)")]),
                command=Command(update={"run_error": INTERNAL_ERROR}),
            )

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
    ) -> ToolMessage | Command:
        try:
            return await handler(request)
        except asyncio.CancelledError:
            _forget_cancelled_run()
            raise
        except GraphBubbleUp:
            raise
        except Exception:  # noqa: BLE001 - the user gets an end status, never a traceback
            logger.exception("internal error in the orchestrator's %s tool call", request.tool_call["name"])
            failed = ToolMessage(
                "ERROR [permanent] the run stopped on an internal error.",
                tool_call_id=request.tool_call["id"],
                name=request.tool_call["name"],
                status="error",
            )
            return Command(update={"messages": [failed], "run_error": INTERNAL_ERROR})

    async def aafter_agent(self, state: LifecycleState, runtime: Runtime) -> dict[str, Any] | None:
        config = get_config()
        ledger = current_ledger(config)
        try:
            update: dict[str, Any] = {}
            report_chars = len(state.get("final_report") or "") if ledger.report_delivered else 0
            salvaged = None
            if _owes_report(state, ledger):
                try:
                    salvaged = _fallback_report(state, ledger)
                except Exception:  # noqa: BLE001 - the run still gets its end status, never a traceback
                    logger.exception("could not assemble the fallback report")
                    state = {**state, "run_error": state.get("run_error") or INTERNAL_ERROR}
            if salvaged is not None:
                emit("report", markdown=salvaged, partial=True)
                update["final_report"] = salvaged
                report_chars = len(salvaged)
            state_reason, reason, detail = _end_state(state, ledger, salvaged=salvaged is not None)
            self._emit_usage(ledger)
            totals = ledger.totals()
            elapsed = ledger.elapsed_s
            emit(
                "status",
                state=state_reason,
                reason=reason,
                detail=f"{detail} Run time {format_elapsed(elapsed)}.",
                tool_calls=totals.tool_calls,
                total_tokens=totals.total_tokens,
                report_chars=report_chars,
                elapsed_s=round(elapsed, 2),
                elapsed=format_elapsed(elapsed),
            )
            update["sources"] = [
                {"index": s.index, "url": s.url, "domain": s.domain, "title": s.title} for s in ledger.sources.values()
            ]
            update["evidence"] = [vars(record).copy() for record in ledger.evidence]
            if ledger.citation_summary is not None:
                # Only a run that delivered a report replaces the citations of the thread's report.
                update["citations"] = list(ledger.citations)
            return update
        finally:
            close_ledger(run_key(config))

    def _emit_usage(self, ledger: RunLedger) -> None:
        totals = ledger.totals()
        settings = self.settings
        emit(
            "usage",
            tool_calls=totals.tool_calls,
            model_calls=totals.model_calls,
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            cached_tokens=totals.cached_tokens,
            total_tokens=totals.total_tokens,
            budget_tokens=round(totals.budget_tokens),
            cost_usd=round(totals.cost_usd, 6),
            reported_cost_usd=round(totals.reported_cost_usd, 6),
            per_role={
                role: {
                    "model_calls": c.model_calls,
                    "tool_calls": c.tool_calls,
                    "input_tokens": c.input_tokens,
                    "output_tokens": c.output_tokens,
                    "cached_tokens": c.cached_tokens,
                    "cost_usd": round(c.cost_usd, 6),
                }
                for role, c in list(ledger.usage.items())
            },
            compactions=ledger.compactions,
            messages_summarized=ledger.messages_summarized,
            citations=ledger.citation_summary,
            elapsed_s=round(ledger.elapsed_s, 2),
            elapsed=format_elapsed(ledger.elapsed_s),
            limits={
                "max_tool_calls": settings.max_tool_calls,
                "max_total_tokens": settings.max_total_tokens,
                "max_run_seconds": settings.max_run_seconds,
                "max_cost_usd": settings.max_cost_usd,
                "recursion_limit": effective_recursion_limit(settings),
            },
        )


def _owes_report(state: LifecycleState, ledger: RunLedger) -> bool:
    """True for a run that researched, or was halted, and has not delivered, asked or answered directly."""
    if ledger.report_delivered or ledger.clarification_requested or state.get("triage_verdict") == "simple":
        return False
    return ledger.research_started or ledger.halt is not None


def _fallback_report(state: LifecycleState, ledger: RunLedger) -> str:
    """The report of a research run that ended undelivered: its last report-like text, or its findings."""
    why = _why_undelivered(state, ledger)
    draft = _last_report_like_text(state.get("messages") or [])
    if draft is not None:
        vetted = vet_report(draft, ledger)
        return incomplete_banner(["the final review and delivery of this report"], why) + finalise(vetted, ledger)
    return finalise(vet_report(salvage_report(ledger, reason=why), ledger), ledger)


def _why_undelivered(state: LifecycleState, ledger: RunLedger) -> str:
    error = state.get("run_error")
    if error:
        return error["detail"]
    if ledger.halt is not None:
        return ledger.halt.detail
    return "the orchestrator stopped without delivering its report"


def _last_report_like_text(messages: list[AnyMessage]) -> str | None:
    """The newest report the orchestrator wrote: a prose reply, or a ``submit_report`` draft sent back."""
    for message in reversed(messages):
        if not isinstance(message, AIMessage) or is_harness_message(message):
            continue
        drafts = [str(c["args"].get("report_markdown") or "") for c in message.tool_calls if c["name"] == SUBMIT_REPORT]
        for text in [*drafts, message.text]:
            if text.strip() and classify_final_text(text) == "report_like":
                return text
    return None


def _end_state(state: LifecycleState, ledger: RunLedger, *, salvaged: bool) -> tuple[str, str, str]:
    """The single end state of the run, by first match."""
    error = state.get("run_error")
    if error:
        return "error", error["reason"], error["detail"].rstrip(".") + "."
    if ledger.report_delivered:
        return "done", "report_delivered", f"Report delivered with {len(ledger.sources)} sources seen."
    if ledger.clarification_requested:
        return "done", "awaiting_clarification", "Waiting for the answers to the clarifying questions."
    if state.get("triage_verdict") == "simple":
        return "done", "direct_answer", "Answered directly: the question needed no research."
    last = state["messages"][-1] if state.get("messages") else None
    answered = isinstance(last, AIMessage) and not is_harness_message(last) and last.text.strip() and not last.tool_calls
    if not ledger.research_started and ledger.halt is None and answered:
        return "done", "direct_answer", "Answered directly, without research."
    if ledger.halt is not None:
        detail = ledger.halt.detail[:1].upper() + ledger.halt.detail[1:].rstrip(".")
        units = len(ledger.findings)
        return (
            "done" if ledger.halt.reason == STOPPED_BY_USER else "error",
            ledger.halt.reason,
            f"{detail}. An incomplete report was assembled from the findings of {units} research "
            f"unit{'s' if units != 1 else ''}.",
        )
    if salvaged:
        return "done", "report_salvaged", "The orchestrator stopped without delivering; an incomplete report was assembled."
    return "error", "ended_without_report", "The run ended without delivering a report."


def _forget_cancelled_run() -> None:
    """Drop a cancelled run's ledger: its end hook never runs, and the ledger holds every page the run read.

    The orchestrator spends nearly all of a run inside a model or tool call (``task`` holds the whole
    sub-agent), and only the run's own cancellation reaches the outermost middleware as ``CancelledError``:
    the guards' own deadlines end as ``TimeoutError`` inside their scopes.
    """
    close_ledger(run_key())


def describe_model_error(exc: BaseException, settings: ResearchConfig) -> str:
    """A one-line, secret-free explanation of a failed model call that says what to fix."""
    where = settings.base_url
    if isinstance(exc, openai.AuthenticationError):
        text = (
            f"The model endpoint {where} rejected the API key (401 Unauthorized). "
            "Fix OPENAI_API_KEY (or OPENROUTER_API_KEY) in .env, or configurable.apiKeys.OPENAI_API_KEY"
        )
    elif isinstance(exc, openai.PermissionDeniedError):
        text = f"The model endpoint {where} refused access (403). Check the key's permissions and credit"
    elif isinstance(exc, openai.NotFoundError):
        model = _requested_model(exc)
        named = f"the model {model!r}" if model else "a model"
        text = (
            f"The model endpoint {where} does not know {named} of tier {settings.model_tier!r} (404). "
            "Check OPENAI_BASE_URL and DRA_MODEL_TIER"
        )
    elif isinstance(exc, openai.RateLimitError):
        text = f"The model endpoint {where} kept rate-limiting (429) after retries. Retry later or raise your limits"
    elif isinstance(exc, openai.BadRequestError):
        message = _message_of(exc)
        text = f"The model endpoint {where} rejected the request (400): {message}"
        if any(sign in message.lower() for sign in _CONTEXT_OVERFLOW_SIGNS):
            text += ". The conversation outgrew the model's context: lower DRA_COMPACTION_TOKENS so it is compacted sooner"
    elif isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        text = f"The model endpoint {where} timed out after {settings.request_timeout:g} s. Retry, or raise DRA_REQUEST_TIMEOUT"
    elif isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        text = f"Cannot reach the model endpoint {where}. Check OPENAI_BASE_URL and that the server is up"
    elif isinstance(exc, openai.APIStatusError):
        text = f"The model endpoint {where} failed with HTTP {exc.status_code} after retries: {_message_of(exc)}"
    else:
        text = f"The model call failed ({type(exc).__name__})"
    return redact(text)


_CONTEXT_OVERFLOW_SIGNS = ("context length", "context_length", "context window", "maximum context", "too many tokens")


def _requested_model(exc: openai.APIStatusError) -> str | None:
    """The model the failed request asked for, read back from its JSON body."""
    try:
        model = json.loads(exc.request.content).get("model")
    except (ValueError, AttributeError, RuntimeError):
        return None
    return model if isinstance(model, str) else None


def _message_of(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    message = body.get("message") or (body.get("error") or {}).get("message") if body else None
    return redact(str(message or exc.message))[:300]
