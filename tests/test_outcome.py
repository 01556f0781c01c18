"""Specification of the run's outcome: how good the answer is, named once from how the run ended."""

from __future__ import annotations

import pytest

from deep_research_agent.delivery.end_state import EndStatus
from deep_research_agent.domain.errors import ToolFailure
from deep_research_agent.domain.names import ClaimVerdict, EndReason, Outcome, StatusState
from deep_research_agent.lifecycle.outcome import OutcomeFacts, decide_outcome
from deep_research_agent.run import Run, bound_run
from deep_research_agent.tools.errors import retrieval_answered, retrieval_failure_text

DELIVERED = EndStatus(StatusState.DONE, EndReason.REPORT_DELIVERED, "Report delivered.")
SUPPORTED = ("supported", "supported")


def facts(**overrides) -> OutcomeFacts:
    base = dict(
        delivered=True,
        incomplete=False,
        verdicts=SUPPORTED,
        evidence_insufficient=False,
        retrieval_failures=0,
        recording_failures=0,
    )
    return OutcomeFacts.of(**{**base, **overrides})


def test_a_delivered_report_whose_every_claim_checks_out_is_answered():
    assert decide_outcome(DELIVERED, facts()) == Outcome.ANSWERED


def test_a_direct_answer_is_answered():
    assert (
        decide_outcome(EndStatus(StatusState.DONE, EndReason.DIRECT_ANSWER, "."), facts(verdicts=()))
        == Outcome.ANSWERED
    )


@pytest.mark.parametrize("verdict", [v for v in ClaimVerdict if v.flags])
def test_one_claim_a_check_flagged_makes_the_answer_partial(verdict):
    assert decide_outcome(DELIVERED, facts(verdicts=("supported", verdict))) == Outcome.PARTIAL


def test_a_claim_nothing_checked_leaves_the_answer_answered_its_coverage_says_how_much_was_checked():
    assert decide_outcome(DELIVERED, facts(verdicts=("supported", ClaimVerdict.UNCHECKED))) == Outcome.ANSWERED


@pytest.mark.parametrize(
    "reason", [EndReason.STOPPED_BY_USER, EndReason.LOOP_HALT, EndReason.REPORT_SALVAGED, EndReason.MODEL_ERROR]
)
def test_a_report_assembled_from_an_incomplete_run_is_partial(reason):
    end = EndStatus(StatusState.ERROR, reason, ".")
    assert decide_outcome(end, facts(incomplete=True, verdicts=())) == Outcome.PARTIAL


@pytest.mark.parametrize("reason", [EndReason.BUDGET_EXHAUSTED, EndReason.RECURSION_LIMIT])
def test_a_ceiling_that_ended_the_run_is_budget_exhausted_whatever_the_report_says(reason):
    end = EndStatus(StatusState.ERROR, reason, ".")
    assert (
        decide_outcome(end, facts(incomplete=True, retrieval_failures=2, evidence_insufficient=True))
        == Outcome.BUDGET_EXHAUSTED
    )


def test_an_unanswered_retrieval_failure_comes_before_the_report_s_own_qualities():
    assert (
        decide_outcome(DELIVERED, facts(retrieval_failures=1, evidence_insufficient=True, verdicts=("conflicting",)))
        == Outcome.PARTIAL_RETRIEVAL
    )


def test_the_orchestrator_s_explicit_flag_is_insufficient_evidence():
    assert (
        decide_outcome(DELIVERED, facts(evidence_insufficient=True, verdicts=("uncited_number",)))
        == Outcome.INSUFFICIENT_EVIDENCE
    )


def test_a_failed_write_comes_first_even_when_nothing_else_went_wrong():
    assert decide_outcome(DELIVERED, facts(recording_failures=1)) == Outcome.RECORDING_FAILED
    halted = EndStatus(StatusState.ERROR, EndReason.BUDGET_EXHAUSTED, ".")
    assert decide_outcome(halted, facts(recording_failures=1, incomplete=True)) == Outcome.RECORDING_FAILED


@pytest.mark.parametrize(
    "reason",
    [EndReason.AWAITING_CLARIFICATION, EndReason.ENDED_WITHOUT_REPORT, EndReason.CONFIG_ERROR, EndReason.MODEL_ERROR],
)
def test_a_run_that_delivered_nothing_has_no_outcome(reason):
    assert decide_outcome(EndStatus(StatusState.ERROR, reason, "."), facts(delivered=False, verdicts=())) is None


def test_a_retrieval_failure_is_kept_until_the_same_call_succeeds():
    with bound_run(Run(key="r")) as run:
        text = retrieval_failure_text(
            run.failures, "web_fetch", "http://a.test/x", ToolFailure.permanent("HTTP 404 for http://a.test/x")
        )
        retrieval_failure_text(run.failures, "web_search", "kelp", ToolFailure.transient("Tavily timed out"))
        assert text == "TOOL ERROR (web_fetch, permanent): HTTP 404 for http://a.test/x"
        retrieval_answered(run.failures, "web_search", "kelp")
        assert [(f.tool, f.target) for f in run.failures.retrieval()] == [("web_fetch", "http://a.test/x")]
