"""``submit_report``: the single explicit deliverable of a run.

Contract: the orchestrator calls ``submit_report(report_markdown, evidence_insufficient=false)`` once;
``evidence_insufficient=true`` says the report states plainly that the evidence found does not answer the
question, which makes the run's outcome ``insufficient_evidence`` (an explicit flag rather than a reading
of the prose, so the outcome never depends on wording). The report is recorded in
state as ``final_report``, a ``report`` event carries it to clients (with the counts of its checked claims,
which the report gate recorded on delivery), and ``TurnEndMiddleware`` ends the
turn before the next model call, so delivery never depends on the model choosing to stop. The tool is not
``return_direct``:
langchain ends the turn after a ``return_direct`` tool even when it returned an error, and the report
gate must be able to send a draft back for one revision.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.agents.middleware.types import OmitFromInput
from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command

from ..domain.errors import tool_error_text
from ..domain.names import ToolErrorClass, ToolName
from ..protocol.events import Report, emit
from ..run import Run, run_tool


class ReportState(AgentState):
    """What a run delivers, for clients to read: output only, never run input (a client cannot hand a run
    "evidence" it never fetched). ``citations`` holds one entry per claim of the delivered report,
    ``cited_sources`` one per entry of its Sources list, ``claim_summary`` the report's scores (its claims
    per verdict, judged, citation accuracy: ``domain.claims.ClaimSummary``); ``outcome`` how good the last
    run's answer is (``names.Outcome``, absent while a run only asked clarifying questions)."""

    final_report: NotRequired[Annotated[str, OmitFromInput]]
    sources: NotRequired[Annotated[list[dict[str, Any]], OmitFromInput]]
    evidence: NotRequired[Annotated[list[dict[str, Any]], OmitFromInput]]
    citations: NotRequired[Annotated[list[dict[str, Any]], OmitFromInput]]
    cited_sources: NotRequired[Annotated[list[dict[str, Any]], OmitFromInput]]
    claim_summary: NotRequired[Annotated[dict[str, Any] | None, OmitFromInput]]
    outcome: NotRequired[Annotated[str | None, OmitFromInput]]


@tool(ToolName.SUBMIT_REPORT, parse_docstring=True)
@run_tool
def submit_report(
    run: Run,
    report_markdown: str,
    tool_call_id: Annotated[str, InjectedToolCallId],
    evidence_insufficient: bool = False,
) -> Command:
    """Deliver the final cited report (Markdown). Call exactly once, when the research is done.

    Args:
        report_markdown: the whole report in Markdown.
        evidence_insufficient: true when the evidence found does not answer the question and the report says so.
    """
    text = report_markdown.strip()
    if not text:
        return Command(
            update={
                "messages": [
                    ToolMessage(
                        tool_error_text(
                            ToolName.SUBMIT_REPORT,
                            ToolErrorClass.PERMANENT,
                            "the report is empty. Pass the whole Markdown report.",
                        ),
                        tool_call_id=tool_call_id,
                        status="error",
                    )
                ]
            }
        )
    run.control.mark_report_delivered(evidence_insufficient=bool(evidence_insufficient))
    emit(Report(markdown=text, claims=run.evidence.claim_summary))
    return Command(
        update={
            "final_report": text,
            "messages": [ToolMessage("Report delivered to the user.", tool_call_id=tool_call_id)],
        }
    )


class ReportMiddleware(AgentMiddleware):
    """Gives the orchestrator ``submit_report`` and the report's state keys."""

    state_schema = ReportState
    tools = [submit_report]
