"""The closing of a run: what it leaves stored, its report or salvage, its outcome and its one end status.

Contract (orchestrator only; its ``after_agent`` is the run's last node hook, reached however the run ends
but by cancellation):
- first what must be stored before a client reacting to the end status looks for it: with
  ``remember_findings`` on, a delivered report's quoted findings go into the knowledge base
  (``knowledge_dataset``); the run's queued knowledge-base writes are awaited (``run/recording.py``, at most
  ``RECORDING_FLUSH_S``); the evidence texts no ledger save wrote go to the LangGraph store
  (``run/archive.py``); the run's ledger is forgotten and its slot among its user's runs freed;
- a run that ends without a delivered report, for any reason, still delivers one once research started
  (``fallback_report.py``, vetted in a worker thread): sent as a ``report`` with ``partial: true`` and its
  claim counts, stored as ``final_report`` and appended as the turn's last AI message, so a client that
  renders only ``messages`` shows it; a delivered answer the turn ended before is appended too;
- exactly one ``usage`` event and exactly one ``status`` ``done``/``error`` whose reason
  ``delivery.end_state.decide_end`` names from one record of the run (``run_error`` among it); both carry
  the run's ``outcome`` (``outcome.decide_outcome``), which state keeps as ``outcome`` and the run's named
  task records (``tasks/middleware.py``), with a scheduled run's digest as state's ``digest``
  (``tasks/digest.py``); the events and the state the run leaves are ``end_summary.py``'s;
- the run's sandbox session is deleted and its stores are closed, whatever failed before.

A failure in the salvage is logged and the run ends ``internal_error`` with its end status; a failure in
the knowledge writes is logged and the run ends as it would have.

Example:
    ```python
    closing = RunClosingMiddleware(budget=BudgetLimits(max_tool_calls=80), recursion_limit=120)
    agent = create_agent(model, middleware=[contained, opening, ledger, closing, ...])
    ```

Raises:
    KnobError: from the constructor, for a ``budget`` that is not a ``BudgetLimits`` or a
        ``recursion_limit`` that is not a whole number above 0.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from ..delivery.end_state import EndRecord, decide_end, owes_report
from ..delivery.turn_end import answer_images, deliverable
from ..domain.charts import DEFAULT_MAX_CHARTS
from ..domain.conversation import deliverable_message, is_harness_message
from ..domain.knobs import KnobError, not_negative
from ..domain.names import EndReason, Outcome, StatusState
from ..guards.budget import BudgetLimits
from ..knowledge import DEFAULT_DATASET, KnowledgeBase, knowledge_namespace, remember_findings
from ..protocol.events import Report, emit
from ..report.rendering import readable_report
from ..run import (
    Run,
    RunSlot,
    archive_evidence,
    close_run,
    forget_ledger,
    release_slot,
    run_user,
    unsaved_records,
)
from ..run.containment import INTERNAL_ERROR
from ..sandbox.session import SandboxSession
from ..tasks.middleware import finish_task
from .end_summary import emit_end_status, emit_usage, left_in_state
from .fallback_report import fallback_report, why_undelivered
from .outcome import OutcomeFacts, decide_outcome
from .run_call import LifecycleState, hook_call, thread_of

logger = logging.getLogger(__name__)

# How long the end of a run waits for its queued knowledge writes; one still running then is recorded as failed.
RECORDING_FLUSH_S = 15.0


class RunClosingMiddleware(AgentMiddleware):
    """Closes every run: stores what it leaves, salvages an undelivered report, and ends it with one status."""

    state_schema = LifecycleState

    def __init__(
        self,
        *,
        budget: BudgetLimits,
        recursion_limit: int,
        remember_findings: bool = False,
        knowledge_dataset: str = DEFAULT_DATASET,
        public_url: str = "",
        max_charts: int = DEFAULT_MAX_CHARTS,
    ) -> None:
        """``budget`` and ``recursion_limit`` (the graph's step limit): the limits the ``usage`` event reports;
        ``remember_findings``: store a delivered report's findings in the ``knowledge_dataset``; ``public_url``:
        where clients reach this server, for the chart images of the answer (``turn_end.py``); ``max_charts``: the
        charts a fallback report may hold, as the report gate allows them."""
        owner = type(self).__name__
        if not isinstance(budget, BudgetLimits):
            raise KnobError(owner, "budget", budget, "a BudgetLimits")
        if isinstance(recursion_limit, bool) or not isinstance(recursion_limit, int) or recursion_limit < 1:
            raise KnobError(owner, "recursion_limit", recursion_limit, "a whole number above 0")
        not_negative(owner, "max_charts", max_charts)
        super().__init__()
        self.budget = budget
        self.recursion_limit = recursion_limit
        self.remember_findings = remember_findings
        self.knowledge_dataset = knowledge_dataset
        self.public_url = public_url
        self.max_charts = max_charts

    async def aafter_agent(self, state: LifecycleState, runtime: Runtime) -> dict[str, Any] | None:
        run, config = hook_call()
        try:
            # Before the end status, so a client that reacts to it finds the texts stored.
            await self._finish_recording(runtime.store, config, run)
            await archive_evidence(
                runtime.store,
                thread_id=thread_of(config),
                run_id=run.key,
                # The texts the ledger saved are in that namespace already.
                records=unsaved_records(run, run.evidence.own_records()),
                failures=run.failures,
            )
            await forget_ledger(runtime.store, run)
            if (slot := run.attachments.get(RunSlot)) is not None and runtime.store is not None:
                # Before the end status, so the user's next run, started on seeing it, finds the slot free.
                await release_slot(runtime.store, slot)
            return await self._close(state, run, runtime.store, config)
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

    async def _close(
        self, state: LifecycleState, run: Run, store: BaseStore | None, config: dict[str, Any]
    ) -> dict[str, Any]:
        # The running draft served a run cut short; this one ends with its report, or its salvage.
        update: dict[str, Any] = {"draft_report": None}
        record = EndRecord.of(run, state, answered_directly=_answered_directly(state.get("messages") or []))
        report_chars = len(state.get("final_report") or "") if record.report_delivered else 0
        if owes_report(record):
            why = why_undelivered(record.run_error, record.halt)
            try:
                salvaged = await asyncio.to_thread(
                    fallback_report, state.get("messages") or [], run.evidence, why=why, max_charts=self.max_charts
                )
            except Exception:  # noqa: BLE001 - the run still gets its end status, never a traceback
                logger.exception("could not assemble the fallback report")
                record = replace(record, run_error=record.run_error or INTERNAL_ERROR)
            else:
                emit(Report(markdown=salvaged, partial=True, claims=run.evidence.claim_summary))
                update["final_report"] = salvaged
                update["messages"] = [deliverable_message(readable_report(salvaged, run.evidence))]
                report_chars = len(salvaged)
                record = replace(record, salvaged=True)
        elif (
            answer := deliverable(state, run.control, run.evidence, chart_url=answer_images(self.public_url, run.key))
        ) is not None and not _ends_with(state, answer):
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
        digest = await finish_task(
            store, run, {**state, **update}, run_id=run.key, status=end.reason, outcome=outcome_now(),
            failed=end.state == StatusState.ERROR, config=config,
        )  # fmt: skip
        outcome = outcome_now()
        update["outcome"] = outcome.value if outcome else None
        if digest is not None:
            update["digest"] = digest.model_copy(update={"outcome": update["outcome"]}).model_dump(mode="json")
        emit_usage(run, outcome, budget=self.budget, recursion_limit=self.recursion_limit)
        emit_end_status(run, end, outcome, report_chars=report_chars)
        return {**update, **left_in_state(run)}


def _ends_with(state: LifecycleState, answer: str) -> bool:
    messages = state.get("messages") or []
    return bool(messages) and isinstance(messages[-1], AIMessage) and messages[-1].text == answer


def _answered_directly(messages: list[AnyMessage]) -> bool:
    """The orchestrator's own last message is a text answer with no tool call."""
    last = messages[-1] if messages else None
    return bool(
        isinstance(last, AIMessage) and not is_harness_message(last) and last.text.strip() and not last.tool_calls
    )
