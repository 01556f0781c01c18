"""The report of a research run that ended undelivered: its last report-like text, or its findings.

Contract: ``fallback_report(messages, evidence, why=...)`` takes the orchestrator's newest report-like
text (a prose reply, or a ``submit_report`` draft the report gate sent back) under an
``incomplete_banner``, or else ``salvage_report`` from the handed-over findings. Its citations are vetted
like a submitted report's (never-retrieved ones removed, unverifiable ones flagged) and recorded as the
delivered citations. It calls no model.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage

from ..delivery.final_text import classify_final_text
from ..domain.charts import DEFAULT_MAX_CHARTS
from ..domain.conversation import is_harness_message
from ..domain.names import ToolName
from ..domain.stops import RunError
from ..evidence.store import EvidenceStore
from ..report.salvage import incomplete_banner, salvage_report
from ..report.vetting import finalise, vet_report
from ..run import Halt


def fallback_report(
    messages: Sequence[AnyMessage], evidence: EvidenceStore, *, why: str, max_charts: int = DEFAULT_MAX_CHARTS
) -> str:
    """``max_charts``: the charts the report may hold, as the report gate allows them."""
    draft = last_report_like_text(messages)
    if draft is not None:
        vetted = vet_report(draft, evidence, max_charts=max_charts)
        return incomplete_banner(["the final review and delivery of this report"], why) + finalise(vetted, evidence)
    return finalise(vet_report(salvage_report(evidence, reason=why), evidence, max_charts=max_charts), evidence)


def why_undelivered(run_error: RunError | None, halt: Halt | None) -> str:
    if run_error:
        return run_error["detail"]
    if halt is not None:
        return halt.detail
    return "the orchestrator stopped without delivering its report"


def last_report_like_text(messages: Sequence[AnyMessage]) -> str | None:
    """The newest report the orchestrator wrote: a prose reply, or a ``submit_report`` draft sent back."""
    for message in reversed(messages):
        if not isinstance(message, AIMessage) or is_harness_message(message):
            continue
        drafts = [
            str(c["args"].get("report_markdown") or "")
            for c in message.tool_calls
            if c["name"] == ToolName.SUBMIT_REPORT
        ]
        for text in [*drafts, message.text]:
            if text.strip() and classify_final_text(text) == "report_like":
                return text
    return None
