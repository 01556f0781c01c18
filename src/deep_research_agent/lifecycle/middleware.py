"""Run lifecycle: the first event, the last events, and the single authoritative end state.

Contract (orchestrator only; it must be the outermost middleware):
- ``run_start`` is the first event of every run, with the tools each role is offered (``offer.py`` decides
  the run's offer first, over the graph's ``roster``); config warnings and what loading the graph's skills and
  custom tools found wrong follow it as ``status: warning``, then the statuses the graph factory found for
  the run (``mcp_ready``/``mcp_error``); the run's stop-request watcher starts (``delivery/stop.py``);
- a config problem (refused ``base_url``, missing key) ends the run before any model call;
- a turn on a thread whose last run was stopped mid-way opens with that run's draft (``delivery/stopped.py``);
- a turn on a thread whose earlier run left tool calls unanswered (stopped or cancelled mid-step) first
  answers each with an error result (deepagents' ``PatchToolCallsMiddleware``, run inside the opening hook:
  as a node of its own it would cost every run a graph step, so a checkpoint and an ``updates`` event more);
- with a per-user limit (``max_runs_per_user``), the run takes a slot among its user's runs in progress
  (``run/admission.py``); past the limit it ends at once with ``error/too_many_runs``, its detail (how
  many runs are in progress, the limit, what to do) also the turn's AI message for clients that show
  only ``messages``; an admitted run holds its slot until it ends;
- every orchestrator model and tool call that succeeds ends by saving the run's ledger to the store (``run/ledger.py``; a save
  that would change nothing writes nothing, and the end archives only the texts no save wrote); a run
  resumed by another process (its worker died; Aegra's lease reaper hands it on from the last checkpoint)
  restores it there, and gets the same watcher and slot, at its next model or tool call, since its
  opening hook does not run again: so its run time, usage, sources, hand-overs and texts include the part
  before the resume, and it ends with one report and one end status;
- a run that pauses for the user (an interrupt of an orchestrator tool call: the plan review) is closed
  there: its slot is freed, so a paused run never holds one of its user's runs in progress, and its usage
  is kept for the run that resumes the thread, whose usage event counts it (``run/ledger.py``);
- a model call that fails for good (once the retry middleware gave up) does not raise: the error is
  classified into a detail that says what to fix, and the agent stops;
- an unexpected exception in a model call or a tool call of the orchestrator (its middleware included),
  or in one of the harness's node hooks (``containment.py``), does not reach the user as a traceback: it
  is logged, the run ends with reason ``internal_error``;
- a run that ends without a delivered report, for any reason, still delivers one once research started
  (``fallback_report.py``, vetted in a worker thread); it is sent as a ``report`` with ``partial: true``
  and its claim counts, stored as ``final_report`` and appended as the turn's last AI message, so a
  client that renders only ``messages`` shows it;
- at the end, exactly one ``usage`` event (with the citation summary) and exactly one ``status``
  ``done``/``error`` whose reason ``delivery.end_state.decide_end`` names from one record of the run; both carry
  the run's ``outcome`` (``outcome.decide_outcome``), which state keeps as ``outcome`` too. The status
  carries the run's tool calls, tokens, report size and run time, and a ``detail`` ending in
  ``Run time Xm Ys.``; the run's sources, evidence summaries and the delivered report's claims
  (``citations``, one entry per claim), their scores (``claim_summary``) and per-source verdicts
  (``cited_sources``) are copied into state,
  the evidence texts go to the LangGraph store (``run/archive.py``), the run's sandbox session is deleted
  and the run's stores are closed;
- before the end status, the run's queued knowledge-base writes are awaited (``run/recording.py``), and
  with ``remember_findings`` on a delivered report's quoted findings are stored in the knowledge base;
- a cancelled run ends without any of this (the server stops it mid-step), but its stores are dropped so
  the pages it read do not stay in memory.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, NotRequired

import httpx
import openai
from deepagents.middleware.patch_tool_calls import PatchToolCallsMiddleware
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
from langgraph.channels import UntrackedValue
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Command

from ..delivery.end_state import EndRecord, decide_end, owes_report
from ..delivery.follow_up import adopt_thread_evidence
from ..delivery.stop import start_watching
from ..delivery.stopped import model_view as stopped_run_view
from ..delivery.stopped import stopped_run_opening
from ..delivery.turn_end import deliverable
from ..domain.clock import format_elapsed
from ..domain.conversation import deliverable_message, is_harness_message
from ..domain.errors import tool_error_text
from ..domain.knobs import KnobError
from ..domain.names import EndReason, Outcome, StatusState, ToolErrorClass, WarningReason
from ..domain.plan import PlanEstimate, estimate_deviation
from ..domain.stops import RunError
from ..guards.budget import BudgetLimits
from ..knowledge import DEFAULT_DATASET, KnowledgeBase, knowledge_namespace, remember_findings
from ..mcp.listing import OpeningStatuses
from ..protocol.events import DoneStatus, ErrorStatus, Limits, Report, RunStart, Usage, WarningStatus, emit
from ..report.rendering import readable_report
from ..run import (
    NoRunError,
    Run,
    RunSlot,
    admit,
    adopt_paused_usage,
    archive_evidence,
    close_run,
    current_run,
    evidence_summaries,
    forget_ledger,
    keep_paused_usage,
    owner_key,
    release_slot,
    restore_ledger,
    run_owner,
    run_user,
    save_ledger,
    start_keeping,
    unsaved_records,
)
from ..run.containment import INTERNAL_ERROR, contain_hook_failures
from ..sandbox.session import SandboxSession
from ..tasks.middleware import finish_task, open_task
from .fallback_report import fallback_report, why_undelivered
from .model_errors import ModelEndpoint, describe_model_error
from .offer import Roster, RunOffer, decide_offer
from .outcome import OutcomeFacts, decide_outcome

logger = logging.getLogger(__name__)

# How long the end of a run waits for its queued knowledge writes; one still running then is recorded as failed.
RECORDING_FLUSH_S = 15.0

# The run of one model or tool call of the orchestrator, and the call's LangGraph config.
RunCall = tuple[Run, dict[str, Any]]

_DANGLING_CALLS = PatchToolCallsMiddleware()


class LifecycleState(AgentState):
    run_error: NotRequired[Annotated[RunError | None, PrivateStateAttr, UntrackedValue]]


def _answering_dangling_calls(state: LifecycleState, runtime: Runtime, update: dict[str, Any]) -> dict[str, Any]:
    """``update``, which may append messages, with the thread's unanswered tool calls answered first: the
    thread's messages rewritten with an error result after each such call, then ``update``'s."""
    patch = _DANGLING_CALLS.before_agent(state, runtime)
    if patch is None:
        return update
    return {**update, "messages": [*patch["messages"], *update.get("messages", ())]}


@dataclass
class Attached:
    """A run's attachment: this process has opened the run, or taken it over from another (its ledger
    restored, its stop watcher and slot started); the lock makes a takeover happen once."""

    done: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class RunLifecycleMiddleware(AgentMiddleware):
    """Opens and closes every run with the protocol's handshake, stores and end state."""

    state_schema = LifecycleState

    def __init__(
        self,
        *,
        endpoint: ModelEndpoint,
        budget: BudgetLimits,
        recursion_limit: int,
        max_runs_per_user: int = 0,
        remember_findings: bool = False,
        knowledge_dataset: str = DEFAULT_DATASET,
        warnings: Sequence[str] = (),
        problems: Sequence[str] = (),
        knowledge_base: bool = False,
        roster: Roster | None = None,
    ) -> None:
        """``endpoint``: what a failed model call's explanation names; ``budget`` and ``recursion_limit``
        (the graph's step limit): the limits the ``usage`` event reports; ``max_runs_per_user``: runs one user
        may have in progress (0: no limit); ``remember_findings``: store a delivered report's findings in the
        ``knowledge_dataset``; ``warnings``: reported by every run after ``run_start`` (the settings', then
        what loading the graph's skills, custom tools and corpora found wrong); ``problems``: settings that
        end every run before its first model call; ``knowledge_base``: the knowledge-base tools may be offered
        (``offer.py``); ``roster``: every agent's registered tools, whose offered part ``run_start`` lists."""
        owner = type(self).__name__
        if not isinstance(endpoint, ModelEndpoint):
            raise KnobError(owner, "endpoint", endpoint, "a ModelEndpoint")
        if not isinstance(budget, BudgetLimits):
            raise KnobError(owner, "budget", budget, "a BudgetLimits")
        if isinstance(recursion_limit, bool) or not isinstance(recursion_limit, int) or recursion_limit < 1:
            raise KnobError(owner, "recursion_limit", recursion_limit, "a whole number above 0")
        if isinstance(max_runs_per_user, bool) or not isinstance(max_runs_per_user, int) or max_runs_per_user < 0:
            raise KnobError(owner, "max_runs_per_user", max_runs_per_user, "a whole number of 0 or more (0: no limit)")
        if roster is not None and not isinstance(roster, Roster):
            raise KnobError(owner, "roster", roster, "a Roster")
        for name, texts in (("warnings", warnings), ("problems", problems)):
            if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
                raise KnobError(owner, name, texts, "a sequence of strings")
        super().__init__()
        self.endpoint = endpoint
        self.budget = budget
        self.recursion_limit = recursion_limit
        self.max_runs_per_user = max_runs_per_user
        self.remember_findings = remember_findings
        self.knowledge_dataset = knowledge_dataset
        self.warnings = tuple(warnings)
        self.problems = tuple(problems)
        self.knowledge_base = bool(knowledge_base)
        self.roster = roster or Roster()

    @hook_config(can_jump_to=["end"])
    @contain_hook_failures
    async def abefore_agent(self, state: LifecycleState, runtime: Runtime) -> dict[str, Any] | None:
        config = get_config()
        run = current_run(config)
        owner = run_owner(config)
        start_watching(runtime.store, run, owner=owner)
        run.attachments.setdefault(Attached, Attached).done = True
        configurable = config.get("configurable") or {}
        # A turn on a thread that already holds an answer is a follow-up.
        follow_up = any(isinstance(message, AIMessage) for message in state.get("messages") or ())
        offer = await self._offer(runtime.store, run, config, follow_up=follow_up)
        emit(
            RunStart(
                started_at=run.started_at,
                thread_id=configurable.get("thread_id"),
                run_id=configurable.get("run_id"),
                tools=self.roster.offered(offer),
            )
        )
        for warning in self.warnings:
            emit(WarningStatus(reason=WarningReason.CONFIG, detail=warning))
        for status in (run.attachments.get(OpeningStatuses) or OpeningStatuses()).statuses:
            emit(status)
        if self.problems:
            problems = " ".join(self.problems)
            return {"run_error": RunError(reason=EndReason.CONFIG_ERROR.value, detail=problems), "jump_to": "end"}
        if refusal := await self._admit(runtime.store, run, owner):
            return {
                "run_error": RunError(reason=EndReason.TOO_MANY_RUNS.value, detail=refusal),
                "messages": [deliverable_message(refusal)],
                "jump_to": "end",
            }
        await open_task(runtime.store, run, config)
        if follow_up:
            await adopt_thread_evidence(runtime.store, run, configurable.get("thread_id"))
        if (opening := stopped_run_opening(state, run.evidence)) is not None:
            return _answering_dangling_calls(state, runtime, {"run_error": None, "messages": [opening]})
        return _answering_dangling_calls(state, runtime, {"run_error": None})

    async def _offer(self, store: Any, run: Run, config: dict[str, Any], *, follow_up: bool) -> RunOffer:
        return await decide_offer(
            store,
            run,
            config,
            knowledge_base=self.knowledge_base,
            remember_findings=self.remember_findings,
            dataset=self.knowledge_dataset,
            follow_up=follow_up,
        )

    async def _admit(self, store: Any, run: Run, owner: str | None) -> str | None:
        """Take the run's slot under the per-user limit; the refusal's text past it, else None."""
        limit = self.max_runs_per_user
        if not limit or store is None:
            return None
        try:
            admission = await admit(store, owner=owner, run_id=run.key, limit=limit)
        except Exception:  # noqa: BLE001 - the limit is fairness, not safety: a store failure admits the run
            logger.warning("could not check the runs in progress of run %s; admitting it", run.key, exc_info=True)
            return None
        if admission.admitted:
            start_keeping(store, run, admission.slot)
            return None
        runs = f"{admission.ahead} research run{'s' if admission.ahead != 1 else ''}"
        return (
            f"You already have {runs} in progress, and this server runs at most {limit} per user at once. "
            "This run was not started: ask again once one of them has finished, or stop one."
        )

    async def _attach(self, store: Any, call: RunCall | None) -> None:
        """Take over a run another process started (its ledger, stop watcher, slot); a no-op once done."""
        if call is None:  # called outside a graph run (a unit test): nothing to attach
            return
        run, config = call
        attached = run.attachments.setdefault(Attached, Attached)
        if attached.done:
            return
        async with attached.lock:
            if attached.done:
                return
            owner = run_owner(config)
            thread_id = (config.get("configurable") or {}).get("thread_id")
            if await restore_ledger(store, run, thread_id=thread_id):
                logger.info("run %s resumed in this process from its last checkpoint and ledger", run.key)
            elif await adopt_paused_usage(store, run, thread_id=thread_id):
                logger.info("run %s resumed a run paused for the user, and counts what it spent", run.key)
            # A run resumed without its ledger cannot tell a follow-up apart: it keeps the follow-up guidance.
            await self._offer(store, run, config, follow_up=True)
            start_watching(store, run, owner=owner)
            if self.max_runs_per_user and run.attachments.get(RunSlot) is None and store is not None:
                start_keeping(store, run, RunSlot(owner_key=owner_key(owner), run_id=run.key, queued_at=time.time()))
            attached.done = True

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        if error := request.state.get("run_error"):
            # A tool call failed internally, or ended the run: end it here instead of asking the model again.
            if error["reason"] == EndReason.INTERNAL_ERROR:
                return ModelResponse(result=[AIMessage(content="(The run stopped on an internal error.)")])
            return ModelResponse(result=[deliverable_message(error["detail"])])
        store = getattr(request.runtime, "store", None)
        call = _this_call()
        await self._attach(store, call)
        if (opened := stopped_run_view(request.messages)) is not None:
            request = request.override(messages=opened)
        try:
            response = await handler(request)
        except asyncio.CancelledError:
            _forget_cancelled_run(call)
            raise
        except (openai.APIError, httpx.HTTPError) as exc:
            detail = describe_model_error(exc, self.endpoint)
            logger.warning("model call failed: %s", detail)
            notice = AIMessage(content=f"(The model call failed: {detail})")
            return ExtendedModelResponse(
                model_response=ModelResponse(result=[notice]),
                command=Command(update={"run_error": RunError(reason=EndReason.MODEL_ERROR.value, detail=detail)}),
            )
        except GraphBubbleUp:
            raise
        except Exception:  # noqa: BLE001 - the user gets an end status, never a traceback
            logger.exception("internal error in a model call of the orchestrator")
            return ExtendedModelResponse(
                model_response=ModelResponse(result=[AIMessage(content="(The run stopped on an internal error.)")]),
                command=Command(update={"run_error": INTERNAL_ERROR}),
            )
        # Its reply reaches the checkpoint when the model step ends: a run resumed from there counts this call.
        if call is not None:
            run, config = call
            await save_ledger(store, run, thread_id=(config.get("configurable") or {}).get("thread_id"))
        return response

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
    ) -> ToolMessage | Command:
        store = getattr(request.runtime, "store", None)
        call = _this_call()
        await self._attach(store, call)
        try:
            result = await handler(request)
        except asyncio.CancelledError:
            _forget_cancelled_run(call)
            raise
        except GraphInterrupt:
            # A pause for the user (plan review): the resume is a run of its own, so this one holds nothing
            # (its slot is freed as it closes) but what it spent, which the resuming run adds to its usage.
            if call is not None:
                run, config = call
                await keep_paused_usage(store, run, thread_id=(config.get("configurable") or {}).get("thread_id"))
            _forget_cancelled_run(call)
            raise
        except GraphBubbleUp:
            raise
        except Exception:  # noqa: BLE001 - the user gets an end status, never a traceback
            logger.exception("internal error in the orchestrator's %s tool call", request.tool_call["name"])
            failed = ToolMessage(
                tool_error_text(
                    request.tool_call["name"], ToolErrorClass.PERMANENT, "the run stopped on an internal error."
                ),
                tool_call_id=request.tool_call["id"],
                name=request.tool_call["name"],
                status="error",
            )
            return Command(update={"messages": [failed], "run_error": INTERNAL_ERROR})
        if call is not None:
            run, config = call
            await save_ledger(store, run, thread_id=(config.get("configurable") or {}).get("thread_id"))
        return result

    async def aafter_agent(self, state: LifecycleState, runtime: Runtime) -> dict[str, Any] | None:
        config = get_config()
        run = current_run(config)
        try:
            # Before the end status, so a client that reacts to it finds the texts stored.
            configurable = config.get("configurable") or {}
            thread_id = configurable.get("thread_id")
            await self._finish_recording(runtime.store, config, run)
            await archive_evidence(
                runtime.store,
                thread_id=thread_id,
                run_id=run.key,
                # The texts the ledger saved are in that namespace already.
                records=unsaved_records(run, run.evidence.own_records()),
                failures=run.failures,
            )
            await forget_ledger(runtime.store, run)
            if (slot := run.attachments.get(RunSlot)) is not None and runtime.store is not None:
                # Before the end status, so the user's next run, started on seeing it, finds the slot free.
                await release_slot(runtime.store, slot)
            return await self._close(state, run, runtime.store)
        finally:
            if (sandbox := run.attachments.get(SandboxSession)) is not None:
                await sandbox.close()
            close_run(run.key)

    async def _finish_recording(self, store: BaseStore | None, config: dict[str, Any], run: Run) -> None:
        """Store a delivered report's findings when ``remember_findings`` is on, then wait for every queued
        knowledge write, so entries queued by the run's last tool calls are stored before it ends."""
        try:
            if self.remember_findings and store is not None and run.control.report_delivered:
                configurable = config.get("configurable") or {}
                base = KnowledgeBase(store, knowledge_namespace(run_user(config), self.knowledge_dataset))
                await remember_findings(
                    base,
                    run,
                    run_id=str(configurable.get("run_id") or run.key),
                    thread_id=str(configurable.get("thread_id") or ""),
                )
            await run.recording.flush(RECORDING_FLUSH_S)
        except Exception:  # noqa: BLE001 - the run still ends with its report and end status
            logger.exception("could not finish the knowledge writes of run %s", run.key)

    async def _close(self, state: LifecycleState, run: Run, store: BaseStore | None) -> dict[str, Any]:
        # The running draft served a run cut short; this one ends with its report, or its salvage.
        update: dict[str, Any] = {"draft_report": None}
        record = EndRecord.of(run, state, answered_directly=_answered_directly(state.get("messages") or []))
        report_chars = len(state.get("final_report") or "") if record.report_delivered else 0
        if owes_report(record):
            why = why_undelivered(record.run_error, record.halt)
            try:
                salvaged = await asyncio.to_thread(fallback_report, state.get("messages") or [], run.evidence, why=why)
            except Exception:  # noqa: BLE001 - the run still gets its end status, never a traceback
                logger.exception("could not assemble the fallback report")
                record = replace(record, run_error=record.run_error or INTERNAL_ERROR)
            else:
                emit(Report(markdown=salvaged, partial=True, claims=run.evidence.claim_summary))
                update["final_report"] = salvaged
                update["messages"] = [deliverable_message(readable_report(salvaged, run.evidence))]
                report_chars = len(salvaged)
                record = replace(record, salvaged=True)
        elif (answer := deliverable(state, run.control, run.evidence)) is not None and not _ends_with(state, answer):
            # Delivered, but the turn ended before its answer message (a halt right after submit_report).
            update["messages"] = [deliverable_message(answer)]
        end = decide_end(record)

        def outcome_now() -> Outcome | None:
            return decide_outcome(
                end,
                OutcomeFacts.of(
                    delivered=record.report_delivered or record.salvaged or end.reason == EndReason.DIRECT_ANSWER,
                    incomplete=record.salvaged,
                    verdicts=[claim.verdict for claim in run.evidence.claims],
                    evidence_insufficient=run.control.evidence_insufficient,
                    retrieval_failures=len(run.failures.retrieval()),
                    recording_failures=len(run.failures.recording()),
                ),
            )

        # The task keeps the outcome its save leaves standing; a save that fails makes it recording_failed.
        await finish_task(store, run, {**state, **update}, run_id=run.key, status=end.reason, outcome=outcome_now())
        outcome = outcome_now()
        update["outcome"] = outcome.value if outcome else None
        self._emit_usage(run, outcome)
        totals = run.usage.totals()
        elapsed = run.elapsed_s
        end_status = DoneStatus if end.state == StatusState.DONE else ErrorStatus
        emit(
            end_status(
                reason=end.reason,
                detail=f"{end.detail}{_against_estimate(run)} Run time {format_elapsed(elapsed)}.",
                tool_calls=totals.tool_calls,
                total_tokens=totals.total_tokens,
                report_chars=report_chars,
                elapsed_s=round(elapsed, 2),
                elapsed=format_elapsed(elapsed),
                outcome=outcome,
            )
        )
        update["sources"] = [
            {"index": s.index, "url": s.url, "domain": s.domain, "title": s.title}
            | ({"paper": s.paper.model_dump(mode="json")} if s.paper else {})
            | ({"urls": list(s.urls)} if len(s.urls) > 1 else {})
            for s in run.evidence.sources()
        ]
        update["evidence"] = evidence_summaries(run.evidence.records())
        if run.evidence.citation_summary is not None:
            # Only a run that delivered a report replaces the citations of the thread's report.
            update["citations"] = [claim.model_dump(mode="json") for claim in run.evidence.claims]
            summary = run.evidence.claim_summary
            update["claim_summary"] = summary.model_dump(mode="json") if summary else None
            update["cited_sources"] = [
                c.model_dump(include={"index", "url", "title", "evidence_id", "verified", "reason", "detail"})
                for c in run.evidence.citations
            ]
        return update

    def _emit_usage(self, run: Run, outcome: Outcome | None) -> None:
        totals = run.usage.totals()
        budget = self.budget
        estimate = run.attachments.get(PlanEstimate)
        emit(
            Usage(
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
                    role: counters.model_copy(
                        update={
                            "cost_usd": round(counters.cost_usd, 6),
                            "reported_cost_usd": round(counters.reported_cost_usd, 6),
                        }
                    )
                    for role, counters in run.usage.per_role().items()
                },
                compactions=run.usage.compactions,
                messages_summarized=run.usage.messages_summarized,
                citations=run.evidence.citation_summary,
                claims=run.evidence.claim_summary,
                outcome=outcome,
                elapsed_s=round(run.elapsed_s, 2),
                elapsed=format_elapsed(run.elapsed_s),
                limits=Limits(
                    max_tool_calls=budget.max_tool_calls,
                    max_total_tokens=budget.max_total_tokens,
                    max_run_seconds=budget.max_run_seconds,
                    max_cost_usd=budget.max_cost_usd,
                    recursion_limit=self.recursion_limit,
                ),
                plan_estimate=estimate,
                plan_estimate_deviation=estimate_deviation(estimate, totals.cost_usd) if estimate else None,
            )
        )


