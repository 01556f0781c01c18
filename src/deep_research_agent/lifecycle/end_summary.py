"""What a closed run reports and leaves: its ``usage`` event, its end status and the state keys it fills.

Contract (the run's closing calls each once, in this order, after it decided the end and the outcome):
- ``emit_usage`` sends the ``usage`` event: the run's totals and per-role counters (costs rounded to
  micro-dollars), compactions, the citation and claim summaries, the outcome, the run time, the limits it
  ran under (the ``budget`` and the graph's ``recursion_limit``), and the reviewed plan's estimate with the
  actual cost's deviation from it;
- ``emit_end_status`` sends the one ``status`` ``done``/``error`` of the decided end, with the run's tool
  calls, tokens, report size, run time and outcome; its ``detail`` is the end's, then the cost against the
  plan's estimate when there was one, then ``Run time Xm Ys.``;
- ``left_in_state`` is what the run leaves in the thread's state: its ``sources`` and ``evidence``
  summaries, and, only for a run that delivered a report (a citation summary exists), the report's claims
  (``citations``, one entry per claim), their counts (``claim_summary``) and per-source verdicts
  (``cited_sources``), which replace those of the thread's earlier report.
"""

from __future__ import annotations

from typing import Any

from ..delivery.end_state import EndStatus
from ..domain.clock import format_elapsed
from ..domain.names import Outcome, StatusState
from ..domain.plan import PlanEstimate, estimate_deviation
from ..guards.budget import BudgetLimits
from ..protocol.events import DoneStatus, ErrorStatus, Limits, Usage, emit
from ..run import Run, evidence_summaries


def emit_usage(run: Run, outcome: Outcome | None, *, budget: BudgetLimits, recursion_limit: int) -> None:
    """Send the run's one ``usage`` event."""
    totals = run.usage.totals()
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
                recursion_limit=recursion_limit,
            ),
            plan_estimate=estimate,
            plan_estimate_deviation=estimate_deviation(estimate, totals.cost_usd) if estimate else None,
        )
    )


def emit_end_status(run: Run, end: EndStatus, outcome: Outcome | None, *, report_chars: int) -> None:
    """Send the run's one end status, ``done`` or ``error`` as ``end`` decided."""
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


def left_in_state(run: Run) -> dict[str, Any]:
    """The state keys the run fills as it ends: its sources and evidence, and a delivered report's claims."""
    left: dict[str, Any] = {
        "sources": [
            {"index": s.index, "url": s.url, "domain": s.domain, "title": s.title}
            | ({"paper": s.paper.model_dump(mode="json")} if s.paper else {})
            | ({"urls": list(s.urls)} if len(s.urls) > 1 else {})
            for s in run.evidence.sources()
        ],
        "evidence": evidence_summaries(run.evidence.records()),
    }
    if run.evidence.citation_summary is not None:
        summary = run.evidence.claim_summary
        left["citations"] = [claim.model_dump(mode="json") for claim in run.evidence.claims]
        left["claim_summary"] = summary.model_dump(mode="json") if summary else None
        left["cited_sources"] = [
            c.model_dump(include={"index", "url", "title", "evidence_id", "verified", "reason", "detail"})
            for c in run.evidence.citations
        ]
    return left


def _against_estimate(run: Run) -> str:
    """The end status' sentence on the actual cost against the reviewed plan's estimate; empty without one."""
    estimate = run.attachments.get(PlanEstimate)
    if estimate is None:
        return ""
    cost = run.usage.totals().cost_usd
    deviation = estimate_deviation(estimate, cost)
    off = f" ({deviation:+.0%})" if deviation is not None else ""
    return f" Cost ${cost:.4f} against the plan's estimate of ${estimate.cost_usd:.4f}{off}."
