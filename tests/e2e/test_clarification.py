"""Clarifying questions through ``langgraph dev``: the card, the end of the turn, the answer on the same thread."""

from __future__ import annotations

import pytest

from testkit.agent_server import stream_run
from testkit.scenarios import (
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    researcher,
    scenario,
    submit,
    system_text,
)
from testkit.scripted_model import call, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

QUESTIONS = ["Which region should I cover?", "Which timeframe matters: the last 12 months or longer?"]
ANSWERS = (
    "Answers to your clarifying questions:\n"
    f"1. Q: {QUESTIONS[0]} A: Nordic countries\n"
    f"2. Q: {QUESTIONS[1]} A: last 12 months"
)


async def test_a_clarification_ends_the_turn_and_the_answers_on_the_same_thread_start_the_research(
    agent_server, scripted
):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(tool_calls=[call("request_clarification", questions=QUESTIONS)]),
                plan_and_delegate("Find Nordic kelp farm figures for the last 12 months"),
                submit("# Kelp\n\nDone.\n\n## Sources\n"),
            ),
            researcher(turn(content=findings_json("Nothing new."))),
        )
    )

    asked = await stream_run(agent_server.url, "Tell me about kelp farms.")

    assert [e["questions"] for e in asked.of_type("clarification")] == [QUESTIONS]
    assert [(e["state"], e["reason"]) for e in asked.end_statuses] == [("done", "awaiting_clarification")]
    assert len([r for r in scripted.requests() if r["agent"] == "orchestrator"]) == 1, "the turn went on after asking"
    *_, asking, echoed, shown = asked.values["messages"]
    # The questions show once, in the last message; the tool's own row only says it asked.
    assert [c["args"]["questions"] for c in asking["tool_calls"]] == [QUESTIONS]
    assert echoed["type"] == "tool" and not any(q in echoed["content"] for q in QUESTIONS)
    assert shown["type"] == "ai" and shown["content"].startswith("Before I start the research")
    assert all(f"**{n}.** {q}" in shown["content"] for n, q in enumerate(QUESTIONS, 1))

    answered = await stream_run(agent_server.url, ANSWERS, thread_id=asked.thread_id)

    assert [(e["state"], e["reason"]) for e in answered.end_statuses] == [("done", "report_delivered")]
    assert answered.of_type("clarification") == []
    planning_request = [r for r in scripted.requests() if r["agent"] == "orchestrator"][1]["body"]["messages"]
    assert planning_request[-1]["role"] == "user" and "A: Nordic countries" in message_text(planning_request[-1])


async def test_questions_asked_in_prose_still_produce_the_clarification_card(agent_server, scripted):
    prose = "Before I start, could you clarify two things?\n1. Which region should I cover?\n2. Which timeframe?"
    scripted.set_scenario(scenario(orchestrator(turn(content=prose))))

    run = await stream_run(agent_server.url, "Tell me about kelp farms.")

    assert [e["questions"] for e in run.of_type("clarification")] == [
        ["Which region should I cover?", "Which timeframe?"]
    ]
    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "awaiting_clarification")]


async def test_once_research_has_started_a_clarification_is_refused_and_the_model_is_told_to_finish(
    agent_server, scripted
):
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find kelp figures"),
                turn(tool_calls=[call("request_clarification", questions=["Which region?"])]),
                submit("# Kelp\n\nDone.\n\n## Sources\n"),
            ),
            researcher(turn(content=findings_json("Nothing new."))),
        )
    )

    run = await stream_run(agent_server.url, "Tell me about kelp farms.")

    assert run.of_type("clarification") == []
    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    final_request = [r for r in scripted.requests() if r["agent"] == "orchestrator"][-1]["body"]["messages"]
    assert "research has already started" in final_request[-1]["content"]


async def test_with_clarify_off_a_question_that_would_be_clarified_proceeds_to_a_report_on_stated_assumptions(
    agent_server, scripted
):
    # The script asks first, as a model shown an ambiguous question would: with clarify off that tool is not
    # there, the call is refused and the run goes on to research and deliver.
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(tool_calls=[call("request_clarification", questions=QUESTIONS)]),
                plan_and_delegate("Find kelp farm figures, assuming global scope and the last 12 months"),
                submit("# Kelp farms\n\nAssumed: global scope, recent years.\n\n## Sources\n"),
            ),
            researcher(turn(content=findings_json("Nothing new."))),
        )
    )

    run = await stream_run(agent_server.url, "Tell me about kelp farms.", configurable={"clarify": False})

    assert run.of_type("clarification") == []
    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")], [
        e.get("detail") for e in run.end_statuses
    ]
    assert run.values["final_report"].startswith("# Kelp farms")
    orchestrator_requests = [r["body"] for r in scripted.requests() if r["agent"] == "orchestrator"]
    offered = {tool["function"]["name"] for body in orchestrator_requests for tool in body.get("tools", [])}
    assert "submit_report" in offered and "request_clarification" not in offered
    prompt = system_text(orchestrator_requests[0])
    assert "Never ask the user anything" in prompt and "call `request_clarification`" not in prompt
    [user_message] = [m for m in run.values["messages"] if m["type"] == "human"]
    assert user_message["content"] == "Tell me about kelp farms."


async def test_by_default_the_orchestrator_is_offered_request_clarification_and_told_when_to_ask(
    agent_server, scripted
):
    scripted.set_scenario(scenario(orchestrator(submit("# Kelp farms\n\nDone.\n\n## Sources\n"))))

    await stream_run(agent_server.url, "Tell me about kelp farms.")

    [body] = [r["body"] for r in scripted.requests() if r["agent"] == "orchestrator"][:1]
    assert "request_clarification" in {tool["function"]["name"] for tool in body["tools"]}
    assert "call `request_clarification`" in system_text(body)
