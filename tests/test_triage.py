"""Pre-triage router: SIMPLE turns end after two tiny calls; everything else runs the full agent.

The orchestrator is a real ``create_agent`` graph with its own recording model, a big system prompt and a
tool, so "the orchestrator model is never called" is observed, not assumed.
"""

from __future__ import annotations

from typing import Any, NotRequired

import pytest
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from deep_research_agent.assist import asks_for_research_or_comparison
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.lifecycle.triage import (
    ANSWER_MAX_TOKENS,
    MAX_TRIAGE_CHARS,
    VERDICT_MAX_TOKENS,
    TriageRouterMiddleware,
    asks_for_research,
    parse_verdict,
)
from deep_research_agent.run import bound_run
from testkit.recording_model import RecordingChatModel, factory

ORCHESTRATOR_PROMPT = "You are the orchestrator of a deep research run. " * 300  # ~15k chars, like the real one
HAPPY_PATH_RESEARCH_CHARS = 90_000
ANSWER = "Sofia is the capital of Bulgaria."
REPORT = "# Battery prices in 2025\n\nPack prices fell 8% [1].\n\n## Sources\n[1] BNEF — https://example.org"


@tool
def task(description: str) -> str:
    """Hand one research unit to a sub-agent."""
    return "findings"


class ThreadState(AgentState):
    final_report: NotRequired[str]


