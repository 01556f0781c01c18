"""The runaway-output detector on a table of texts, and the guard's trim, nudge and halt in-process."""

from __future__ import annotations

import itertools
import random

import pytest
from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from deep_research_agent.domain.conversation import is_harness_message
from deep_research_agent.domain.findings import Findings
from deep_research_agent.guards import runaway
from deep_research_agent.guards.chain import GuardChainMiddleware
from deep_research_agent.guards.loop import LoopGuardMiddleware
from deep_research_agent.guards.runaway import (
    MIN_JUDGED_CHARS,
    RunawayOutputMiddleware,
    detect_repetition,
    judge,
)
from deep_research_agent.handover.contract import MAX_HANDOVER_CHARS, parse_findings
from deep_research_agent.handover.publish import HandOverMiddleware
from deep_research_agent.modelcalls.text_tool_calls import TEXT_TOOL_CALLS_KEY
from testkit.guard_calls import capture_events

pytestmark = pytest.mark.anyio

INTRO = "Bitcoin closed the quarter higher. The forecast table follows.\n"
_rng = random.Random(7)
_WORDS = [
    "battery", "cathode", "sodium", "lithium", "price", "supply", "grid", "storage", "factory", "density",
    "cycle", "cost", "market", "capacity", "research", "vendor", "export", "policy", "demand", "margin",
]  # fmt: skip


def prose(chars: int) -> str:
    """Varied sentences, as a healthy long answer has."""
    sentences = []
    while sum(map(len, sentences)) < chars:
        words = _rng.sample(_WORDS, 6)
        sentences.append(
            f"The {words[0]} {words[1]} rose {_rng.randint(2, 90)}% as {words[2]} met {words[3]} and {words[4]}. "
        )
    return "".join(sentences)


