"""Specification of how the run lifecycle contains exceptions: an end status that says what to fix, never a traceback."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import httpx
import openai
import pytest
from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.errors import GraphInterrupt
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from deep_research_agent.delivery import turn_end
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.names import Role
from deep_research_agent.domain.secrets import register_secrets
from deep_research_agent.domain.usage import RoleUsage
from deep_research_agent.graph import build_graph, model_endpoint, run_lifecycle
from deep_research_agent.guards.budget import BudgetLimits
from deep_research_agent.lifecycle import (
    ContainedCallsMiddleware,
    RunClosingMiddleware,
    RunLifecycle,
    RunOpeningMiddleware,
)
from deep_research_agent.lifecycle.model_errors import ModelEndpoint, describe_model_error
from deep_research_agent.run import Run, current_run, is_open, restore_ledger
from deep_research_agent.run.containment import INTERNAL_ERROR, contain_hook_failures
from deep_research_agent.settings import ResearchConfig
from testkit.scenarios import orchestrator, plan_and_delegate, researcher_reads, scenario, submit
from testkit.web import ARTICLES

pytestmark = pytest.mark.anyio

SECRET_DETAIL = "internal state at 0xdeadbeef"


def lifecycle() -> RunLifecycle:
    return run_lifecycle(ResearchConfig.resolve({"configurable": {}}, environ={}))


async def broken(request: object) -> ModelResponse:
    raise KeyError(SECRET_DETAIL)


async def test_an_unexpected_exception_in_a_model_call_ends_the_run_with_internal_error():
    request = ModelRequest(model=None, messages=[HumanMessage("question")], state={})

    result = await lifecycle().contained.awrap_model_call(request, broken)

    assert isinstance(result, ExtendedModelResponse)
    assert result.command.update["run_error"]["reason"] == "internal_error"
    shown = result.model_response.result[0].text + result.command.update["run_error"]["detail"]
    assert SECRET_DETAIL not in shown and "KeyError" not in shown and "Traceback" not in shown


async def test_an_unexpected_exception_in_a_tool_call_ends_the_run_before_the_next_model_call():
    middleware = lifecycle().contained
    request = ToolCallRequest(
        tool_call={"name": "submit_report", "args": {}, "id": "call-1"}, tool=None, state={}, runtime=None
    )

    result = await middleware.awrap_tool_call(request, broken)

    assert isinstance(result, Command) and result.update["run_error"]["reason"] == "internal_error"
    [message] = result.update["messages"]
    assert isinstance(message, ToolMessage) and message.status == "error" and SECRET_DETAIL not in message.text

    called = []

    async def model(request: ModelRequest) -> ModelResponse:
        called.append(request)
        raise AssertionError("the model must not be asked again")

    after = await middleware.awrap_model_call(
        ModelRequest(model=None, messages=[HumanMessage("question")], state={"run_error": result.update["run_error"]}),
        model,
    )
    assert called == [] and not after.result[0].tool_calls


async def cancelled(request: object) -> ModelResponse:
    raise asyncio.CancelledError


@pytest.mark.parametrize("call", ["model", "tool"])
async def test_a_cancelled_run_drops_its_stores_and_stays_cancelled(call):
    # The run's config, as the graph runtime provides it to every call of the run.
    var_child_runnable_config.set({"configurable": {"run_id": f"cancelled-{call}"}})
    run = current_run()
    run.evidence.add_evidence(
        url="https://example.org/a", title="A", kind="page", text="A page the run read.", agent="researcher"
    )
    middleware = lifecycle().contained

    model_request = ModelRequest(model=None, messages=[HumanMessage("q")], state={})
    tool_request = ToolCallRequest(
        tool_call={"name": "task", "args": {}, "id": "call-1"}, tool=None, state={}, runtime=None
    )

    with pytest.raises(asyncio.CancelledError):
        if call == "model":
            await middleware.awrap_model_call(model_request, cancelled)
        else:
            await middleware.awrap_tool_call(tool_request, cancelled)

    assert not is_open(run.key), "the cancelled run's stores (and every page it read) are still held"


def model_error(kind: type[openai.APIStatusError], status: int, message: str) -> openai.APIStatusError:
    request = httpx.Request(
        "POST", "http://127.0.0.1:9/v1/chat/completions", json={"model": "acme/no-such-model", "messages": []}
    )
    response = httpx.Response(status, request=request, json={"error": {"message": message}})
    return kind(message, response=response, body={"message": message})


def test_an_unknown_model_is_named_with_its_tier_and_the_settings_to_check():
    settings = ResearchConfig.resolve({"configurable": {"model_tier": "low"}}, environ={})

    detail = describe_model_error(model_error(openai.NotFoundError, 404, "model not found"), model_endpoint(settings))

    assert "'acme/no-such-model'" in detail and "tier 'low'" in detail
    assert "OPENAI_BASE_URL" in detail and "DRA_MODEL_TIER" in detail


def test_a_context_overflow_says_to_compact_sooner():
    overflow = model_error(openai.BadRequestError, 400, "This model's maximum context length is 131072 tokens.")

    detail = describe_model_error(overflow, model_endpoint(ResearchConfig.resolve({}, environ={})))

    assert "maximum context length is 131072" in detail and "lower DRA_COMPACTION_TOKENS" in detail


def test_other_bad_requests_pass_the_providers_message_on_without_a_compaction_hint():
    invalid = model_error(openai.BadRequestError, 400, "tools[0] is invalid")

    detail = describe_model_error(invalid, model_endpoint(ResearchConfig.resolve({}, environ={})))

    assert "(400): tools[0] is invalid" in detail and "COMPACTION" not in detail


def test_a_key_echoed_in_a_providers_message_never_reaches_the_detail():
    key = "sk-live-4242424242424242"
    settings = ResearchConfig.resolve({"configurable": {"apiKeys": {"OPENAI_API_KEY": key}}}, environ={})
    register_secrets(settings.secret_values())

    echoed = model_error(openai.BadRequestError, 400, f"invalid key {key} for this model")

    detail = describe_model_error(echoed, model_endpoint(settings))

    assert key not in detail and "invalid key" in detail


def test_a_key_where_the_providers_message_is_cut_leaves_no_fragment_in_the_detail():
    key = "local-server-key-4242424242"
    settings = ResearchConfig.resolve({"configurable": {"apiKeys": {"OPENAI_API_KEY": key}}}, environ={})
    register_secrets(settings.secret_values())

    echoed = model_error(openai.BadRequestError, 400, "x" * 290 + f" {key}")

    detail = describe_model_error(echoed, model_endpoint(settings))

    assert "x" * 290 in detail and key[:9] not in detail


# --- node hooks ------------------------------------------------------------------------------------------


class FlakyHook:
    def __init__(self, role: str = Role.ORCHESTRATOR, error: BaseException | None = None) -> None:
        self.role = role
        self.error = error or RuntimeError(SECRET_DETAIL)

    @contain_hook_failures
    async def abefore_model(self, state: dict, runtime: object) -> dict | None:
        raise self.error


async def test_a_failing_orchestrator_hook_records_the_internal_error_and_jumps_to_the_end():
    update = await FlakyHook().abefore_model({}, None)

    assert update == {"run_error": INTERNAL_ERROR, "jump_to": "end"}


async def test_a_failing_sub_agent_hook_raises_so_its_task_fails_alone():
    with pytest.raises(RuntimeError):
        await FlakyHook(role="research-subagent").abefore_model({}, None)


async def test_langgraph_control_flow_is_never_contained():
    with pytest.raises(GraphInterrupt):
        await FlakyHook(error=GraphInterrupt()).abefore_model({}, None)


async def test_a_hook_that_breaks_after_research_ends_the_run_with_internal_error_and_the_findings_delivered(
    scripted, web, monkeypatch
):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density"), submit("# Never submitted\n")),
            researcher_reads(url, query="sodium glass battery", finding="412 Wh/kg", quote="412 Wh/kg"),
        )
    )
    real_deliverable = turn_end.deliverable

    def deliverable_that_breaks_once_research_started(state, control, evidence, **options):
        if control.research_started:
            raise RuntimeError(SECRET_DETAIL)
        return real_deliverable(state, control, evidence, **options)

    monkeypatch.setattr(turn_end, "deliverable", deliverable_that_breaks_once_research_started)
    environ = {
        "OPENAI_BASE_URL": scripted.base_url,
        "OPENAI_API_KEY": "sk-test-0000",
        "TAVILY_API_BASE_URL": web.base_url,
        "DRA_FETCH_ALLOW_HOSTS": web.allow_host,
    }
    graph = build_graph(ResearchConfig.resolve({}, environ=environ))
    config = {"configurable": {"thread_id": "hook-failure", "run_id": "hook-failure-run"}}
    events = [
        chunk
        async for _, chunk in graph.astream(
            {"messages": [{"role": "user", "content": "How dense are sodium-glass cells?"}]},
            config,
            stream_mode="custom",
            subgraphs=True,
        )
    ]

    [end] = [e for e in events if e.get("state") in ("done", "error")]
    assert (end["state"], end["reason"]) == ("error", "internal_error")
    assert SECRET_DETAIL not in str(events)
    [report] = [e for e in events if e["type"] == "report"]
    assert report["partial"] is True and "412 Wh/kg" in report["markdown"]
    assert len([e for e in events if e["type"] == "usage"]) == 1


# --- the lifecycle's knobs ----------------------------------------------------------------------------

ENDPOINT = ModelEndpoint(base_url="http://127.0.0.1:9/v1", model_tier="low", request_timeout=30.0)


def test_the_graph_hands_each_part_of_the_lifecycle_the_settings_it_reports_and_enforces():
    settings = ResearchConfig.resolve(
        {"configurable": {"max_tool_calls": 40, "recursion_limit": 5, "remember_findings": True}},
        environ={"OPENAI_API_KEY": "sk-test", "DRA_MAX_RUNS_PER_USER": "3", "DRA_KNOWLEDGE_DATASET": "grid"},
    )

    contained, opening, ledger, closing = run_lifecycle(settings, build_warnings=("skill broken",))

    assert contained.endpoint == ModelEndpoint(
        base_url=settings.base_url, model_tier=settings.model_tier, request_timeout=settings.request_timeout
    )
    assert (opening.max_runs_per_user, opening.remember_findings, opening.knowledge_dataset) == (3, True, "grid")
    assert opening.warnings == (*settings.warnings, "skill broken")
    assert opening.problems == settings.problems
    assert closing.budget.max_tool_calls == 40
    assert closing.recursion_limit == 12  # the effective limit, never below the floor
    assert (closing.remember_findings, closing.knowledge_dataset) == (True, "grid")


@pytest.mark.parametrize(
    ("part", "knob", "value"),
    [
        (RunClosingMiddleware, "recursion_limit", 0),
        (RunClosingMiddleware, "recursion_limit", -3),
        (RunClosingMiddleware, "recursion_limit", 12.5),
        (RunClosingMiddleware, "budget", {"max_tool_calls": 10}),
        (RunOpeningMiddleware, "max_runs_per_user", -1),
        (RunOpeningMiddleware, "max_runs_per_user", True),
        (RunOpeningMiddleware, "warnings", "one warning"),
        (RunOpeningMiddleware, "problems", [3]),
        (RunOpeningMiddleware, "roster", ["web_search"]),
        (ContainedCallsMiddleware, "endpoint", "http://127.0.0.1:9/v1"),
    ],
)
def test_each_part_of_the_lifecycle_refuses_a_bad_knob_naming_it(part: type, knob: str, value: object):
    knobs: dict[type, dict[str, object]] = {
        RunClosingMiddleware: {"budget": BudgetLimits(), "recursion_limit": 40},
        RunOpeningMiddleware: {},
        ContainedCallsMiddleware: {"endpoint": ENDPOINT},
    }
    with pytest.raises(KnobError, match=knob) as refused:
        part(**{**knobs[part], knob: value})
    assert (refused.value.owner, refused.value.parameter) == (part.__name__, knob)


def test_the_lifecycle_opens_the_run_first_and_closes_it_last_at_the_cost_of_two_graph_steps():
    graph = build_graph(ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-test"}))
    edges = {(edge.source, edge.target) for edge in graph.get_graph().edges}

    assert ("__start__", "RunOpeningMiddleware.before_agent") in edges
    assert [source for source, target in edges if target == "__end__"] == ["RunClosingMiddleware.after_agent"]
    lifecycle_nodes = [
        name for name in graph.nodes if name.startswith(("ContainedCalls", "RunOpening", "RunLedger", "RunClosing"))
    ]
    assert lifecycle_nodes == ["RunOpeningMiddleware.before_agent", "RunClosingMiddleware.after_agent"]


@pytest.mark.parametrize(
    ("knob", "value"),
    [("base_url", ""), ("model_tier", "  "), ("request_timeout", -1.0), ("request_timeout", float("inf"))],
)
def test_an_endpoint_without_a_url_or_tier_or_with_a_negative_timeout_is_refused(knob: str, value: object):
    knobs: dict[str, object] = {"base_url": "http://127.0.0.1:9/v1", "model_tier": "low", "request_timeout": 30.0}
    with pytest.raises(KnobError, match=knob):
        ModelEndpoint(**{**knobs, knob: value})  # type: ignore[arg-type]


async def test_an_orchestrator_model_call_is_in_the_ledger_before_its_reply_reaches_the_checkpoint():
    # Killed after the planning step is checkpointed but before any of its tool calls ends, a run resumed
    # elsewhere must still count the planning call: the step is not made again.
    var_child_runnable_config.set({"configurable": {"run_id": "planning-counted", "thread_id": "t-planning"}})
    run = current_run()
    store = InMemoryStore()

    async def plans(request: ModelRequest) -> ModelResponse:
        run.usage.count_model_call(Role.ORCHESTRATOR, None, RoleUsage(input_tokens=10))
        return ModelResponse(result=[AIMessage("", tool_calls=[{"name": "task", "args": {}, "id": "c1"}])])

    request = ModelRequest(model=None, messages=[HumanMessage("q")], state={}, runtime=SimpleNamespace(store=store))
    await lifecycle().ledger.awrap_model_call(request, plans)

    resumed = Run(key="planning-counted")
    assert await restore_ledger(store, resumed, thread_id="t-planning")
    assert resumed.usage.of_role(Role.ORCHESTRATOR).model_calls == 1