def _against_estimate(run: Run) -> str:
    """The end status' sentence on the actual cost against the reviewed plan's estimate; empty without one."""
    estimate = run.attachments.get(PlanEstimate)
    if estimate is None:
        return ""
    cost = run.usage.totals().cost_usd
    deviation = estimate_deviation(estimate, cost)
    off = f" ({deviation:+.0%})" if deviation is not None else ""
    return f" Cost ${cost:.4f} against the plan's estimate of ${estimate.cost_usd:.4f}{off}."


def _ends_with(state: LifecycleState, answer: str) -> bool:
    messages = state.get("messages") or []
    return bool(messages) and isinstance(messages[-1], AIMessage) and messages[-1].text == answer


def _answered_directly(messages: list[AnyMessage]) -> bool:
    """The orchestrator's own last message is a text answer with no tool call."""
    last = messages[-1] if messages else None
    return bool(
        isinstance(last, AIMessage) and not is_harness_message(last) and last.text.strip() and not last.tool_calls
    )


def _this_call() -> RunCall | None:
    """The run of this model or tool call with the call's config, looked up once per call; None outside a
    graph run (a unit test calls the hooks directly), where there is nothing to attach, save or drop."""
    try:
        config = get_config()
        return current_run(config), config
    except (RuntimeError, NoRunError):
        return None


def _forget_cancelled_run(call: RunCall | None) -> None:
    """Drop a cancelled run's stores: its end hook never runs, and they hold every page the run read.

    The orchestrator spends nearly all of a run inside a model or tool call (``task`` holds the whole
    sub-agent), and only the run's own cancellation reaches the outermost middleware as ``CancelledError``:
    the guards' own deadlines end as ``TimeoutError`` inside their scopes.
    """
    if call is not None:
        close_run(call[0].key)