DEGENERATE_CASES = {
    "a counting token sequence": INTRO + "".join(f"BTC{2026 + i}, " for i in range(600)),
    "one line over and over": INTRO + "The price will rise.\n" * 200,
    "a short cycle of phrases": INTRO + "up, down, sideways, " * 200,
    "one long unpunctuated word run": INTRO + "buy " * 1200,
    "healthy prose that collapses at the end": prose(3000)
    + "".join(f"Year {2030 + i}: same again; " for i in range(300)),
}
HEALTHY_CASES = {
    "varied prose": prose(6000),
    "a numeric table": "| Year | Revenue | Margin |\n|---|---|---|\n"
    + "".join(f"| {2000 + i} | {i * 3.7:.1f} | {i % 9}.{i % 7} |\n" for i in range(200)),
    "a short repetitive reply": "again. " * ((MIN_JUDGED_CHARS - 1) // 7),
    "a long source list": "\n".join(
        f"[{n}] {a.title()} and {b} outlook — https://{a}.example/{b}/{n}"
        for n, (a, b) in enumerate(itertools.permutations(_WORDS, 2))
    ),
}


@pytest.mark.parametrize("name", DEGENERATE_CASES)
def test_degenerate_text_is_detected_and_cut_back_to_its_useful_head(name):
    text = DEGENERATE_CASES[name]
    head = detect_repetition(text)

    assert head is not None, name
    assert len(head) < len(text) / 2 and text.startswith(head)


@pytest.mark.parametrize("name", HEALTHY_CASES)
def test_healthy_text_is_left_alone(name):
    assert detect_repetition(HEALTHY_CASES[name]) is None, name


def test_the_head_keeps_one_copy_of_the_repeated_part():
    assert detect_repetition(DEGENERATE_CASES["a counting token sequence"]) == INTRO + "BTC2026"
    assert detect_repetition(DEGENERATE_CASES["one line over and over"]) == INTRO + "The price will rise."


def test_a_reply_cut_by_the_output_cap_is_a_runaway_trimmed_to_its_last_paragraph():
    first = "The cell reached 412 Wh/kg. Two labs confirmed it. Costs fell by a third."
    text = f"{first}\n\nA second paragraph that was cut mid-sent"
    verdict = judge(text, "length")

    assert verdict is not None and verdict.kind == "length" and verdict.head == first
    assert judge(text, "stop") is None


@pytest.fixture
def events(monkeypatch, run):
    return capture_events(monkeypatch, runaway)


class ScriptedReplies:
    """A model handler answering with ``replies`` in turn, remembering what it was sent."""

    def __init__(self, *replies: AIMessage) -> None:
        self.replies = list(replies)
        self.sent: list[list[BaseMessage]] = []

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.sent.append(request.messages)
        return ModelResponse(result=[self.replies.pop(0)])


async def model_step(guard: RunawayOutputMiddleware, state: dict, model: ScriptedReplies) -> list[BaseMessage]:
    """One model step through the guard, applied to ``state`` as the model node does; returns what it added."""
    result = await guard.awrap_model_call(ModelRequest(model=None, messages=state["messages"], state=state), model)
    response = result.model_response if isinstance(result, ExtendedModelResponse) else result
    if isinstance(result, ExtendedModelResponse) and result.command is not None:
        state.update(result.command.update)
    state["messages"] = [*state["messages"], *response.result]
    return response.result


async def test_a_runaway_is_trimmed_and_the_model_asked_again_the_second_in_the_turn_stops_the_sub_agent(events):
    guard = RunawayOutputMiddleware(role="research-subagent")
    state = {"messages": [HumanMessage("Track the price", id="user-1")]}
    model = ScriptedReplies(
        AIMessage(DEGENERATE_CASES["a counting token sequence"], id="ai-1"),
        AIMessage("Short and fine.", id="ai-2"),
        AIMessage(DEGENERATE_CASES["one line over and over"], id="ai-3"),
    )

    first_step = await model_step(guard, state, model)
    trimmed, reply = first_step
    assert trimmed.id == "ai-1" and trimmed.text == INTRO + "BTC2026"
    assert reply.text == "Short and fine.", "the nudge went to the second ask only, never into the thread"
    nudge = model.sent[1][-1]
    assert is_harness_message(nudge) and "RUNAWAY OUTPUT" in nudge.text
    assert model.sent[1][-2:] == [trimmed, nudge], "the second ask carries the trimmed reply and the nudge"

    second_step = await model_step(guard, state, model)
    assert second_step[-1].name == "dra_harness" and second_step[-2].text == INTRO + "The price will rise."
    assert [(e["state"], e["reason"]) for e in events] == [
        ("runaway_output", "repetition"),
        ("runaway_halt", "repetition"),
    ]
    hand_back = parse_findings(second_step[-1].text)
    assert hand_back is not None and any("runaway" in gap for gap in hand_back.gaps)


async def test_complete_tool_calls_survive_a_trim_and_the_agent_carries_on(events):
    guard = RunawayOutputMiddleware(role="research-subagent")
    state = {"messages": [HumanMessage("Track the price", id="user-1")]}
    reply = AIMessage(
        DEGENERATE_CASES["one line over and over"],
        id="ai-1",
        tool_calls=[{"name": "web_search", "args": {"query": "btc"}, "id": "c1"}],
    )
    model = ScriptedReplies(reply)

    added = await model_step(guard, state, model)

    assert len(model.sent) == 1 and len(added) == 1
    assert added[0].tool_calls[0]["id"] == "c1" and len(added[0].text) < 100
    assert [e["state"] for e in events] == ["runaway_output"]


async def test_a_capped_reply_loses_its_truncated_tool_calls(events):
    guard = RunawayOutputMiddleware(role="research-subagent")
    state = {"messages": [HumanMessage("Track the price", id="user-1")]}
    capped = AIMessage(
        "Short notes.",
        id="ai-1",
        tool_calls=[{"name": "web_search", "args": {"query": "bt"}, "id": "c1"}],
        response_metadata={"finish_reason": "length"},
    )
    model = ScriptedReplies(capped, AIMessage("Done."))

    added = await model_step(guard, state, model)

    assert added[0].tool_calls == [] and added[-1].text == "Done."
    assert events[0]["reason"] == "length"


async def test_a_capped_reply_keeps_the_tool_calls_read_from_its_text_each_a_whole_object(events):
    # Qwen2.5-Coder-0.5B wrote one search and a fetch per result, one JSON object a line, until the cap cut it.
    guard = RunawayOutputMiddleware(role="research-subagent")
    state = {"messages": [HumanMessage("Who built the Pharos?", id="user-1")]}
    calls = [
        {"name": "web_search", "args": {"query": "pharos"}, "id": "c1"},
        {"name": "web_fetch", "args": {"url": "http://127.0.0.1:8000/articles/pharos-lighthouse"}, "id": "c2"},
    ]
    read = AIMessage(
        "", id="ai-1", tool_calls=calls, response_metadata={"finish_reason": "length", TEXT_TOOL_CALLS_KEY: True}
    )
    model = ScriptedReplies(read)

    added = await model_step(guard, state, model)

    assert len(model.sent) == 1 and [c["id"] for c in added[0].tool_calls] == ["c1", "c2"]
    assert [e["reason"] for e in events] == ["length"]


async def test_a_new_user_turn_forgives_an_earlier_runaway(events):
    guard = RunawayOutputMiddleware(role="orchestrator")
    state = {"messages": [HumanMessage("First", id="user-1")]}
    model = ScriptedReplies(
        AIMessage(DEGENERATE_CASES["one line over and over"], id="ai-1"),
        AIMessage("ok"),
        AIMessage(DEGENERATE_CASES["one line over and over"], id="ai-2"),
        AIMessage("ok again"),
    )
    await model_step(guard, state, model)
    state["messages"].append(HumanMessage("Second", id="user-2"))

    added = await model_step(guard, state, model)

    assert added[-1].text == "ok again" and [e["state"] for e in events] == ["runaway_output", "runaway_output"]


async def test_what_a_sub_agent_hands_the_orchestrator_is_capped(events, run):
    lifecycle = HandOverMiddleware(models_by_role={"research-subagent": "m"})
    blob = prose(54_000)
    many = Findings(
        summary="s" * 10_000,
        findings=[
            {"finding": f"claim {n}", "evidence": prose(900), "source": f"https://e.example/{n}"} for n in range(60)
        ],
    )

    def answering(text: str):
        async def subagent(request):
            return Command(update={"messages": [ToolMessage(text, tool_call_id=request.tool_call["id"])]})

        return subagent

    def task_request() -> ToolCallRequest:
        args = {"description": "Track the price", "subagent_type": "research-subagent"}
        return ToolCallRequest(
            tool_call={"name": "task", "args": args, "id": "task-1"}, tool=None, state={}, runtime=None
        )

    prose_result = await lifecycle.awrap_tool_call(task_request(), answering(blob))
    # The sub-agent's findings gate stages the findings it parsed for the hand-over.
    run.evidence.stage_findings("task-1", many)
    findings_result = await lifecycle.awrap_tool_call(task_request(), answering(many.to_json()))

    text = prose_result.update["messages"][0].text
    assert len(text) < MAX_HANDOVER_CHARS + 200 and text.startswith(blob[:1000]) and "[Cut:" in text
    # The orchestrator reads the capped findings (checkpointed); the thread shows them as short Markdown.
    handed_over = findings_result.update["findings"]["task-1"]
    capped = Findings.model_validate({key: handed_over[key] for key in ("summary", "findings", "gaps")})
    assert len(capped.to_json()) <= MAX_HANDOVER_CHARS
    assert findings_result.update["messages"][0].text.startswith("**Summary:**")
    assert 0 < len(capped.findings) < 60 and "findings were dropped" in capped.gaps[-1]


async def test_guards_run_as_one_chain_in_order_with_their_state_updates_merged(events):
    chain = GuardChainMiddleware(
        [LoopGuardMiddleware(role="research-subagent"), RunawayOutputMiddleware(role="research-subagent")],
        role="research-subagent",
    )
    call = AIMessage("", tool_calls=[{"name": "web_search", "args": {"query": "btc"}, "id": "c1"}], id="ai-0")
    state = {
        "messages": [HumanMessage("Track the price", id="user-1"), call, ToolMessage("results", tool_call_id="c1")]
    }
    model = ScriptedReplies(
        AIMessage(DEGENERATE_CASES["one line over and over"], id="ai-1"), AIMessage("Fine.", id="ai-2")
    )

    result = await chain.awrap_model_call(ModelRequest(model=None, messages=state["messages"], state=state), model)

    assert [m.id for m in result.model_response.result] == ["ai-1", "ai-2"]
    assert set(result.command.update) == {
        "loop_window",
        "loop_batch",
        "loop_turn",
        "loop_nudges",
        "runaway_turn",
        "runaway_count",
    }
    assert result.command.update["runaway_count"] == 1 and len(result.command.update["loop_window"]) == 1
