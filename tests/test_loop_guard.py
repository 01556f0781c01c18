"""The loop guard's fingerprints, window and escalation, driven in-process with hand-built conversations."""

from __future__ import annotations

import itertools

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from deep_research_agent.domain.conversation import (
    HARNESS_MESSAGE_NAME,
    harness_message,
    is_harness_message,
    turn_key,
)
from deep_research_agent.guards import loop as loop_guard
from deep_research_agent.guards.loop import (
    HALT_AT,
    WINDOW,
    LoopGuardMiddleware,
    advance,
    fingerprint,
    latest_tool_batch,
)
from deep_research_agent.handover.contract import parse_findings
from deep_research_agent.run import current_run
from testkit.guard_calls import call_model_through, capture_events

pytestmark = pytest.mark.anyio
_ids = itertools.count()


@pytest.fixture(autouse=True)
def events(monkeypatch, run):
    return capture_events(monkeypatch, loop_guard)


def call_and_result(name: str, args: dict, result: str) -> list:
    call_id = f"call_{next(_ids)}"
    return [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}], id=f"ai_{call_id}"),
        ToolMessage(content=result, tool_call_id=call_id, name=name),
    ]


async def drive(guard: LoopGuardMiddleware, state: dict, *new_messages) -> list[BaseMessage] | None:
    """Append messages to the conversation, then one model call through the guard; None when it stopped the call."""
    state["messages"] = [*state["messages"], *new_messages]
    _, sent = await call_model_through(guard, state, reply="thinking")
    return sent


def test_a_fingerprint_ignores_argument_order_and_anything_past_the_result_head():
    head = "x" * 1000
    assert fingerprint("web_search", {"q": "a", "n": 2}, head + "tail one") == fingerprint(
        "web_search", {"n": 2, "q": "a"}, head + "tail two"
    )
    assert fingerprint("web_search", {"q": "a"}, "r") != fingerprint("web_search", {"q": "b"}, "r")
    assert fingerprint("web_search", {"q": "a"}, "r") != fingerprint("web_fetch", {"q": "a"}, "r")
    assert fingerprint("web_search", {"q": "a"}, "r1") != fingerprint("web_search", {"q": "a"}, "r2")


def test_the_window_keeps_the_last_ten_calls_and_counts_the_newest_repeats():
    window: list[str] = []
    for expected in (1, 2, 3):
        window, repeats = advance(window, ["same"])
        assert repeats == expected
    window, repeats = advance(window, [f"other{n}" for n in range(WINDOW - 2)])
    assert len(window) == WINDOW and repeats == 1
    window, repeats = advance(window, ["same"])
    assert repeats == 2, "two of the three older calls left the window"


def test_a_batch_is_counted_by_its_most_repeated_call():
    window, repeats = advance(["a", "a"], ["b", "a"])
    assert window == ["a", "a", "b", "a"] and repeats == 3


def test_the_latest_batch_pairs_each_call_with_its_result_in_call_order():
    first = AIMessage(
        content="",
        tool_calls=[
            {"name": "web_search", "args": {"q": 1}, "id": "c1"},
            {"name": "web_fetch", "args": {"u": 2}, "id": "c2"},
        ],
    )
    messages = [
        HumanMessage("go"),
        first,
        ToolMessage("fetched", tool_call_id="c2"),
        ToolMessage("searched", tool_call_id="c1"),
    ]
    assert latest_tool_batch(messages) == (
        "c1",
        [("web_search", {"q": 1}, "searched"), ("web_fetch", {"u": 2}, "fetched")],
    )
    assert latest_tool_batch([*messages, AIMessage("done")]) is None


async def test_identical_calls_are_nudged_twice_then_the_sub_agent_is_halted_with_a_hand_back(events):
    guard = LoopGuardMiddleware(role="research-subagent")
    state = {"messages": [HumanMessage("Find prices", id="user-1")]}
    sent = []
    for _ in range(HALT_AT):
        sent.append(await drive(guard, state, *call_and_result("web_search", {"query": "prices"}, "same results")))

    assert [(e["state"], e["repeats"]) for e in events] == [
        ("loop_detected", 3),
        ("loop_detected", 4),
        ("loop_halt", 6),
    ]
    assert sent[-1] is None and all(sent[:-1]), "the sixth identical call must stop the model call"
    assert "LOOP DETECTED" in sent[2][-1].text and is_harness_message(sent[2][-1])
    assert [m for m in state["messages"] if isinstance(m, HumanMessage)] == state["messages"][:1], (
        "the nudges go to their calls only: only the user's words are human messages"
    )
    hand_back = state["messages"][-1]
    assert isinstance(hand_back, AIMessage) and hand_back.name == HARNESS_MESSAGE_NAME
    findings = parse_findings(hand_back.text)
    assert findings is not None and any("loop guard" in gap for gap in findings.gaps)


async def test_a_halted_orchestrator_halts_the_run(events):
    guard = LoopGuardMiddleware(role="orchestrator")
    state = {"messages": [HumanMessage("Plan", id="user-1")]}
    for _ in range(HALT_AT):
        await drive(guard, state, *call_and_result("write_todos", {"todos": []}, "ok"))

    assert current_run().control.halt is not None and current_run().control.halt.reason == "loop_halt"


async def test_paging_through_one_tool_never_counts_as_a_loop(events):
    guard = LoopGuardMiddleware(role="research-subagent")
    state = {"messages": [HumanMessage("Find prices", id="user-1")]}
    for page in range(12):
        await drive(guard, state, *call_and_result("web_search", {"query": "prices", "page": page}, "same results"))

    assert events == []


async def test_a_new_user_turn_resets_the_window_and_the_nudges_but_a_harness_message_does_not(events):
    guard = LoopGuardMiddleware(role="orchestrator")
    state = {"messages": [HumanMessage("First question", id="user-1")]}
    for _ in range(3):
        await drive(guard, state, *call_and_result("write_todos", {"todos": []}, "ok"))
    assert len(events) == 1

    await drive(guard, state, harness_message("keep going"), *call_and_result("write_todos", {"todos": []}, "ok"))
    assert [e["repeats"] for e in events] == [3, 4], "a harness message started a new turn"

    await drive(
        guard, state, HumanMessage("Second question", id="user-2"), *call_and_result("write_todos", {"todos": []}, "ok")
    )
    assert len(events) == 2 and state["loop_window"] == state["loop_window"][-1:]


async def test_the_same_batch_is_never_counted_twice(events):
    guard = LoopGuardMiddleware(role="research-subagent")
    state = {"messages": [HumanMessage("Find prices", id="user-1")]}
    await drive(guard, state, *call_and_result("web_search", {"query": "p"}, "r"))
    for _ in range(5):
        await drive(guard, state)
    assert state["loop_window"] == state["loop_window"][:1]


def test_turn_key_skips_harness_messages():
    messages = [HumanMessage("q", id="u1"), AIMessage("a"), harness_message("nudge")]
    assert turn_key(messages) == "u1"
