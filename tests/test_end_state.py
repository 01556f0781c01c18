"""How a run ends, as a table: one record of what happened in, exactly one end status out, by first match."""

from __future__ import annotations

import pytest

from deep_research_agent.delivery.end_state import EndRecord, decide_end, owes_report
from deep_research_agent.domain.stops import RunError, StopCause
from deep_research_agent.run import Halt

MODEL_ERROR = RunError(reason="model_error", detail="The model endpoint rejected the API key.")
STOPPED = Halt(cause=StopCause.USER, detail="the user asked the run to stop and report what it found")
OUT_OF_BUDGET = Halt(cause=StopCause.BUDGET, detail="the run's tool-calls budget is used up (10 of 10)")

TABLE = [
    # (what happened, expected state, expected reason)
    (EndRecord(run_error=MODEL_ERROR, report_delivered=True, halt=OUT_OF_BUDGET), "error", "model_error"),
    (EndRecord(report_delivered=True, research_started=True, halt=OUT_OF_BUDGET), "done", "report_delivered"),
    (EndRecord(clarification_requested=True), "done", "awaiting_clarification"),
    (EndRecord(answered_by_triage=True), "done", "direct_answer"),
    (EndRecord(answered_directly=True), "done", "direct_answer"),
    (EndRecord(answered_directly=True, research_started=True, salvaged=True), "done", "report_salvaged"),
    (EndRecord(research_started=True, halt=STOPPED, units=2, salvaged=True), "done", "stopped_by_user"),
    (EndRecord(research_started=True, halt=OUT_OF_BUDGET, units=1, salvaged=True), "error", "budget_exhausted"),
    (EndRecord(answered_directly=True, halt=OUT_OF_BUDGET), "error", "budget_exhausted"),
    (EndRecord(research_started=True, salvaged=True), "done", "report_salvaged"),
    (EndRecord(), "error", "ended_without_report"),
]


@pytest.mark.parametrize(("record", "state", "reason"), TABLE)
def test_one_record_names_one_end_state_by_first_match(record, state, reason):
    end = decide_end(record)

    assert (end.state, end.reason) == (state, reason)
    assert end.detail.endswith(".")


def test_a_halt_says_why_and_how_many_findings_and_units_the_report_was_assembled_from():
    end = decide_end(EndRecord(research_started=True, halt=OUT_OF_BUDGET, units=1, findings=3, salvaged=True))

    assert end.detail == (
        "The run's tool-calls budget is used up (10 of 10). An incomplete report was assembled from 3 findings "
        "of 1 research unit."
    )


def test_a_halt_before_any_finding_was_handed_over_counts_none():
    end = decide_end(EndRecord(research_started=True, halt=OUT_OF_BUDGET, units=0, findings=0, salvaged=True))

    assert end.detail.endswith("An incomplete report was assembled; no research unit had handed over findings.")
    assert "research units" not in end.detail


@pytest.mark.parametrize(
    ("record", "owed"),
    [
        (EndRecord(research_started=True), True),
        (EndRecord(halt=STOPPED), True),
        (EndRecord(research_started=True, report_delivered=True), False),
        (EndRecord(research_started=True, clarification_requested=True), False),
        (EndRecord(answered_by_triage=True, halt=STOPPED), False),
        (EndRecord(answered_directly=True), False),
    ],
)
def test_a_report_is_owed_by_a_run_that_researched_or_was_halted_and_delivered_nothing(record, owed):
    assert owes_report(record) is owed
