"""Plan review through ``langgraph dev``: the run pauses on one human-in-the-loop action request holding the
plan, and each answer (approve, edit, reject, too late) resumes it as the user meant."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client

from testkit.agent_server import GRAPH_ID, AgentServer, RunResult, stream_run
from testkit.scenarios import (
    brief_of,
    findings_json,
    message_text,
    orchestrator,
    requests_of,
    researcher,
    scenario,
    submit,
    system_text,
)
from testkit.scripted_model import call, turn
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REVIEW = {"plan_review": True}
UNITS = [
    {"brief": "Find 2025 kelp farm output in Norway", "expected_sources": ["Statistics Norway", "fisheries reports"]},
    {"brief": "Find 2025 kelp farm output in Scotland", "expected_sources": ["Marine Scotland"]},
]
REPORT = "# Kelp farms\n\nOutput grew.\n\n## Sources\n"
# The orchestrator's reply after an approval is the approved units' tasks, written by the harness, not the model:
# the scripted turn at that position is never asked for.
NEVER_ASKED = turn(content="(never asked: an approved plan's units start without a model call)")


def propose(units: list[dict[str, Any]]) -> dict[str, Any]:
    return turn(tool_calls=[call("propose_plan", units=units)])


def review_request(run: RunResult) -> dict[str, Any]:
    """The one interrupt the paused thread holds: its value, a langchain ``HITLRequest``."""
    interrupts = run.state.get("interrupts") or []
    assert len(interrupts) == 1, interrupts
    return interrupts[0]["value"]


async def answer(
    url: str, paused: RunResult, decisions: list[dict[str, Any]], configurable: dict[str, Any] = REVIEW, **stream: Any
) -> RunResult:
    """Resumes the paused run with ``decisions``, in langchain's human-in-the-loop format, as a UI does."""
    return await stream_run(
        url, None, thread_id=paused.thread_id, configurable=configurable, resume={"decisions": decisions}, **stream
    )


def briefs_received(scripted: Any) -> list[str]:
    """The brief each research sub-agent started on: the user message of its first request."""
    return [brief_of(r) for r in requests_of(scripted, "research-subagent") if r["turn"] == 0]


def kelp_plan_scenario():
    """The orchestrator proposes ``UNITS`` (then ``NEVER_ASKED``, then ``REPORT``); every unit finds "Output grew."."""
    return scenario(
        orchestrator(propose(UNITS), NEVER_ASKED, submit(REPORT)),
        researcher(turn(content=findings_json("Output grew.")), repeat_last=True),
    )


