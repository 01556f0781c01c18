"""How good a run's answer is: one pure function that names the run's ``Outcome`` from how it ended.

The end status says how the run ended; the outcome says what a caller can do with the answer. Contract:
``decide_outcome(end, facts)`` returns, by first match:
- None when the run delivered nothing to judge: it is waiting for clarifying answers, or it ended with
  no report and no answer (a config or model error before any research, a refused question, too many runs);
- ``recording_failed``: a store write of the run did not confirm (``run/recording.py``): the answer is
  delivered, but what the run should have kept for later runs (decisions, task, evidence) is not;
- ``budget_exhausted``: a ceiling ended the run (tool calls, tokens, time, cost, or the step limit): the
  outcome the halt's cause forces (``domain.stops``);
- ``partial_retrieval``: a search, fetch, MCP or corpus call failed and was not answered later, so the
  report was written without it (``tools/errors.py`` ``retrieval_failure_text``);
- ``insufficient_evidence``: the report says the evidence does not answer the question (the
  orchestrator's explicit ``submit_report(evidence_insufficient=true)``);
- ``partial``: delivered with a claim a check flagged (marked ``[unverified]``: any verdict but
  ``supported`` and ``unchecked``), or marked incomplete (a report assembled from the findings of a run
  that stopped early);
- ``answered`` otherwise: delivered, no claim flagged, no ceiling hit (how many claims were checked is the
  claim summary's ``coverage``, beside the outcome).
A failed write comes first because nothing else in the answer tells the caller it happened; a ceiling
comes before the report's own qualities because a report cut short is incomplete whatever it says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..delivery.end_state import EndStatus
from ..domain.names import ClaimVerdict, EndReason, Outcome
from ..domain.stops import StopCause

_NOTHING_DELIVERED = frozenset(
    {
        EndReason.AWAITING_CLARIFICATION,
        EndReason.ENDED_WITHOUT_REPORT,
        EndReason.CONFIG_ERROR,
        EndReason.TOO_MANY_RUNS,
        EndReason.INVALID_QUESTION,
        EndReason.MODEL_ERROR,
        EndReason.INTERNAL_ERROR,
        EndReason.NO_TOOL_CALLS,
        EndReason.PLAN_REVIEW_EXPIRED,
    }
)


@dataclass(frozen=True)
class OutcomeFacts:
    """What the outcome depends on besides the end status, gathered once when the run ends."""

    delivered: bool = False
    """A report or an answer reached the user (delivered, salvaged, or answered directly)."""
    incomplete: bool = False
    """The report was assembled from an incomplete run (``partial: true``)."""
    verdicts: tuple[ClaimVerdict, ...] = ()
    evidence_insufficient: bool = False
    retrieval_failures: int = 0
    recording_failures: int = 0

    @classmethod
    def of(
        cls,
        *,
        delivered: bool,
        incomplete: bool,
        verdicts: Iterable[str],
        evidence_insufficient: bool,
        retrieval_failures: int,
        recording_failures: int,
    ) -> OutcomeFacts:
        return cls(
            delivered=delivered,
            incomplete=incomplete,
            verdicts=tuple(ClaimVerdict(v) for v in verdicts),
            evidence_insufficient=evidence_insufficient,
            retrieval_failures=retrieval_failures,
            recording_failures=recording_failures,
        )


def decide_outcome(end: EndStatus, facts: OutcomeFacts) -> Outcome | None:
    """The run's outcome, by first match (see the module docstring)."""
    if facts.recording_failures:
        return Outcome.RECORDING_FAILED
    if not facts.delivered and end.reason in _NOTHING_DELIVERED:
        return None
    halt = StopCause.of(end.reason)
    if halt is not None and halt.outcome is not None:
        return halt.outcome  # a ceiling's: budget_exhausted
    if facts.retrieval_failures:
        return Outcome.PARTIAL_RETRIEVAL
    if facts.evidence_insufficient:
        return Outcome.INSUFFICIENT_EVIDENCE
    if facts.incomplete or any(verdict.flags for verdict in facts.verdicts):
        return Outcome.PARTIAL
    return Outcome.ANSWERED
