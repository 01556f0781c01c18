"""The answer to a plan review, read strictly: one decision the plan can take, or a sentence saying what is wrong
(what the reviewer reads while the plan keeps waiting)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.plan import PlanUnit
from deep_research_agent.domain.plan_answer import PlanRules, ReviewAnswerError, ReviewDecision, read_review_answer

RULES = PlanRules(max_units=3, subagent_types=("research-subagent", "coding-subagent"))
UNITS = [{"brief": "Find 2025 kelp output in Norway", "expected_sources": ["Statistics Norway"]}]


def edit(args: Any) -> dict[str, Any]:
    return {"decisions": [{"type": "edit", "edited_action": {"name": "propose_plan", "args": args}}]}


def refusal(answer: Any) -> str:
    with pytest.raises(ReviewAnswerError) as refused:
        read_review_answer(answer, RULES)
    return str(refused.value)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("approve", 'must be an object such as {"decisions": [{"type": "approve"}]}, not the text "approve"'),
        ([], "must be an object such as"),
        ([{"type": "approve"}], "not a list"),
        (None, "not null"),
        ({"decisions": "approve"}, '"decisions" must be a list holding one decision, not the text "approve"'),
        (
            {"decisions": []},
            '"decisions" must hold exactly one decision, for the plan\'s one action request; it holds 0',
        ),
        ({"decisions": [{"type": "approve"}, {"type": "approve"}]}, "it holds 2"),
        ({"decisions": ["approve"]}, 'the decision must be an object such as {"type": "approve"}, not the text'),
        (
            {"decisions": [{"type": "respond", "message": "x"}]},
            '"type" must be "approve", "edit" or "reject"; it is the text "respond"',
        ),
        ({"decisions": [{"type": "Reject"}]}, 'it is the text "Reject"'),
        ({"decisions": [{"kind": "approve"}]}, '"type" must be "approve", "edit" or "reject"; it has none'),
        ({"decision": [{"type": "approve"}]}, 'the answer has no "decisions" (it has "decision")'),
        ({"decisions": [{"type": "approve"}], "note": "ok"}, 'the answer has keys besides "decisions": "note"'),
        ({"decisions": [{"type": "reject", "mesage": "Cover Chile"}]}, 'the reject decision has unknown keys "mesage"'),
        ({"decisions": [{"type": "approve", "message": "fine"}]}, 'the approve decision has unknown keys "message"'),
        (
            {"decisions": [{"type": "reject", "message": 3}]},
            'the reject decision\'s "message" must be text, not a number',
        ),
        ({"decisions": [{"type": "edit"}]}, 'an edit decision carries the edited plan as "edited_action"'),
        ({"decisions": [{"type": "edit", "edited_action": {"name": "propose_plan"}}]}, "carries the edited plan"),
        ({"decisions": [{"type": "edit", "edited_args": {"units": UNITS}}]}, 'unknown keys "edited_args"'),
    ],
)
def test_an_answer_that_is_not_one_valid_decision_is_refused_saying_what_is_wrong(answer, said):
    assert said in refusal(answer)


@pytest.mark.parametrize("kind", ["approve", "reject"])
def test_one_approve_or_reject_is_taken(kind):
    assert read_review_answer({"decisions": [{"type": kind}]}, RULES) == ReviewDecision(type=kind)


def test_a_rejection_keeps_its_message_without_surrounding_blanks():
    answer = {"decisions": [{"type": "reject", "message": "  Cover South America instead.\n"}]}

    assert read_review_answer(answer, RULES) == ReviewDecision(type="reject", message="Cover South America instead.")


def test_an_edit_carries_its_units_and_the_estimate_the_client_sent_back_is_ignored():
    decision = read_review_answer(edit({"units": UNITS, "cost_estimate": {"units": 9}}), RULES)

    assert decision.type == "edit"
    assert decision.units == (
        PlanUnit(brief="Find 2025 kelp output in Norway", expected_sources=["Statistics Norway"]),
    )


def test_an_edit_whose_units_are_json_text_as_agent_chat_ui_sends_them_is_taken():
    # agent-chat-ui edits each argument in a text field and sends back its text; untouched ones stay objects.
    args = {"units": json.dumps(UNITS, indent=2), "cost_estimate": {"units": 1, "tokens": 0, "cost_usd": 0}}

    decision = read_review_answer(edit(args), RULES)

    assert [unit.brief for unit in decision.units] == ["Find 2025 kelp output in Norway"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            {"units": '[{"brief": "Find A"}'},
            'the edited plan is not valid: "units": the units are text that is not JSON',
        ),
        ({"units": []}, "the edited plan cannot start: the plan has no units (to start nothing, reject the plan)"),
        ({}, 'the edited plan is not valid: "units" is missing'),
        ({"units": [{"brief": "   "}]}, 'unit 1\'s "brief": a brief must say what to research: this one is blank'),
        ({"units": [{"breif": "Find A"}]}, 'unit 1\'s "breif" is unknown (a unit has "brief", "subagent_type"'),
        ({"units": UNITS, "unit": UNITS}, '"unit" is unknown'),
        (
            {"units": [{"brief": "Find A", "subagent_type": "web-subagent"}]},
            'unit 1 is for the sub-agent "web-subagent", which this run does not have; its sub-agents are '
            "research-subagent, coding-subagent",
        ),
        (
            {"units": [{"brief": f"Find {n}"} for n in range(500)]},
            "the plan has 500 units and a plan may have at most 3 (plan_max_units)",
        ),
    ],
)
def test_an_edited_plan_that_cannot_start_is_refused_saying_why(args, said):
    assert said in refusal(edit(args))


def test_an_edit_must_name_the_plan_it_edits_when_it_names_one():
    answer = {"decisions": [{"type": "edit", "edited_action": {"name": "task", "args": {"units": UNITS}}}]}

    assert '"edited_action" must name "propose_plan", not the text "task"' in refusal(answer)
    unnamed = {"decisions": [{"type": "edit", "edited_action": {"args": {"units": UNITS}}}]}
    assert read_review_answer(unnamed, RULES).type == "edit"


def test_without_a_unit_limit_any_number_of_units_may_start():
    unbounded = PlanRules(max_units=0, subagent_types=("research-subagent",))

    assert unbounded.problem([PlanUnit(brief=f"Find {n}") for n in range(50)]) == ""


@pytest.mark.parametrize(
    ("max_units", "subagent_types", "parameter"),
    [(-1, ("research-subagent",), "max_units"), (True, ("research-subagent",), "max_units"), (3, (), "subagent_types")],
)
def test_rules_that_no_plan_could_keep_are_refused_where_they_are_built(max_units, subagent_types, parameter):
    with pytest.raises(KnobError, match=parameter):
        PlanRules(max_units=max_units, subagent_types=subagent_types)
