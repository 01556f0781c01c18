"""Context compaction: trigger math, safe cut points, the summary's shape, persistence, failure and callbacks.

Agents are real ``create_agent`` graphs run in-process on recording fake models.
"""

from __future__ import annotations

from typing import Any

import pytest
from deepagents.graph import DeepAgentState
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from deep_research_agent.domain.conversation import HARNESS_MESSAGE_NAME, is_harness_message, turn_key
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.secrets import register_secrets
from deep_research_agent.graph import compaction_limits, context_compaction
from deep_research_agent.modelcalls.compaction import (
    CompactionLimits,
    ContextCompactionMiddleware,
    compaction_trigger,
    plan_compaction,
    safe_tail_start,
)
from deep_research_agent.settings import ResearchConfig
from testkit.recording_model import RecordingChatModel, factory

SECTIONS = ("## Request", "## Findings", "## Offloaded files", "## Gaps", "## Next steps")
SUMMARY = (
    "## Request\nGDP growth\n## Findings\n- GDP grew 1.5% (https://example.org/1)\n"
    "## Offloaded files\nNone.\n## Gaps\nNone.\n## Next steps\nWrite it up."
)
REQUEST = "How fast did GDP grow in each quarter?"

# Compaction meters its summarizer calls in a run's usage: every test here runs in one (the ``run`` fixture).
pytestmark = pytest.mark.usefixtures("run")


def settings(compaction_tokens: int, tier: str = "extra-low") -> ResearchConfig:
    configurable = {"compaction_tokens": compaction_tokens, "model_tier": tier}
    return ResearchConfig.resolve({"configurable": configurable}, environ={})


@tool
def fetch(page: int) -> str:
    """Read one page of the statistics bulletin."""
    return f"page {page}: " + "lorem ipsum " * 100 + f"GDP grew {page}.5% (https://example.org/{page})"


def research_script(pages: int) -> list[Any]:
    """One ``fetch`` per step for ``pages`` steps, then a final answer."""
    replies: list[Any] = [
        AIMessage(content="", tool_calls=[{"name": "fetch", "args": {"page": p}, "id": f"call-{p}"}])
        for p in range(1, pages + 1)
    ]
    return [*replies, "GDP grew every quarter."]


def call(call_id: str, *ids: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "fetch", "args": {"page": 1}, "id": i} for i in (call_id, *ids)])


def result(call_id: str, size: int) -> ToolMessage:
    return ToolMessage("r" * size, tool_call_id=call_id)


async def run(agent: Any, messages: list[AnyMessage], config: dict[str, Any] | None = None) -> tuple[list[dict], dict]:
    """Run to the end; returns the custom events and the final state values."""
    events, values = [], {}
    async for mode, data in agent.astream({"messages": messages}, config, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(data)
        else:
            values = data
    return events, values


def statuses(events: list[dict], state: str) -> list[dict]:
    return [e for e in events if e.get("type") == "status" and e.get("state") == state]


# --- trigger math -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("compaction_tokens", "window", "trigger"),
    [
        (100_000, 1_048_576, 100_000),  # the setting is below 80% of the window
        (100_000, 100_000, 80_000),  # 80% of a small window is smaller
        (500_000, 262_144, 209_715),
        (0, 1_048_576, 0),  # 0 disables
        (-5, 1_048_576, 0),
    ],
)
def test_trigger_is_the_setting_or_80_percent_of_the_window_whichever_is_smaller(
    compaction_tokens: int, window: int, trigger: int
) -> None:
    assert compaction_trigger(compaction_tokens, window) == trigger


@pytest.mark.parametrize(
    ("tier", "slot", "compaction_tokens", "trigger"),
    [
        ("extra-low", "research", 100_000, 100_000),
        ("low", "research", 500_000, 209_715),  # qwen3.8-27b: 262,144-token window
        ("extra-low", "coding", 500_000, 160_000),  # glm-5.3-flash: 200,000-token window
        ("low", "research", 0, 0),
    ],
)
def test_middleware_takes_the_window_of_its_roles_model(
    tier: str, slot: Any, compaction_tokens: int, trigger: int
) -> None:
    middleware = context_compaction(settings(compaction_tokens, tier), "r", slot)
    assert middleware.trigger_tokens == trigger
    assert middleware.tail_tokens == trigger // 4


def test_each_role_gets_its_own_middleware_name() -> None:
    names = {
        context_compaction(settings(1000), role, "research").name for role in ("orchestrator", "research-subagent")
    }
    assert names == {"ContextCompaction[orchestrator]", "ContextCompaction[research-subagent]"}