async def test_a_reviewed_run_pauses_on_one_action_request_holding_the_plan_and_approve_starts_its_units(
    agent_server, scripted
):
    scripted.set_scenario(kelp_plan_scenario())

    paused = await stream_run(agent_server.url, "How is kelp farming doing in Europe?", configurable=REVIEW)

    request = review_request(paused)
    [action] = request["action_requests"]
    assert action["name"] == "propose_plan"
    assert [u["brief"] for u in action["args"]["units"]] == [u["brief"] for u in UNITS]
    assert action["args"]["units"][0]["expected_sources"] == UNITS[0]["expected_sources"]
    assert action["args"]["cost_estimate"]["units"] == 2 and action["args"]["cost_estimate"]["tokens"] > 0
    assert "Find 2025 kelp farm output in Norway (expected sources: Statistics Norway" in action["description"]
    assert "Estimated cost: $" in action["description"]
    assert request["review_configs"] == [
        {"action_name": "propose_plan", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    [planning] = requests_of(scripted, "orchestrator")
    assert "## Plan review" in system_text(planning["body"])
    assert "propose_plan" in [tool["function"]["name"] for tool in planning["body"]["tools"]]
    assert paused.end_statuses == [], "a paused run has not ended"
    assert briefs_received(scripted) == [], "no unit starts before the review"
    # deep-agents-ui matches the action request to the tool call of the same name on the last AI message.
    last_ai = [m for m in paused.values["messages"] if m["type"] == "ai"][-1]
    assert [c["name"] for c in last_ai["tool_calls"]] == ["propose_plan"]

    # As deep-agents-ui resumes: exactly one decision, streaming only values and message tuples.
    approved = await answer(agent_server.url, paused, [{"type": "approve"}], stream_mode=["values", "messages-tuple"])

    assert sorted(briefs_received(scripted)) == sorted(u["brief"] for u in UNITS)
    assert approved.values["final_report"].startswith("# Kelp farms")
    assert not approved.state.get("interrupts")
    assert len(requests_of(scripted, "orchestrator")) == 2, "the approved units started without a model call"


async def test_a_review_switched_on_only_in_the_first_runs_configurable_is_answered_by_a_resume_without_config(
    agent_server, scripted
):
    """deep-agents-ui resumes with ``Command(resume=...)`` and no config: the resumed run's settings have no
    plan review, and its graph still answers the pending review; its usage counts the call that proposed."""
    scripted.set_scenario(kelp_plan_scenario())
    paused = await stream_run(agent_server.url, "How is kelp farming doing in Europe?", configurable=REVIEW)
    [action] = review_request(paused)["action_requests"]
    assert action["name"] == "propose_plan"

    approved = await stream_run(
        agent_server.url,
        None,
        thread_id=paused.thread_id,
        resume={"decisions": [{"type": "approve"}]},
        send_config=False,
    )

    assert sorted(briefs_received(scripted)) == sorted(u["brief"] for u in UNITS), "the approval was ignored"
    assert [(e["state"], e["reason"]) for e in approved.end_statuses] == [("done", "report_delivered")]
    assert approved.values["final_report"].startswith("# Kelp farms")
    [usage] = approved.of_type("usage")
    assert len(requests_of(scripted, "orchestrator")) == 2, "proposing, then submitting the report"
    assert usage["per_role"]["orchestrator"]["model_calls"] == 2, "the call that proposed the plan is not counted"
    assert usage["plan_estimate"]["units"] == 2


async def test_a_run_without_plan_review_is_not_shown_propose_plan_and_its_units_start_at_once(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(tool_calls=[call("task", description=UNITS[0]["brief"], subagent_type="research-subagent")]),
                submit(REPORT),
            ),
            researcher(turn(content=findings_json("Output grew.")), repeat_last=True),
        )
    )

    run = await stream_run(agent_server.url, "How is kelp farming doing in Norway?")

    assert briefs_received(scripted) == [UNITS[0]["brief"]]
    first = requests_of(scripted, "orchestrator")[0]["body"]
    assert "propose_plan" not in [tool["function"]["name"] for tool in first["tools"]]
    assert "## Plan review" not in system_text(first)
    [start] = run.of_type("run_start")
    assert "propose_plan" not in start["tools"]["orchestrator"]
    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]


async def test_an_edited_plan_runs_the_edited_units_with_the_edited_brief(agent_server, scripted):
    scripted.set_scenario(kelp_plan_scenario())
    paused = await stream_run(agent_server.url, "How is kelp farming doing in Europe?", configurable=REVIEW)
    [action] = review_request(paused)["action_requests"]
    edited = {"units": [{"brief": "Find 2025 kelp farm output in the Faroe Islands only"}]}

    resumed = await answer(
        agent_server.url, paused, [{"type": "edit", "edited_action": {"name": action["name"], "args": edited}}]
    )

    assert briefs_received(scripted) == ["Find 2025 kelp farm output in the Faroe Islands only"]
    assert [(e["state"], e["reason"]) for e in resumed.end_statuses] == [("done", "report_delivered")]
    [usage] = resumed.of_type("usage")
    assert usage["plan_estimate"]["units"] == 1, "the estimate is the edited plan's"
    tasks = [c for m in resumed.values["messages"] if m["type"] == "ai" for c in m.get("tool_calls") or []]
    assert [c["args"]["description"] for c in tasks if c["name"] == "task"] == [edited["units"][0]["brief"]]


