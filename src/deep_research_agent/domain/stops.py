"""Why a run or an agent stops: the causes every layer names, from the guard that fires to the end status.

``StopCause`` is what stopped a run (or one agent) early. A stop has a name in every layer it crosses: the
``status`` event its guard sends as it stops an agent (``halt_state``) and as it warns first
(``warning_state``), the halted sub-agent's ``subagent_findings.halted``
(``halted_by``), the run's end reason (``end_reason``) and end state (``end_state``), the outcome it forces
(``outcome``), and the words a message says it with (``wording``). ``STOPS`` is the one table of those
correspondences; every layer derives its name for a stop from the cause, so a new stop is one new row
(and a client's guard warnings and stops, ``GUARD_WARNING_STATES`` and ``GUARD_STOP_STATES``, follow).
The wire values are the names' own (``names``); the cause itself is never sent.

``RunError`` is a failure that ends the run, kept in the orchestrator's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypedDict

from .names import EndReason, HaltedBy, Outcome, StatusState


class StopCause(StrEnum):
    """What stopped a run, or one agent of it, before it finished."""

    # A run ceiling: tool calls, tokens, wall-clock time or dollars.
    BUDGET = "budget"
    # LangGraph's recursion limit, in graph steps (an agent stops cleanly before it).
    STEP_LIMIT = "step_limit"
    # One identical tool call repeated over and over.
    LOOP = "loop"
    # The model's output degenerated twice in one turn.
    RUNAWAY = "runaway"
    # The user asked the run to stop now and report.
    USER = "user"
    # The orchestrator kept announcing a next step without taking it.
    STALLED = "stalled"

    @property
    def stop(self) -> Stop:
        return STOPS[self]

    @property
    def end_reason(self) -> EndReason:
        return STOPS[self].end_reason

    @property
    def end_state(self) -> StatusState:
        return STOPS[self].end_state

    @property
    def halted_by(self) -> HaltedBy | None:
        return STOPS[self].halted_by

    @property
    def halt_state(self) -> StatusState | None:
        return STOPS[self].halt_state

    @property
    def outcome(self) -> Outcome | None:
        return STOPS[self].outcome

    @property
    def wording(self) -> str:
        return STOPS[self].wording

    @classmethod
    def of(cls, reason: EndReason) -> StopCause | None:
        """The cause whose halt ends a run with ``reason``; None when ``reason`` is no halt."""
        return _BY_END_REASON.get(reason)

    @classmethod
    def halting(cls, reason: EndReason) -> StopCause:
        """The cause of a halt that ended a run with ``reason``; ValueError when ``reason`` is no halt."""
        cause = _BY_END_REASON.get(reason)
        if cause is None:
            raise ValueError(f"{reason!r} is not the end reason of a halt")
        return cause


@dataclass(frozen=True)
class Stop:
    """Every name of one stop."""

    end_reason: EndReason
    """The ``reason`` of the end status of a run this stop halted."""
    end_state: StatusState
    """The end status' ``state``: ``done`` for the user's stop, ``error`` for the rest."""
    halted_by: HaltedBy | None
    """The ``halted`` of a sub-agent this stop stopped; None when it stops only the orchestrator."""
    halt_state: StatusState | None
    """The ``status`` event sent as it stops an agent; None when it sends none of its own."""
    warning_state: StatusState | None
    """The ``status`` event its guard sends as it warns and lets the agent go on (the nudge before the stop);
    None when it gives no warning of its own."""
    outcome: Outcome | None
    """The outcome it forces on a run it halted; None when the report's qualities decide."""
    wording: str
    """What stopped the agent, for a message: "Stopped by <wording>", "halted by <wording>"."""


STOPS: dict[StopCause, Stop] = {
    StopCause.BUDGET: Stop(
        end_reason=EndReason.BUDGET_EXHAUSTED,
        end_state=StatusState.ERROR,
        halted_by=HaltedBy.BUDGET,
        halt_state=StatusState.BUDGET_HALT,
        warning_state=StatusState.BUDGET_SOFT,
        outcome=Outcome.BUDGET_EXHAUSTED,
        wording="the run's budget",
    ),
    StopCause.STEP_LIMIT: Stop(
        end_reason=EndReason.RECURSION_LIMIT,
        end_state=StatusState.ERROR,
        halted_by=HaltedBy.STEP_LIMIT,
        halt_state=StatusState.RECURSION_LIMIT,
        warning_state=None,
        outcome=Outcome.BUDGET_EXHAUSTED,
        wording="the step limit",
    ),
    StopCause.LOOP: Stop(
        end_reason=EndReason.LOOP_HALT,
        end_state=StatusState.ERROR,
        halted_by=HaltedBy.LOOP_GUARD,
        halt_state=StatusState.LOOP_HALT,
        warning_state=StatusState.LOOP_DETECTED,
        outcome=None,
        wording="the loop guard (it kept repeating one identical tool call)",
    ),
    StopCause.RUNAWAY: Stop(
        end_reason=EndReason.RUNAWAY_HALT,
        end_state=StatusState.ERROR,
        halted_by=HaltedBy.RUNAWAY_GUARD,
        halt_state=StatusState.RUNAWAY_HALT,
        warning_state=StatusState.RUNAWAY_OUTPUT,
        outcome=None,
        wording="the runaway-output guard (its output degenerated twice)",
    ),
    StopCause.USER: Stop(
        end_reason=EndReason.STOPPED_BY_USER,
        end_state=StatusState.DONE,
        halted_by=HaltedBy.USER,
        halt_state=StatusState.STOP_REQUESTED,
        warning_state=None,
        outcome=None,
        wording="the user's request to stop and report",
    ),
    StopCause.STALLED: Stop(
        end_reason=EndReason.STALLED_AFTER_NUDGES,
        end_state=StatusState.ERROR,
        halted_by=None,
        halt_state=None,
        warning_state=None,
        outcome=None,
        wording="the completion check (the orchestrator kept announcing a next step without taking it)",
    ),
}

_BY_END_REASON = {stop.end_reason: cause for cause, stop in STOPS.items()}

# The end reasons that are halts: the run stopped early and a report was assembled from its findings.
HALT_REASONS = frozenset(_BY_END_REASON)

# The status states a client shows as a guard's warning (the agent goes on) and as a guard's stop, with the
# model endpoint's own: a rate-limit wait the run rides out, and a model that cannot be reached. The user's
# stop is the user's request (``stop_requested``), not a guard's.
GUARD_WARNING_STATES = frozenset(
    {stop.warning_state for stop in STOPS.values() if stop.warning_state is not None} | {StatusState.RATE_LIMITED}
)
GUARD_STOP_STATES = frozenset(
    {stop.halt_state for cause, stop in STOPS.items() if stop.halt_state is not None and cause is not StopCause.USER}
    | {StatusState.MODEL_UNAVAILABLE}
)


class RunError(TypedDict):
    """A failure that ends the run, as kept in the orchestrator's state (plain strings, checkpointable)."""

    reason: str
    detail: str