@pytest.mark.parametrize(
    ("knob", "value"),
    [
        ("compaction_tokens", -1),
        ("compaction_tokens", float("nan")),
        ("context_window", 0),
        ("context_window", -200_000),
        ("summarizer_context_window", 0),
    ],
)
def test_a_negative_trigger_or_an_empty_window_is_refused_naming_it(knob: str, value: float) -> None:
    knobs: dict[str, Any] = {"compaction_tokens": 1000, "context_window": 100_000, "summarizer_context_window": 100_000}
    with pytest.raises(KnobError, match=knob) as refused:
        CompactionLimits(**{**knobs, knob: value})
    assert refused.value.parameter == knob


def test_the_middleware_refuses_limits_it_cannot_read_and_hooks_it_cannot_call() -> None:
    limits = CompactionLimits(compaction_tokens=1000, context_window=100_000, summarizer_context_window=100_000)
    summarizer = factory(RecordingChatModel())
    with pytest.raises(KnobError, match="limits"):
        ContextCompactionMiddleware(role="r", limits={"compaction_tokens": 1000}, model_factory=summarizer)  # type: ignore[arg-type]
    with pytest.raises(KnobError, match="model_factory"):
        ContextCompactionMiddleware(role="r", limits=limits, model_factory=None)  # type: ignore[arg-type]
    with pytest.raises(KnobError, match="on_compacted"):
        ContextCompactionMiddleware(role="r", limits=limits, model_factory=summarizer, on_compacted=3)  # type: ignore[arg-type]


def test_zero_compaction_tokens_is_accepted_and_means_never() -> None:
    limits = CompactionLimits(compaction_tokens=0, context_window=100_000, summarizer_context_window=100_000)
    assert (
        ContextCompactionMiddleware(role="r", limits=limits, model_factory=factory(RecordingChatModel())).trigger_tokens
        == 0
    )


# --- safe cut points ----------------------------------------------------------------------------------


def transcript_with_parallel_calls() -> list[AnyMessage]:
    return [
        HumanMessage(REQUEST, id="u1"),
        call("a"),
        result("a", 900),
        call("b", "c"),
        result("b", 700),
        result("c", 300),
        AIMessage("thinking it over"),
        call("d"),
        result("d", 500),
        HumanMessage("Keep going.", name=HARNESS_MESSAGE_NAME),
        call("e"),
        result("e", 100),
    ]


def test_no_tail_budget_ever_leaves_a_tool_result_without_its_tool_call() -> None:
    messages = transcript_with_parallel_calls()
    total = count_tokens_approximately(messages)
    for budget in range(0, total + 50, 5):
        plan = plan_compaction(messages, budget)
        if plan is None:
            continue
        tail = plan.kept[1:] if plan.kept and plan.kept[0].id == "u1" else plan.kept
        assert not (tail and isinstance(tail[0], ToolMessage)), budget
        calls = {c["id"] for m in tail if isinstance(m, AIMessage) for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in tail if isinstance(m, ToolMessage)), budget
        assert len(plan.summarized) + len(plan.kept) == len(messages)


def test_a_cut_inside_parallel_results_moves_forward_past_them() -> None:
    messages = transcript_with_parallel_calls()
    # Index 5 is the second of two results of one AI message: the tail may not start there.
    assert safe_tail_start(messages, 5) == 6
    assert safe_tail_start(messages, 4) == 6
    assert safe_tail_start(messages, 3) == 3
    assert safe_tail_start(messages, len(messages)) == len(messages)


def test_the_request_is_kept_and_the_tail_starts_on_a_tool_call() -> None:
    messages = transcript_with_parallel_calls()
    budget = count_tokens_approximately(messages[-2:])
    plan = plan_compaction(messages, budget)
    assert plan is not None
    assert [m.id for m in plan.kept[:1]] == ["u1"]
    assert plan.kept[1:] == messages[-2:]
    assert plan.summarized == messages[1:-2]


def test_a_request_already_in_the_tail_is_not_duplicated() -> None:
    messages = [AIMessage("earlier answer"), *transcript_with_parallel_calls()[:1], call("z"), result("z", 10)]
    plan = plan_compaction(messages, 10_000)
    assert plan is None  # everything fits the tail: nothing to summarize
    plan = plan_compaction(messages, count_tokens_approximately(messages[1:]))
    assert plan is not None
    assert plan.summarized == messages[:1]
    assert plan.kept == messages[1:]


def test_nothing_to_summarize_but_the_request_means_no_compaction() -> None:
    assert plan_compaction([HumanMessage("x" * 10_000, id="u1")], 10) is None