async def test_a_rejected_plan_is_planned_again_from_the_message_and_reviewed_again(agent_server, scripted):
    second = [{"brief": "Find 2025 seaweed farm output in Chile", "expected_sources": ["Sernapesca"]}]
    scripted.set_scenario(
        scenario(
            orchestrator(propose(UNITS), propose(second), NEVER_ASKED, submit(REPORT)),
            researcher(turn(content=findings_json("Output grew.")), repeat_last=True),
        )
    )
    paused = await stream_run(agent_server.url, "How is kelp farming doing?", configurable=REVIEW)

    rejected = await answer(agent_server.url, paused, [{"type": "reject", "message": "Cover South America instead."}])

    [action] = review_request(rejected)["action_requests"]
    assert [u["brief"] for u in action["args"]["units"]] == ["Find 2025 seaweed farm output in Chile"]
    replanning = requests_of(scripted, "orchestrator")[-1]["body"]["messages"]
    assert "Cover South America instead." in message_text(replanning[-1])
    assert briefs_received(scripted) == [], "a rejected plan starts nothing"

    approved = await answer(agent_server.url, paused, [{"type": "approve"}])
    assert briefs_received(scripted) == ["Find 2025 seaweed farm output in Chile"]
    assert [(e["state"], e["reason"]) for e in approved.end_statuses] == [("done", "report_delivered")]


async def test_a_plan_answered_after_its_timeout_is_not_started_and_the_run_ends_saying_so(agent_server, scripted):
    scripted.set_scenario(kelp_plan_scenario())
    settings = {**REVIEW, "plan_review_timeout": 0.5}
    paused = await stream_run(agent_server.url, "How is kelp farming doing?", configurable=settings)
    await asyncio.sleep(1.0)

    late = await answer(agent_server.url, paused, [{"type": "approve"}], configurable=settings)

    assert [(e["state"], e["reason"]) for e in late.end_statuses] == [("error", "plan_review_expired")]
    assert briefs_received(scripted) == []
    last = late.values["messages"][-1]
    assert last["type"] == "ai" and "was not started" in last["content"]


def refused_answer(resumed: RunResult) -> str:
    """What the client is told of an answer that was not used: the paused run's one action request, whose
    description opens with it, and the stream's ``plan_review_answer`` warning, which says the same."""
    assert resumed.end_statuses == [], "a refused answer leaves the run paused, not ended"
    [action] = review_request(resumed)["action_requests"]
    assert action["name"] == "propose_plan"
    [warning] = [e for e in resumed.statuses("warning") if e["reason"] == "plan_review_answer"]
    assert action["description"].startswith(warning["detail"])
    assert warning["detail"].startswith("Your answer was not used: ")
    assert warning["detail"].endswith("The plan is still waiting for your review: approve, edit or reject it.")
    return warning["detail"]


async def answer_with(url: str, paused: RunResult, resume: Any) -> RunResult:
    """Resumes the paused run with ``resume`` as it is, whatever its shape."""
    return await stream_run(url, None, thread_id=paused.thread_id, configurable=REVIEW, resume=resume)


def kelp_edit(args: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "edit", "edited_action": {"name": "propose_plan", "args": args}}]


MALFORMED_RESUMES = [
    pytest.param("approve", 'must be an object such as {"decisions"', id="the bare string"),
    pytest.param([], "not a list", id="an empty list"),
    pytest.param({"decisions": "approve"}, '"decisions" must be a list holding one decision', id="decisions a string"),
    pytest.param({"decisions": []}, "exactly one decision", id="no decision"),
    pytest.param({"decisions": [{"type": "approve"}, {"type": "approve"}]}, "it holds 2", id="two decisions"),
    pytest.param({"decisions": [{"type": "respond", "message": "go"}]}, 'it is the text "respond"', id="unknown type"),
    pytest.param({"decisions": [{"type": "Reject"}]}, 'it is the text "Reject"', id="Reject"),
    pytest.param({"decisions": [{"type": "edit"}]}, 'carries the edited plan as "edited_action"', id="edit no args"),
    pytest.param({"decisions": [{"type": "reject", "mesage": "Chile"}]}, 'unknown keys "mesage"', id="typo'd key"),
    pytest.param({"decision": [{"type": "approve"}]}, 'has no "decisions"', id="typo'd decisions"),
]


