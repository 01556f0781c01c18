"""The plan's cost estimate (tier prices within the run's budgets), its text, the rules a proposed plan must keep,
and what the middleware shows the model with plan review on and off (the review's answer: test_plan_answer.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt.tool_node import ToolCallRequest

from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.plan import PlanEstimate, PlanUnit, estimate_deviation
from deep_research_agent.domain.plan_answer import PlanRules
from deep_research_agent.guards.budget import BudgetLimits
from deep_research_agent.plan_review import (
    PROPOSED_AT_KEY,
    PlanReviewMiddleware,
    estimate_plan,
    plan_text,
)
from deep_research_agent.settings.tiers import MODEL_TIERS, ModelSpec, Tier

TIER = MODEL_TIERS["extra-low"]
OPEN = BudgetLimits(max_tool_calls=200, max_total_tokens=4_000_000, max_run_seconds=0, max_cost_usd=0)


def _priced(spec: ModelSpec, tokens: int) -> float:
    # 5 % of a research turn's tokens are output.
    return spec.cost_usd(tokens - tokens // 20, tokens // 20)


def test_the_estimate_prices_each_unit_on_the_subagent_model_and_one_more_on_the_orchestrators():
    estimate = estimate_plan(3, tier=TIER, unit_tokens=100_000, limits=OPEN)

    assert estimate.units == 3 and estimate.tokens == 400_000 and not estimate.capped
    expected = 3 * _priced(TIER.subagent, 100_000) + _priced(TIER.research, 100_000)
    assert estimate.cost_usd == pytest.approx(expected, rel=1e-4)
    assert estimate.cost_usd > 0


def test_without_a_dollar_budget_the_ceiling_is_the_token_budget_at_the_dearest_slots_prices():
    estimate = estimate_plan(1, tier=TIER, unit_tokens=100_000, limits=OPEN)

    dearest = max(_priced(TIER.subagent, 4_000_000), _priced(TIER.research, 4_000_000))
    assert estimate.ceiling_usd == pytest.approx(dearest, rel=1e-4)


def test_a_run_without_a_token_or_dollar_cap_has_no_ceiling_and_nothing_is_cut():
    uncapped = BudgetLimits(max_tool_calls=200, max_total_tokens=0, max_run_seconds=0, max_cost_usd=0)

    estimate = estimate_plan(50, tier=TIER, unit_tokens=200_000, limits=uncapped)

    assert estimate.ceiling_usd is None and not estimate.capped and estimate.tokens == 51 * 200_000
    assert plan_text([PlanUnit(brief="A")], estimate).endswith("the run has no token or dollar cap.")


def test_a_plan_bigger_than_the_token_budget_is_cut_to_it():
    limits = BudgetLimits(max_tool_calls=200, max_total_tokens=250_000, max_run_seconds=0, max_cost_usd=0)

    estimate = estimate_plan(4, tier=TIER, unit_tokens=100_000, limits=limits)

    assert estimate.capped and estimate.tokens == 250_000
    uncapped = estimate_plan(4, tier=TIER, unit_tokens=100_000, limits=OPEN)
    assert estimate.cost_usd == pytest.approx(uncapped.cost_usd * 250_000 / 500_000, rel=1e-3)


def test_a_dollar_budget_is_the_ceiling_and_caps_the_estimate():
    limits = BudgetLimits(max_tool_calls=200, max_total_tokens=4_000_000, max_run_seconds=0, max_cost_usd=0.01)

    estimate = estimate_plan(10, tier=TIER, unit_tokens=200_000, limits=limits)

    assert estimate.ceiling_usd == 0.01 and estimate.cost_usd == 0.01 and estimate.capped


def test_an_unpriced_model_estimates_zero_and_no_deviation_is_reported():
    free = ModelSpec(slug="local", input_usd_per_mtok=0, output_usd_per_mtok=0, context_window=32_768)
    tier = Tier(research=free, subagent=free, utility=free, compaction=free, coding=free)

    estimate = estimate_plan(2, tier=tier, unit_tokens=100_000, limits=OPEN)

    assert estimate.cost_usd == 0
    assert estimate_deviation(estimate, 0.0) is None


@pytest.mark.parametrize(("actual", "deviation"), [(0.10, 0.0), (0.125, 0.25), (0.05, -0.5)])
def test_the_deviation_is_the_actual_cost_as_a_fraction_over_or_under_the_estimate(actual, deviation):
    estimate = PlanEstimate(units=1, tokens=1000, cost_usd=0.10, ceiling_usd=1.0)

    assert estimate_deviation(estimate, actual) == pytest.approx(deviation)


def test_the_plan_text_lists_each_brief_with_its_sources_then_the_estimate():
    units = [PlanUnit(brief="Find A", expected_sources=["site-a.org"]), PlanUnit(brief="Find B")]
    estimate = PlanEstimate(units=2, tokens=300_000, cost_usd=0.0123, ceiling_usd=0.5, capped=True)

    text = plan_text(units, estimate)

    assert text.splitlines() == [
        "Research plan: 2 units.",
        "1. Find A (expected sources: site-a.org)",
        "2. Find B",
        "Estimated cost: $0.0123 for about 300,000 tokens, cut to the run's budgets; the run's budgets allow at most "
        "$0.5000.",
    ]


RULES = PlanRules(max_units=3, subagent_types=("research-subagent",))


def _free(units: int) -> PlanEstimate:
    return PlanEstimate(units=units, tokens=0, cost_usd=0, ceiling_usd=0)


def test_a_negative_timeout_is_refused_where_the_middleware_is_built():
    with pytest.raises(KnobError, match="timeout_s"):
        PlanReviewMiddleware(timeout_s=-1, estimate=_free, rules=RULES)


def test_the_middleware_is_built_with_the_rules_a_plan_must_keep():
    with pytest.raises(KnobError, match="rules"):
        PlanReviewMiddleware(timeout_s=0, estimate=_free, rules=None)  # type: ignore[arg-type]


def _middleware(*, offered: bool) -> PlanReviewMiddleware:
    return PlanReviewMiddleware(timeout_s=0, estimate=_free, rules=RULES, offered=offered)


@pytest.mark.parametrize(
    ("units", "problem"),
    [
        ([PlanUnit(brief=f"Find {n}") for n in range(4)], "the plan has 4 units and a plan may have at most 3"),
        ([PlanUnit(brief="Find A", subagent_type="web-subagent")], 'unit 1 is for the sub-agent "web-subagent"'),
    ],
)
def test_a_proposed_plan_that_breaks_the_rules_goes_back_to_the_orchestrator_before_any_review(units, problem):
    runtime = SimpleNamespace(tool_call_id="p1", state={"messages": []})

    # No graph is running: a plan that reached the review would fail here on interrupt().
    answer = _middleware(offered=True)._review(units, runtime)  # type: ignore[arg-type]

    assert isinstance(answer, ToolMessage) and answer.status == "error" and answer.tool_call_id == "p1"
    assert answer.text.startswith("TOOL ERROR (propose_plan, permanent): the plan was not shown to the user: ")
    assert problem in answer.text and answer.text.endswith("Propose it again.")


async def _replying(middleware: PlanReviewMiddleware, reply: AIMessage) -> tuple[list[str], list[object]]:
    """The tool names the model was shown, and what the middleware answered with, for one model call."""
    shown: list[str] = []

    async def model(request: ModelRequest) -> ModelResponse:
        shown.extend(t.name for t in request.tools)
        return ModelResponse(result=[reply])

    tools = [*middleware.tools, _named_tool("task")]
    request = ModelRequest(
        model=None, messages=[HumanMessage("Kelp?")], system_message=None, tools=tools, state={}, runtime=None
    )  # type: ignore[arg-type]
    response = await middleware.awrap_model_call(request, model)
    return shown, list(response.result)


def _named_tool(name: str):
    @tool(name)
    def stand_in() -> str:
        """A stand-in tool."""
        return ""

    return stand_in


@pytest.mark.anyio
async def test_without_plan_review_the_tool_is_registered_for_a_resume_but_never_shown_to_the_model():
    middleware = _middleware(offered=False)

    shown, _ = await _replying(middleware, AIMessage(content="ok"))

    assert [t.name for t in middleware.tools] == ["propose_plan"], "a resumed propose_plan call needs its tool"
    assert middleware.withheld == {"propose_plan"}, "the run's tool list leaves it out"
    assert shown == ["task"]
    assert _middleware(offered=True).withheld == frozenset()


@pytest.mark.anyio
async def test_without_plan_review_a_task_is_not_held_back_for_a_review():
    started: list[str] = []

    async def run_tool(request):
        started.append(request.tool_call["name"])
        return ToolMessage("done", tool_call_id=request.tool_call["id"])

    call = {"name": "task", "args": {}, "id": "t1", "type": "tool_call"}
    request = ToolCallRequest(tool_call=call, tool=None, state={"messages": [HumanMessage("Kelp?")]}, runtime=None)  # type: ignore[arg-type]

    offered = await _middleware(offered=True).awrap_tool_call(request, run_tool)
    plain = await _middleware(offered=False).awrap_tool_call(request, run_tool)

    assert "TOOL ERROR (task, permanent)" in offered.text  # type: ignore[union-attr]
    assert plain.text == "done" and started == ["task"]  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_two_proposals_in_one_reply_pause_once_and_the_second_is_refused_with_a_tool_error():
    units = [{"brief": "Find A"}]
    reply = AIMessage(
        content="",
        tool_calls=[
            {"name": "propose_plan", "args": {"units": units}, "id": "p1", "type": "tool_call"},
            {"name": "propose_plan", "args": {"units": units}, "id": "p2", "type": "tool_call"},
        ],
    )

    shown, result = await _replying(_middleware(offered=True), reply)

    assert "propose_plan" in shown
    assert result[0] is reply
    [refusal] = result[1:]
    assert isinstance(refusal, ToolMessage) and refusal.tool_call_id == "p2" and refusal.status == "error"
    assert refusal.text.startswith("TOOL ERROR (propose_plan, permanent): only one plan is reviewed at a time")


@pytest.mark.anyio
async def test_without_plan_review_a_propose_plan_call_no_reviewed_run_proposed_is_refused_rather_than_pausing():
    plain = _middleware(offered=False)
    ran: list[str] = []

    async def run_tool(request):
        ran.append(request.tool_call["id"])
        return ToolMessage("reviewed", tool_call_id=request.tool_call["id"])

    def proposal(call_id: str, stamped: bool) -> ToolCallRequest:
        call = {"name": "propose_plan", "args": {"units": [{"brief": "Find A"}]}, "id": call_id, "type": "tool_call"}
        reply = AIMessage(content="", tool_calls=[call])
        if stamped:
            # As a reviewed graph stamps the reply that proposed: the call a resume answers.
            reply.response_metadata[PROPOSED_AT_KEY] = 1_800_000_000.0
        return ToolCallRequest(
            tool_call=call, tool=None, state={"messages": [HumanMessage("Kelp?"), reply]}, runtime=None
        )  # type: ignore[arg-type]

    refused = await plain.awrap_tool_call(proposal("fresh", stamped=False), run_tool)
    resumed = await plain.awrap_tool_call(proposal("resumed", stamped=True), run_tool)

    assert isinstance(refused, ToolMessage) and refused.status == "error"
    assert refused.text.startswith("TOOL ERROR (propose_plan, permanent): this run has no plan review")
    assert ran == ["resumed"], "the resume of a plan a reviewed run proposed is answered on any graph"
    assert resumed.text == "reviewed"  # type: ignore[union-attr]