# --- the compaction step in a real agent --------------------------------------------------------------


def orchestrator_compaction(trigger: int, summarizer: RecordingChatModel, **hooks: Any) -> ContextCompactionMiddleware:
    """The orchestrator's compaction at ``trigger`` tokens, summarizing on ``summarizer``."""
    return ContextCompactionMiddleware(
        role="orchestrator",
        limits=compaction_limits(settings(trigger), "research"),
        model_factory=factory(summarizer),
        **hooks,
    )


def researching_agent(middleware: ContextCompactionMiddleware, *, fetches: int = 8, **options: Any) -> Any:
    """An agent that fetches ``fetches`` pages and then answers, with ``middleware``."""
    model = RecordingChatModel(replies=research_script(fetches))
    return create_agent(model, tools=[fetch], middleware=[middleware], **options)


@pytest.mark.anyio
@pytest.mark.parametrize("state_schema", [None, DeepAgentState], ids=["AgentState", "DeepAgentState"])
async def test_compaction_replaces_history_with_summary_request_and_tail_and_persists(state_schema: Any) -> None:
    agent_model = RecordingChatModel(replies=research_script(8))
    summarizer = RecordingChatModel(replies=[SUMMARY])
    compacted: list[tuple[int, int]] = []
    metered: list[AIMessage] = []
    middleware = orchestrator_compaction(
        2000,
        summarizer,
        on_compacted=lambda usage, summarized, kept: compacted.append((summarized, kept)),
        on_model_response=lambda usage, message: metered.append(message),
    )
    agent = create_agent(
        agent_model,
        tools=[fetch],
        system_prompt="You research.",
        middleware=[middleware],
        state_schema=state_schema,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    request = HumanMessage(REQUEST, id="request-1")

    events, values = await run(agent, [request], config)

    assert len(summarizer.calls) == 1
    [compacting] = statuses(events, "compacting")
    [done] = statuses(events, "compacted")
    assert compacting["tokens_estimate"] >= 2000
    assert done["tokens_estimate"] < compacting["tokens_estimate"]
    assert compacted == [(done["messages_summarized"], done["messages_kept"])]
    assert [m.text for m in metered] == [SUMMARY]

    # The model step right after compaction saw [summary, request, tail]; the tail starts on a tool call.
    after = next(c for c in agent_model.calls if any(is_harness_message(m) for m in c.messages))
    convo = [m for m in after.messages if m.type != "system"]
    assert is_harness_message(convo[0]) and SUMMARY in convo[0].text
    assert convo[1].id == "request-1" and convo[1].text == REQUEST
    assert isinstance(convo[2], AIMessage) and convo[2].tool_calls
    assert len(convo) == 1 + done["messages_kept"]

    # The compacted transcript is what the thread keeps; the summary is kept aside, never as a human message.
    state = (await agent.aget_state(config)).values
    saved = state["messages"]
    assert saved == values["messages"]
    assert saved[0].id == "request-1" and not any(is_harness_message(m) for m in saved)
    assert state["compaction_summary"] == SUMMARY
    assert saved[-1].text == "GDP grew every quarter."
    assert not any(isinstance(m, ToolMessage) and m.tool_call_id == "call-1" for m in saved)


@pytest.mark.anyio
async def test_the_summarizer_is_asked_for_the_fixed_sections_and_gets_the_transcript() -> None:
    summarizer = RecordingChatModel(replies=[SUMMARY])
    middleware = orchestrator_compaction(2000, summarizer)
    agent = researching_agent(middleware)

    await run(agent, [HumanMessage(REQUEST)])

    [summary_call] = summarizer.calls
    for section in SECTIONS:
        assert section in summary_call.system
    assert "GDP grew 1.5% (https://example.org/1)" in summary_call.messages[-1].text
    assert "nostream" in summary_call.tags  # the summary must not stream as the agent's own output


@pytest.mark.anyio
async def test_system_prompt_and_tool_schemas_count_toward_the_trigger() -> None:
    big_prompt = "Rules of the house. " * 400  # ~2,000 tokens; the messages alone stay far below the trigger
    summarizer = RecordingChatModel(replies=[SUMMARY])
    middleware = orchestrator_compaction(2300, summarizer)
    agent = researching_agent(middleware, fetches=2, system_prompt=big_prompt)

    events, values = await run(agent, [HumanMessage(REQUEST)])

    assert count_tokens_approximately(values["messages"]) < 2300
    assert len(summarizer.calls) == 1
    assert statuses(events, "compacting")[0]["tokens_estimate"] >= 2300


@pytest.mark.anyio
async def test_a_failed_summary_compacts_nothing_warns_and_the_run_goes_on() -> None:
    summarizer = RecordingChatModel(replies=[RuntimeError("compaction endpoint down")])
    compacted: list[tuple[int, int]] = []
    middleware = orchestrator_compaction(2000, summarizer, on_compacted=lambda u, s, k: compacted.append((s, k)))
    agent = researching_agent(middleware)

    events, values = await run(agent, [HumanMessage(REQUEST, id="request-1")])

    assert summarizer.calls
    assert not statuses(events, "compacted") and compacted == []
    warnings = statuses(events, "warning")
    assert warnings and all(w["reason"] == "compaction_failed" for w in warnings)
    assert "compaction endpoint down" in warnings[0]["detail"]
    messages = values["messages"]
    assert not any(is_harness_message(m) for m in messages)
    assert len(messages) == 1 + 2 * 8 + 1  # request, 8 calls with results, the answer: all still there
    assert messages[-1].text == "GDP grew every quarter."


@pytest.mark.anyio
async def test_a_key_a_failing_summarizer_echoes_leaves_no_fragment_where_its_message_is_cut() -> None:
    key = "local-server-key-4242424242"
    register_secrets([key])
    summarizer = RecordingChatModel(replies=[RuntimeError("x" * 290 + f" {key}")])
    agent = researching_agent(orchestrator_compaction(2000, summarizer))

    events, _ = await run(agent, [HumanMessage(REQUEST)])

    detail = statuses(events, "warning")[0]["detail"]
    assert "x" * 290 in detail and key[:9] not in detail


def long_state(retry_above: int = 0) -> dict[str, Any]:
    messages: list[AnyMessage] = [HumanMessage(REQUEST, id="u1")]
    for i in range(6):
        messages += [call(f"c{i}"), result(f"c{i}", 1000)]
    return {"messages": messages, "compaction_retry_above": retry_above}


@pytest.mark.anyio
@pytest.mark.parametrize("reply", [RuntimeError("boom"), "   "], ids=["exception", "empty summary"])
async def test_after_a_failure_the_summarizer_waits_for_the_context_to_grow(reply: Any) -> None:
    summarizer = RecordingChatModel(replies=[reply])
    middleware = orchestrator_compaction(1000, summarizer)
    state = long_state()

    update = await middleware.abefore_model(state, None)  # type: ignore[arg-type]

    assert update is not None and "messages" not in update
    assert update["compaction_retry_above"] > count_tokens_approximately(state["messages"])
    assert await middleware.abefore_model({**state, **update}, None) is None  # type: ignore[arg-type]
    assert len(summarizer.calls) == 1
    grown = {**state, **update, "messages": [*state["messages"], call("late"), result("late", 2000)]}
    await middleware.abefore_model(grown, None)  # type: ignore[arg-type]
    assert len(summarizer.calls) == 2


@pytest.mark.anyio
async def test_compaction_keeps_the_turn_so_per_turn_guard_state_carries_on() -> None:
    summarizer = RecordingChatModel(replies=[SUMMARY])
    middleware = orchestrator_compaction(1000, summarizer)
    state = long_state()

    update = await middleware.abefore_model(state, None)  # type: ignore[arg-type]

    assert update is not None
    new_messages = update["messages"][1:]
    assert turn_key(new_messages) == turn_key(state["messages"]) != ""
    assert new_messages[0].id == "u1" and update["compaction_summary"] == SUMMARY


@pytest.mark.anyio
async def test_a_second_compaction_summarizes_the_first_summary_with_the_messages_it_cuts() -> None:
    summarizer = RecordingChatModel(replies=["Second summary."])
    middleware = orchestrator_compaction(1000, summarizer)
    state = {**long_state(), "compaction_summary": "First summary: GDP grew 1.5% in Q1."}

    update = await middleware.abefore_model(state, None)  # type: ignore[arg-type]

    assert update is not None and update["compaction_summary"] == "Second summary."
    [call] = summarizer.calls
    assert "First summary: GDP grew 1.5% in Q1." in call.messages[-1].text
    assert all(m.name != HARNESS_MESSAGE_NAME for m in update["messages"][1:])


@pytest.mark.anyio
async def test_zero_disables_compaction() -> None:
    summarizer = RecordingChatModel(replies=[SUMMARY])
    middleware = orchestrator_compaction(0, summarizer)
    agent = researching_agent(middleware)

    events, values = await run(agent, [HumanMessage("x" * 50_000)])

    assert summarizer.calls == []
    assert not statuses(events, "compacting")
    assert len(values["messages"]) == 1 + 2 * 8 + 1
