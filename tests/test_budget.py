"""Budgets in-process: ceiling arithmetic, the soft and hard stages, refusals, the clock, and the salvaged report."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents.middleware import (
    ModelRequest,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest

from deep_research_agent.domain.conversation import is_harness_message
from deep_research_agent.domain.findings import Findings
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.usage import RoleUsage
from deep_research_agent.evidence.store import HandOver
from deep_research_agent.graph import budget_limits
from deep_research_agent.guards import budget
from deep_research_agent.guards.budget import BudgetLimits, BudgetMiddleware, binding_ceiling, ceiling_uses
from deep_research_agent.handover.contract import parse_findings
from deep_research_agent.report.salvage import salvage_report
from deep_research_agent.run import Run
from deep_research_agent.settings import ResearchConfig
from testkit.guard_calls import call_model_through, capture_events

pytestmark = pytest.mark.anyio


def limits(**configurable) -> BudgetLimits:
    """The ceilings the graph hands the budget guard for a run with this ``configurable``."""
    return budget_limits(ResearchConfig.resolve({"configurable": configurable}, environ={"OPENAI_API_KEY": "sk-test"}))


@pytest.fixture
def events(monkeypatch):
    return capture_events(monkeypatch, budget)


def tool_request(name: str = "web_search") -> ToolCallRequest:
    return ToolCallRequest(
        tool_call={"name": name, "args": {}, "id": f"call-{name}"}, tool=None, state={}, runtime=None
    )


async def run_tool(request: ToolCallRequest) -> ToolMessage:
    return ToolMessage("ran", tool_call_id=request.tool_call["id"])


def spend_tool_calls(run: Run, role: str, count: int) -> None:
    for _ in range(count):
        run.usage.count_tool_call(role, None)


def test_cached_input_counts_a_tenth_against_the_token_ceiling(run):
    run.usage.count_model_call(
        "orchestrator", None, RoleUsage(input_tokens=10_000, cached_tokens=8_000, output_tokens=500)
    )

    tokens = next(u for u in ceiling_uses(run, limits(max_total_tokens=10_000)) if u.name == "tokens")

    assert tokens.used == 2_000 + 800 + 500


def test_ceilings_of_zero_are_no_caps_and_the_binding_ceiling_is_the_fullest(run):
    spend_tool_calls(run, "orchestrator", 5)
    spend_tool_calls(run, "research-subagent", 2)
    run.usage.count_model_call("research-subagent", None, RoleUsage(cost_usd=0.2))
    uses = ceiling_uses(run, limits(max_tool_calls=10, max_cost_usd=0.25, max_run_seconds=0))

    assert {u.name for u in uses} == {"tool_calls", "tokens", "cost"}
    assert binding_ceiling(uses).name == "cost" and binding_ceiling(uses).fraction == pytest.approx(0.8)


async def test_the_soft_stage_is_announced_once_per_run_and_every_later_call_is_nudged_without_persisting_it(
    run, events
):
    spend_tool_calls(run, "orchestrator", 8)
    orchestrator = BudgetMiddleware(limits(max_tool_calls=10), role="orchestrator")
    worker = BudgetMiddleware(limits(max_tool_calls=10), role="research-subagent")
    orchestrator_state = {"messages": [HumanMessage("q")]}
    worker_state = {"messages": [HumanMessage("brief")]}

    added, sent = await call_model_through(orchestrator, orchestrator_state)
    again, again_sent = await call_model_through(orchestrator, orchestrator_state)
    _, worker_sent = await call_model_through(worker, worker_state)

    assert [(e["state"], e["reason"]) for e in events] == [("budget_soft", "tool_calls")]
    nudge = sent[-1]
    assert is_harness_message(nudge) and "submit_report" in nudge.text
    assert [m.text for m in added] == ["working"], "only the user's words are human messages in the thread"
    assert [m.text for m in again] == ["working"]
    assert sum(is_harness_message(m) for m in again_sent) == 1, "the next call is nudged again, once"
    assert "findings" in worker_sent[-1].text


async def test_at_the_ceiling_tool_calls_are_refused_except_the_report_and_model_calls_end_the_agent(run, events):
    spend_tool_calls(run, "research-subagent", 10)
    guard = BudgetMiddleware(limits(max_tool_calls=10), role="research-subagent")

    refused = await guard.awrap_tool_call(tool_request(), run_tool)
    delivered = await guard.awrap_tool_call(tool_request("submit_report"), run_tool)
    added, sent = await call_model_through(
        guard, {"messages": [HumanMessage("brief"), AIMessage('{"summary": "so far"}')]}
    )

    assert refused.status == "error" and "budget is used up" in refused.text
    assert delivered.text == "ran"
    assert sent is None and len(added) == 1 and not added[0].tool_calls
    assert parse_findings(added[0].text).summary == "so far"
    assert [(e["state"], e["reason"]) for e in events] == [("budget_halt", "tool_calls")]
    assert run.control.halt.reason == "budget_exhausted" and run.control.halt.ceiling == "tool_calls"


async def test_a_model_call_still_running_at_the_deadline_is_cut_off(run, events):
    run.started_monotonic -= 9.8
    guard = BudgetMiddleware(limits(max_run_seconds=10), role="research-subagent")

    async def slow_model(request):
        await asyncio.sleep(30)

    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await guard.awrap_model_call(
        ModelRequest(model=None, messages=[HumanMessage("brief")], state={}), slow_model
    )

    assert loop.time() - started < 1
    [stop] = result.result
    assert "Halted by the run's budget" in stop.text
    assert [(e["state"], e["reason"]) for e in events] == [("budget_soft", "time"), ("budget_halt", "time")]


async def test_a_slow_tool_is_cut_off_at_the_deadline_but_a_sub_agent_task_is_left_to_its_own_guard(run, events):
    run.started_monotonic -= 9.8
    guard = BudgetMiddleware(limits(max_run_seconds=10), role="orchestrator")

    async def slow_tool(request):
        await asyncio.sleep(0.5)
        return ToolMessage("finished", tool_call_id=request.tool_call["id"])

    task = await guard.awrap_tool_call(tool_request("task"), slow_tool)
    cut = await guard.awrap_tool_call(tool_request("web_fetch"), slow_tool)

    assert task.text == "finished"
    assert cut.status == "error" and "time budget" in cut.text


def test_the_salvaged_report_cites_findings_and_says_why_and_what_is_missing(run):
    run.evidence.add_source("https://a.example/cells", title="Cell tests")
    run.evidence.add_handover(
        HandOver(
            task_id="call-1",
            unit="Find the energy density of sodium-glass cells",
            findings=Findings.model_validate(
                {
                    "summary": "The cell reached 412 Wh/kg.",
                    "findings": [
                        {"finding": "The cell reached 412 Wh/kg.", "source": "https://a.example/cells"},
                        {"finding": "Costs fell by a third", "source": "https://b.example/costs"},
                        {"finding": "A lab confirmed it.", "source": "https://a.example/cells"},
                    ],
                    "gaps": ["cycle life"],
                }
            ),
        )
    )

    report = salvage_report(run.evidence, reason="the run's time budget is used up")

    head, sources = report.split("## Sources")
    assert head.startswith("# Research findings (incomplete)\n\n> **Incomplete.**")
    assert "time budget is used up" in head and "Missing: a synthesis across the units; 1 gap" in head
    assert "- The cell reached 412 Wh/kg [1].\n- Costs fell by a third [2]\n- A lab confirmed it [1]." in head
    assert "Not established: cycle life" in head
    assert sources.strip().splitlines() == [
        "[1] Cell tests — https://a.example/cells",
        "[2] b.example — https://b.example/costs",
    ]


def test_a_salvaged_report_without_findings_says_so(run):
    report = salvage_report(run.evidence, reason="the run reached its recursion limit")

    assert "No research unit returned findings" in report and "every finding" in report
    assert report.rstrip().endswith("## Sources\nNone.")


# --- the guard's knobs --------------------------------------------------------------------------------


def test_the_graph_hands_the_guard_the_runs_four_ceilings():
    assert limits(max_tool_calls=7, max_total_tokens=9_000, max_run_seconds=60, max_cost_usd=0.5) == BudgetLimits(
        max_tool_calls=7, max_total_tokens=9_000, max_run_seconds=60.0, max_cost_usd=0.5
    )


@pytest.mark.parametrize(
    ("knob", "value"),
    [
        ("max_tool_calls", -1),
        ("max_total_tokens", -5),
        ("max_run_seconds", -0.5),
        ("max_cost_usd", -0.01),
        ("max_run_seconds", float("nan")),
        ("max_cost_usd", float("inf")),
        ("max_tool_calls", 2.5),
        ("max_total_tokens", "100"),
    ],
)
def test_a_negative_non_finite_or_mistyped_ceiling_is_refused_naming_it(knob: str, value: object):
    with pytest.raises(KnobError, match=knob) as refused:
        BudgetLimits(**{knob: value})  # type: ignore[arg-type]
    assert refused.value.parameter == knob
    assert isinstance(refused.value, ValueError)


def test_zero_means_no_cap_and_is_accepted(run):
    assert ceiling_uses(run, BudgetLimits()) == []


def test_the_guard_refuses_anything_but_its_limits():
    with pytest.raises(KnobError, match="limits"):
        BudgetMiddleware({"max_tool_calls": 10}, role="orchestrator")  # type: ignore[arg-type]
