"""How a turn ends: one record of what happened in its run, one pure function that names the end state.

Contract: ``decide_end(record)`` returns the run's single end status, by first match:
a run error (``config_error``, ``too_many_runs``, ``model_error``, ``internal_error``), ``report_delivered``,
``awaiting_clarification``, ``direct_answer`` (triage answered, or the orchestrator answered without
research), a halt (its cause's end state and reason, ``domain.stops``: ``done`` for ``stopped_by_user``, else
``error``: ``budget_exhausted``, ``recursion_limit``, ``loop_halt``, ``runaway_halt``, ``stalled_after_nudges``),
``report_salvaged``, ``ended_without_report``. ``owes_report(record)`` says whether the lifecycle must
assemble a report: research started or the run was halted, and nothing was delivered, asked or answered
directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..domain.names import EndReason, StatusState
from ..domain.stops import RunError
from ..run import Halt, Run


@dataclass(frozen=True)
class EndRecord:
    """Everything the end state depends on, gathered once when the run ends."""

    run_error: RunError | None = None
    report_delivered: bool = False
    clarification_requested: bool = False
    answered_by_triage: bool = False
    answered_directly: bool = False
    research_started: bool = False
    halt: Halt | None = None
    # Research units that handed over at least one finding, and those findings: a hand-over without any
    # (a unit cut short, or whose findings did not validate) gives the salvaged report nothing.
    units: int = 0
    findings: int = 0
    sources_seen: int = 0
    salvaged: bool = False

    @classmethod
    def of(cls, run: Run, state: dict[str, Any], *, answered_directly: bool) -> EndRecord:
        control = run.control
        return cls(
            run_error=state.get("run_error"),
            report_delivered=control.report_delivered,
            clarification_requested=control.clarification_requested,
            answered_by_triage=state.get("triage_verdict") == "simple",
            answered_directly=answered_directly,
            research_started=control.research_started,
            halt=control.halt,
            units=sum(1 for handover in run.evidence.handovers() if handover.findings.findings),
            findings=sum(len(handover.findings.findings) for handover in run.evidence.handovers()),
            sources_seen=len(run.evidence.sources()),
        )


@dataclass(frozen=True)
class EndStatus:
    state: StatusState
    reason: EndReason
    detail: str


def owes_report(record: EndRecord) -> bool:
    if record.report_delivered or record.clarification_requested or record.answered_by_triage:
        return False
    return record.research_started or record.halt is not None


def decide_end(record: EndRecord) -> EndStatus:
    """The single end state of the run, by first match."""
    if record.run_error:
        error = record.run_error
        return EndStatus(StatusState.ERROR, EndReason(error["reason"]), error["detail"].rstrip(".") + ".")
    if record.report_delivered:
        return EndStatus(
            StatusState.DONE,
            EndReason.REPORT_DELIVERED,
            f"Report delivered with {record.sources_seen} source{'' if record.sources_seen == 1 else 's'} seen.",
        )
    if record.clarification_requested:
        return EndStatus(
            StatusState.DONE, EndReason.AWAITING_CLARIFICATION, "Waiting for the answers to the clarifying questions."
        )
    if record.answered_by_triage:
        return EndStatus(
            StatusState.DONE, EndReason.DIRECT_ANSWER, "Answered directly: the question needed no research."
        )
    if not record.research_started and record.halt is None and record.answered_directly:
        return EndStatus(StatusState.DONE, EndReason.DIRECT_ANSWER, "Answered directly, without research.")
    if record.halt is not None:
        halt = record.halt
        detail = halt.detail[:1].upper() + halt.detail[1:].rstrip(".")
        return EndStatus(halt.cause.end_state, halt.reason, f"{detail}. {_assembled_from(record)}")
    if record.salvaged:
        return EndStatus(
            StatusState.DONE,
            EndReason.REPORT_SALVAGED,
            "The orchestrator stopped without delivering; an incomplete report was assembled.",
        )
    return EndStatus(StatusState.ERROR, EndReason.ENDED_WITHOUT_REPORT, "The run ended without delivering a report.")


def _assembled_from(record: EndRecord) -> str:
    """What the incomplete report of a halted run holds, counted from the findings actually handed over."""
    if not record.findings:
        return "An incomplete report was assembled; no research unit had handed over findings."
    findings = f"{record.findings} finding{'s' if record.findings != 1 else ''}"
    units = f"{record.units} research unit{'s' if record.units != 1 else ''}"
    return f"An incomplete report was assembled from {findings} of {units}."
