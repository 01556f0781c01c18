"""Specification of the stop vocabulary: one cause per stop, and every name of a stop derived from its cause."""

from __future__ import annotations

import typing

import pytest

from deep_research_agent.domain.names import EndReason, HaltedBy, Outcome, StatusState
from deep_research_agent.domain.stops import GUARD_STOP_STATES, GUARD_WARNING_STATES, HALT_REASONS, STOPS, StopCause
from deep_research_agent.protocol.events import STATUS_MODELS, DoneStatus, ErrorStatus
from deep_research_agent.run import Halt
from deep_research_agent.run.control import RunControl


def test_every_cause_has_one_row_and_every_halt_reason_one_cause():
    assert list(STOPS) == list(StopCause)
    assert len({stop.end_reason for stop in STOPS.values()}) == len(STOPS)
    assert HALT_REASONS == {cause.end_reason for cause in StopCause}
    assert HALT_REASONS == {
        EndReason.STOPPED_BY_USER,
        EndReason.BUDGET_EXHAUSTED,
        EndReason.RECURSION_LIMIT,
        EndReason.LOOP_HALT,
        EndReason.RUNAWAY_HALT,
        EndReason.STALLED_AFTER_NUDGES,
    }


def test_every_halted_value_names_exactly_one_cause():
    named = [cause.halted_by for cause in StopCause if cause.halted_by is not None]

    assert sorted(named) == sorted(HaltedBy)
    assert [cause for cause in StopCause if cause.halted_by is None] == [StopCause.STALLED]


@pytest.mark.parametrize("cause", list(StopCause))
def test_a_causes_names_are_the_wire_names_of_one_stop(cause):
    assert StopCause.of(cause.end_reason) is cause
    assert StopCause.halting(cause.end_reason) is cause
    assert cause.end_state in (StatusState.DONE, StatusState.ERROR)
    end_model = DoneStatus if cause.end_state == StatusState.DONE else ErrorStatus
    assert end_model(reason=cause.end_reason, detail="d", **_END).reason == cause.end_reason
    if cause.halt_state is not None:
        assert cause.halt_state in STATUS_MODELS
    assert cause.wording and cause.wording == cause.wording.strip()


_END = {"tool_calls": 0, "total_tokens": 0, "report_chars": 0, "elapsed_s": 0.0, "elapsed": "0m 0s"}


def test_the_stops_of_each_name_as_before():
    budget, steps, loop, runaway, user, stalled = (StopCause[name] for name in StopCause.__members__)

    assert (budget.end_reason, budget.halted_by, budget.halt_state, budget.outcome) == (
        EndReason.BUDGET_EXHAUSTED,
        HaltedBy.BUDGET,
        StatusState.BUDGET_HALT,
        Outcome.BUDGET_EXHAUSTED,
    )
    assert (steps.end_reason, steps.halted_by, steps.halt_state, steps.outcome) == (
        EndReason.RECURSION_LIMIT,
        HaltedBy.STEP_LIMIT,
        StatusState.RECURSION_LIMIT,
        Outcome.BUDGET_EXHAUSTED,
    )
    assert (loop.end_reason, loop.halted_by, loop.halt_state) == (
        EndReason.LOOP_HALT,
        HaltedBy.LOOP_GUARD,
        StatusState.LOOP_HALT,
    )
    assert (runaway.end_reason, runaway.halted_by, runaway.halt_state) == (
        EndReason.RUNAWAY_HALT,
        HaltedBy.RUNAWAY_GUARD,
        StatusState.RUNAWAY_HALT,
    )
    assert (user.end_reason, user.end_state, user.halted_by) == (
        EndReason.STOPPED_BY_USER,
        StatusState.DONE,
        HaltedBy.USER,
    )
    assert stalled.end_reason == EndReason.STALLED_AFTER_NUDGES and stalled.halt_state is None
    assert {cause for cause in StopCause if cause.end_state == StatusState.DONE} == {user}
    assert {cause for cause in StopCause if cause.outcome is not None} == {budget, steps}


def test_a_reason_that_is_no_halt_has_no_cause():
    assert StopCause.of(EndReason.REPORT_DELIVERED) is None
    with pytest.raises(ValueError, match="not the end reason of a halt"):
        StopCause.halting(EndReason.MODEL_ERROR)


def test_a_halt_is_kept_in_the_ledger_by_its_end_reason_and_restored_to_its_cause():
    control = RunControl()
    control.halt_run(Halt(cause=StopCause.STEP_LIMIT, detail="the run reached its recursion limit"))

    snapshot = control.snapshot()
    restored = RunControl()
    restored.restore(snapshot)

    assert snapshot["halt"] == {
        "reason": "recursion_limit",
        "detail": "the run reached its recursion limit",
        "ceiling": None,
    }
    assert restored.halt == control.halt and restored.halt is not None and restored.halt.reason == "recursion_limit"


def test_each_halt_states_model_is_a_status_model():
    halt_states = {cause.halt_state for cause in StopCause} - {None}

    for state in halt_states:
        assert typing.get_args(STATUS_MODELS[state].model_fields["state"].annotation) == (state,)


def test_a_clients_guard_warnings_and_guard_stops_follow_from_the_stop_table():
    assert GUARD_WARNING_STATES == {
        StatusState.BUDGET_SOFT,
        StatusState.LOOP_DETECTED,
        StatusState.RUNAWAY_OUTPUT,
        StatusState.RATE_LIMITED,
    }
    assert GUARD_STOP_STATES == {
        StatusState.BUDGET_HALT,
        StatusState.RECURSION_LIMIT,
        StatusState.LOOP_HALT,
        StatusState.RUNAWAY_HALT,
        StatusState.MODEL_UNAVAILABLE,
    }
    assert StatusState.STOP_REQUESTED not in GUARD_STOP_STATES, "the user's stop is no guard's"
    assert not GUARD_WARNING_STATES & GUARD_STOP_STATES
    for state in GUARD_WARNING_STATES | GUARD_STOP_STATES:
        assert state in STATUS_MODELS, state