@pytest.mark.parametrize(("resume", "said"), MALFORMED_RESUMES)
async def test_a_malformed_answer_leaves_the_run_paused_on_its_plan_saying_why_and_starts_nothing(
    agent_server, scripted, resume, said
):
    scripted.set_scenario(kelp_plan_scenario())
    paused = await stream_run(agent_server.url, "How is kelp farming doing?", configurable=REVIEW)

    resumed = await answer_with(agent_server.url, paused, resume)

    assert said in refused_answer(resumed)
    assert briefs_received(scripted) == [], "research nobody approved started"
    assert len(requests_of(scripted, "orchestrator")) == 1, "the orchestrator was told of the answer"
    [action] = review_request(resumed)["action_requests"]
    assert [u["brief"] for u in action["args"]["units"]] == [u["brief"] for u in UNITS], "the plan changed"


async def test_after_refused_answers_the_first_valid_one_starts_exactly_the_plan(agent_server, scripted):
    scripted.set_scenario(kelp_plan_scenario())
    paused = await stream_run(agent_server.url, "How is kelp farming doing?", configurable=REVIEW)

    for resume in ("approve", {"decisions": [{"type": "Approve"}]}, {"decisions": []}):
        refused_answer(await answer_with(agent_server.url, paused, resume))
    approved = await answer(agent_server.url, paused, [{"type": "approve"}])

    assert sorted(briefs_received(scripted)) == sorted(u["brief"] for u in UNITS), "each unit starts once"
    assert [(e["state"], e["reason"]) for e in approved.end_statuses] == [("done", "report_delivered")]
    assert not [e for e in approved.statuses("warning") if e["reason"] == "plan_review_answer"], (
        "a refusal already told is not told again when the valid answer resumes the run"
    )


@pytest.mark.parametrize(
    ("units", "said"),
    [
        pytest.param(
            [{"brief": "Find 2025 kelp output in Chile", "subagent_type": "chile-subagent"}],
            'unit 1 is for the sub-agent "chile-subagent", which this run does not have; its sub-agents are '
            "research-subagent",
            id="an unknown sub-agent",
        ),
        pytest.param(
            [{"brief": f"Find 2025 kelp output in region {n}"} for n in range(500)],
            "the plan has 500 units and a plan may have at most 10 (plan_max_units)",
            id="500 units",
        ),
        pytest.param([{"brief": "  "}], "a brief must say what to research", id="a blank brief"),
    ],
)
async def test_an_edit_that_cannot_start_is_refused_and_the_plan_keeps_waiting(agent_server, scripted, units, said):
    scripted.set_scenario(kelp_plan_scenario())
    paused = await stream_run(agent_server.url, "How is kelp farming doing?", configurable=REVIEW)

    resumed = await answer(agent_server.url, paused, kelp_edit({"units": units}))

    assert said in refused_answer(resumed)
    assert briefs_received(scripted) == []
    assert len(requests_of(scripted, "orchestrator")) == 1


async def test_an_edit_with_the_units_as_json_text_as_agent_chat_ui_sends_it_starts_the_edited_units(
    agent_server, scripted
):
    scripted.set_scenario(kelp_plan_scenario())
    paused = await stream_run(agent_server.url, "How is kelp farming doing?", configurable=REVIEW)
    [action] = review_request(paused)["action_requests"]
    # agent-chat-ui edits each argument in a text field of its JSON and sends the field's text back; the
    # arguments left alone go back as they came.
    edited = [{**action["args"]["units"][0], "brief": "Find 2025 kelp farm output in Iceland"}]
    args = {**action["args"], "units": json.dumps(edited, indent=2)}

    resumed = await answer(agent_server.url, paused, kelp_edit(args))

    assert briefs_received(scripted) == ["Find 2025 kelp farm output in Iceland"]
    assert [(e["state"], e["reason"]) for e in resumed.end_statuses] == [("done", "report_delivered")]
    assert resumed.of_type("usage")[0]["plan_estimate"]["units"] == 1