class EndProbe(AgentMiddleware):
    """Records that the end-of-run hook ran (where the lifecycle decides done/direct_answer)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, Any]] = []

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        self.seen.append(dict(state))


def build(
    router: RecordingChatModel, orchestrator: RecordingChatModel, probe: EndProbe | None = None, **kwargs: Any
) -> Any:
    metered: list[AIMessage] = kwargs.pop("metered", [])
    middleware: list[AgentMiddleware] = [
        TriageRouterMiddleware(
            model_factory=factory(router),
            on_model_response=lambda usage, message: metered.append(message),
        )
    ]
    if probe is not None:
        middleware.append(probe)
    return create_agent(
        orchestrator,
        tools=[task],
        system_prompt=ORCHESTRATOR_PROMPT,
        middleware=middleware,
        state_schema=ThreadState,
        **kwargs,
    )


async def run(agent: Any, payload: dict[str, Any], config: dict[str, Any] | None = None) -> tuple[list[dict], dict]:
    events, values = [], {}
    with bound_run():  # the agent's graph runs outside the server, with no run id of its own
        async for mode, data in agent.astream(payload, config, stream_mode=["custom", "values"]):
            if mode == "custom":
                events.append(data)
            else:
                values = data
    return events, values


def triage_events(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("type") == "status" and e.get("state") == "triage"]


# --- verdict parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("SIMPLE", "simple"),
        ("RESEARCH", "research"),
        ("simple", "simple"),
        ("Research.", "research"),
        ("  **SIMPLE**\n", "simple"),
        ("`RESEARCH`", "research"),
        ("Verdict: SIMPLE", "simple"),
        ("<think>The user greets me, so SIMPLE or RESEARCH?</think>SIMPLE", "simple"),
        ("", None),
        ("Maybe", None),
        ("SIMPLE or RESEARCH", None),
        ("It is SIMPLE because it is a greeting.", None),
        ("I think this needs RESEARCH", None),
        ("SIMPLEST", None),
    ],
)
def test_verdict_parsing(reply: str, verdict: str | None) -> None:
    assert parse_verdict(reply) == verdict


# --- SIMPLE -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_simple_question_costs_two_tiny_calls_and_never_reaches_the_orchestrator() -> None:
    router = RecordingChatModel(replies=["SIMPLE", ANSWER])
    orchestrator = RecordingChatModel(replies=["should never be called"])
    probe = EndProbe()
    metered: list[AIMessage] = []

    events, values = await run(
        build(router, orchestrator, probe, metered=metered),
        {"messages": [HumanMessage("What is the capital of Bulgaria?", id="u1")]},
    )

    assert orchestrator.calls == []
    assert len(router.calls) == 2
    verdict_call, answer_call = router.calls
    assert verdict_call.kwargs.get("max_tokens") == VERDICT_MAX_TOKENS
    assert answer_call.kwargs.get("max_tokens") == ANSWER_MAX_TOKENS
    assert "tool_names" not in verdict_call.kwargs and "tool_names" not in answer_call.kwargs
    assert "nostream" in verdict_call.tags and "nostream" not in answer_call.tags
    assert all("orchestrator" not in call.system for call in router.calls)
    chars = sum(call.chars for call in router.calls) + sum(len(m.text) for m in metered)
    assert chars <= HAPPY_PATH_RESEARCH_CHARS // 10
    assert [m.text for m in metered] == ["SIMPLE", ANSWER]

    assert values["messages"][-1].text == ANSWER and isinstance(values["messages"][-1], AIMessage)
    assert values["triage_verdict"] == "simple"
    assert [(e["detail"], e["reason"]) for e in triage_events(events)] == [("simple", "classified")]
    assert probe.seen and probe.seen[0]["triage_verdict"] == "simple"  # the end hook still runs


# --- RESEARCH -----------------------------------------------------------------------------------------


async def research_run(
    router_replies: list[Any], question: str, **payload: Any
) -> tuple[RecordingChatModel, RecordingChatModel, list[dict], dict]:
    router = RecordingChatModel(replies=router_replies)
    orchestrator = RecordingChatModel(replies=["Here is the plan."])
    events, values = await run(build(router, orchestrator), {"messages": [HumanMessage(question, id="u1")], **payload})
    return router, orchestrator, events, values


@pytest.mark.anyio
async def test_research_runs_the_full_agent_after_one_router_call() -> None:
    router, orchestrator, events, values = await research_run(
        ["RESEARCH"], "How did EV battery prices move from 2020 to 2025?"
    )
    assert len(router.calls) == 1
    assert len(orchestrator.calls) == 1 and "orchestrator" in orchestrator.calls[0].system
    assert values["triage_verdict"] == "research"
    assert [(e["detail"], e["reason"]) for e in triage_events(events)] == [("research", "classified")]


@pytest.mark.anyio
async def test_a_long_message_skips_the_router() -> None:
    question = "Please research this. " + "x" * MAX_TRIAGE_CHARS
    router, orchestrator, events, _ = await research_run(["SIMPLE", ANSWER], question)
    assert router.calls == []
    assert len(orchestrator.calls) == 1
    assert [(e["detail"], e["reason"]) for e in triage_events(events)] == [("research", "long_message")]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("replies", "reason"),
    [
        ([RuntimeError("router down")], "router_failed"),
        (["Hmm, hard to say."], "router_failed"),
        (["SIMPLE", RuntimeError("answer failed")], "answer_failed"),
        (["SIMPLE", "   "], "answer_failed"),
    ],
    ids=["exception", "unparseable", "answer raises", "empty answer"],
)
async def test_any_router_failure_runs_the_full_agent(replies: list[Any], reason: str) -> None:
    router, orchestrator, events, values = await research_run(replies, "Hello there")
    assert len(orchestrator.calls) == 1
    assert values["messages"][-1].text == "Here is the plan."
    assert [(e["detail"], e["reason"]) for e in triage_events(events)] == [("research", reason)]


@pytest.mark.anyio
async def test_a_follow_up_on_a_thread_with_a_report_tells_the_router_about_it() -> None:
    router, orchestrator, _, _ = await research_run(["RESEARCH"], "Which source said 8%?", final_report=REPORT)
    assert "Battery prices in 2025" in router.calls[0].messages[-1].text
    assert len(orchestrator.calls) == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    "asked",
    [
        AIMessage(
            "", tool_calls=[{"name": "request_clarification", "args": {"questions": ["Which region?"]}, "id": "q1"}]
        ),
        AIMessage("Before I start:\n1. Which region?\n2. Which years?"),
    ],
    ids=["tool", "prose"],
)
async def test_answers_to_clarifying_questions_skip_the_router(asked: AIMessage) -> None:
    history: list[AnyMessage] = [HumanMessage("Research battery prices", id="u0"), asked]
    if asked.tool_calls:
        history.append(ToolMessage("Asked the user and waiting for the answers", tool_call_id="q1"))
    router = RecordingChatModel(replies=["SIMPLE", ANSWER])
    orchestrator = RecordingChatModel(replies=["Here is the plan."])

    answer = HumanMessage("Europe, 2020-2025", id="u1")
    events, _ = await run(build(router, orchestrator), {"messages": [*history, answer]})

    assert router.calls == []
    assert len(orchestrator.calls) == 1
    assert [(e["detail"], e["reason"]) for e in triage_events(events)] == [("research", "clarification_answer")]


@pytest.mark.anyio
async def test_each_turn_of_a_thread_is_triaged_once_and_the_verdict_is_per_run() -> None:
    router = RecordingChatModel(replies=["SIMPLE", "Hello! What should I research?", "RESEARCH"])
    orchestrator = RecordingChatModel(replies=["Here is the plan."])
    agent = build(router, orchestrator, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "thread-1"}}

    _, first = await run(agent, {"messages": [HumanMessage("Hi!", id="u1")]}, config)
    _, second = await run(
        agent, {"messages": [HumanMessage("How have EV battery prices moved since 2020?", id="u2")]}, config
    )

    assert first["triage_verdict"] == "simple"
    assert second["triage_verdict"] == "research"
    assert len(router.calls) == 3
    assert len(orchestrator.calls) == 1


# Which requests go where, without asking the router: research (R) or the router (-), for every model and with
# the research model's assist on (small routers call every question SIMPLE, so tables and comparisons go to
# research too). Naming sources, a table or two things compared is not asking for research.
ROUTING = [
    ("TCP vs UDP?", "-", "R"),
    ("What is TCP?", "-", "-"),
    ("What does HTTP stand for?", "-", "-"),
    ("hello!", "-", "-"),
    ("What are the main sources of vitamin D?", "-", "-"),
    ("Which foods are good sources of iron?", "-", "-"),
    ("What is operations research?", "-", "-"),
    ("What is a pivot table?", "-", "R"),
    ("Put the planets in a table", "-", "R"),
    ("Compare sodium and lithium batteries", "-", "R"),
    ("Python vs. Rust for CLI tools", "-", "R"),
    ("TCP vs UDP, with sources", "R", "R"),
    ("TCP vs UDP? Sources please.", "R", "R"),
    ("What changed in TLS 1.3? Any sources?", "R", "R"),
    ("Who built the Lighthouse of Alexandria and how tall was it? Cite sources.", "R", "R"),
    ("Who built the Lighthouse of Alexandria, with cited sources?", "R", "R"),
    ("Give me references for the claim that coffee dehydrates", "R", "R"),
    ("Research the state of sodium batteries", "R", "R"),
    ("Please research whether 5G towers affect birds", "R", "R"),
    ("Can you look into the Faroe grid's flywheels?", "R", "R"),
    ("Do some research on kelp farming", "R", "R"),
    ("Investigate the causes of the 2003 blackout", "R", "R"),
]


@pytest.mark.parametrize(("question", "every_model", "assisted"), ROUTING, ids=[q for q, _, _ in ROUTING])
def test_which_requests_go_to_research_without_asking_the_router(question: str, every_model: str, assisted: str):
    assert ("R" if asks_for_research(question) else "-") == every_model
    assert ("R" if asks_for_research_or_comparison(question) else "-") == assisted


@pytest.mark.anyio
async def test_a_comparison_asks_the_router_and_its_answer_stands() -> None:
    router = RecordingChatModel(replies=["SIMPLE", "TCP is connection-oriented and reliable; UDP is neither."])
    orchestrator = RecordingChatModel(replies=["never"])

    events, state = await run(build(router, orchestrator), {"messages": [HumanMessage("TCP vs UDP?")]})

    assert state["triage_verdict"] == "simple" and orchestrator.calls == []
    assert [(e["detail"], e["reason"]) for e in triage_events(events)] == [("simple", "classified")]


def test_the_router_refuses_a_model_factory_or_hook_it_cannot_call():
    with pytest.raises(KnobError, match="model_factory") as refused:
        TriageRouterMiddleware(model_factory="openai/gpt-4o-mini")  # type: ignore[arg-type]
    assert refused.value.parameter == "model_factory"
    with pytest.raises(KnobError, match="on_model_response"):
        TriageRouterMiddleware(model_factory=factory(RecordingChatModel()), on_model_response=[])  # type: ignore[arg-type]