async def test_an_assistant_with_plan_review_run_as_a_generic_ui_runs_it_pauses_and_shows_why_an_answer_was_refused(
    agent_server, scripted
):
    """deep-agents-ui and agent-chat-ui run an assistant (docs/webui.md): one created with ``plan_review`` on, run
    the way deep-agents-ui runs it (its assistant id, ``recursion_limit`` 100, ``values`` and ``messages-tuple``),
    pauses on the plan, and the interrupt both UIs read from the stream's values says why an answer was refused."""
    scripted.set_scenario(kelp_plan_scenario())
    client = get_client(url=agent_server.url)
    assistant = await client.assistants.create(GRAPH_ID, config={"configurable": REVIEW}, name="Plan reviewed")
    thread_id = (await client.threads.create())["thread_id"]

    async def pending_action(**run: Any) -> dict[str, Any] | None:
        """The action request of the interrupt in the run's last ``values`` part, as the UIs read it."""
        values = [
            part.data
            async for part in client.runs.stream(
                thread_id,
                assistant["assistant_id"],
                stream_mode=["values", "messages-tuple"],
                config={"recursion_limit": 100},
                **run,
            )
            if part.event == "values"
        ]
        interrupts = values[-1].get("__interrupt__") or []
        return interrupts[0]["value"]["action_requests"][0] if interrupts else None

    proposed = await pending_action(input={"messages": [{"role": "user", "content": "How is kelp farming doing?"}]})
    refused = await pending_action(command={"resume": {"decisions": [{"type": "Approve"}]}})
    approved = await pending_action(command={"resume": {"decisions": [{"type": "approve"}]}})

    assert proposed is not None and proposed["description"].startswith("Research plan: 2 units.")
    assert refused is not None and refused["description"].startswith(
        'Your answer was not used: the decision\'s "type" must be "approve", "edit" or "reject"; it is the text '
        '"Approve".'
    )
    assert refused["args"] == proposed["args"], "the same plan waits"
    assert approved is None
    assert sorted(briefs_received(scripted)) == sorted(u["brief"] for u in UNITS)


def test_ask_with_review_plan_shows_the_plan_and_runs_the_units_as_edited_on_the_terminal(agent_server, scripted):
    scripted.set_scenario(kelp_plan_scenario())
    # Edit: the first brief replaced, the second dropped.
    answers = "e\nFind 2025 kelp farm output in Iceland\n-\n"

    done = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "ask", "--url", agent_server.url, "--review-plan", "Kelp?"],
        input=answers, capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"},
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1. Find 2025 kelp farm output in Norway (expected sources: Statistics Norway" in done.stdout
    assert "Estimated cost: $" in done.stdout
    assert briefs_received(scripted) == ["Find 2025 kelp farm output in Iceland"]
    assert "Kelp farms" in done.stdout


@pytest.fixture
def one_run_per_user(model_server, web_server) -> Iterator[AgentServer]:
    """A server that runs at most one research run per user at once."""
    server = AgentServer({**agent_env(model_server, web_server), "DRA_MAX_RUNS_PER_USER": "1"}).start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_run_paused_on_its_plan_review_holds_none_of_its_users_run_slots(one_run_per_user, scripted):
    scripted.set_scenario(kelp_plan_scenario())
    paused = await stream_run(one_run_per_user.url, "How is kelp farming doing?", configurable=REVIEW)
    assert len(review_request(paused)["action_requests"]) == 1

    # The same user, one run allowed: another question while the plan waits for its review.
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(
                    tool_calls=[
                        call("task", description="Find 2025 kelp output in Chile", subagent_type="research-subagent")
                    ]
                ),
                submit(REPORT),
            ),
            researcher(turn(content=findings_json("Output grew.")), repeat_last=True),
        )
    )
    other = await stream_run(one_run_per_user.url, "And in Chile?")

    assert [(e["state"], e["reason"]) for e in other.end_statuses] == [("done", "report_delivered")], (
        "the paused run still held the user's one run slot"
    )
