"""Stop requests in-process: the watcher, and the budget guard cutting the calls in flight."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.store.base import GetOp
from langgraph.store.memory import InMemoryStore

from deep_research_agent.delivery import stop as stop_request
from deep_research_agent.delivery.stop import watch_for_stop_request
from deep_research_agent.domain.names import EndReason
from deep_research_agent.domain.stops import StopCause
from deep_research_agent.graph import budget_limits
from deep_research_agent.guards.budget import BudgetMiddleware
from deep_research_agent.handover.contract import parse_findings
from deep_research_agent.protocol.events import STOP_REQUESTS_NAMESPACE
from deep_research_agent.run import Halt, Run
from deep_research_agent.settings import ResearchConfig
from testkit.guard_calls import capture_events

pytestmark = pytest.mark.anyio

USER_STOP = Halt(cause=StopCause.USER, detail="the user asked the run to stop and report what it found")


@pytest.fixture
def events(monkeypatch):
    return capture_events(monkeypatch, stop_request)


def budget(role: str = "research-subagent") -> BudgetMiddleware:
    settings = ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-test"})
    return BudgetMiddleware(budget_limits(settings), role=role)


async def test_the_watcher_halts_the_run_once_and_deletes_the_request(run, events):
    store = InMemoryStore()
    watcher = asyncio.create_task(watch_for_stop_request(store, run, poll_s=0.01))
    await asyncio.sleep(0.05)
    assert run.control.halt is None and not watcher.done()

    await store.aput(STOP_REQUESTS_NAMESPACE, run.key, {"by": "user"})
    await asyncio.wait_for(watcher, timeout=2)

    assert run.control.halt is not None and run.control.halt.reason == EndReason.STOPPED_BY_USER
    assert [e["state"] for e in events] == ["stop_requested"]
    assert await store.aget(STOP_REQUESTS_NAMESPACE, run.key) is None


async def test_another_runs_request_leaves_this_run_alone(run, events):
    store = InMemoryStore()
    await store.aput(STOP_REQUESTS_NAMESPACE, "some-other-run", {"by": "user"})
    watcher = asyncio.create_task(watch_for_stop_request(store, run, poll_s=0.01))
    await asyncio.sleep(0.05)

    assert run.control.halt is None and not watcher.done()
    run.control.close()
    await asyncio.wait_for(watcher, timeout=2)
    assert await store.aget(STOP_REQUESTS_NAMESPACE, "some-other-run") is not None


async def test_a_request_a_client_put_through_aegra_lands_in_its_user_scope_and_still_stops_the_run(run, events):
    # Aegra's store API files a client's put_item(["deep_research_agent", "stop_requests"], ...) under
    # ["users", <identity>, ...]; the graph's own store is not scoped.
    store = InMemoryStore()
    scoped = ("users", "alice", *STOP_REQUESTS_NAMESPACE)
    await store.aput(("users", "mallory", *STOP_REQUESTS_NAMESPACE), run.key, {"mode": "now"})
    watcher = asyncio.create_task(watch_for_stop_request(store, run, owner="alice", poll_s=0.01))
    await asyncio.sleep(0.05)
    assert run.control.halt is None, "another user's request stopped the run"

    await store.aput(scoped, run.key, {"mode": "now"})
    await asyncio.wait_for(watcher, timeout=2)

    assert run.control.halt is not None and run.control.halt.reason == EndReason.STOPPED_BY_USER
    assert [e["state"] for e in events] == ["stop_requested"]
    assert await store.aget(scoped, run.key) is None, "the served request was not deleted"


async def test_a_process_starts_one_watcher_per_run_however_often_it_is_asked(run):
    store = InMemoryStore()
    stop_request.start_watching(store, run, owner="alice")
    first = run.attachments.get(stop_request.StopWatcher)
    stop_request.start_watching(store, run, owner="alice")

    assert first is not None and run.attachments.get(stop_request.StopWatcher) is first
    run.control.close()
    await asyncio.wait_for(first.task, timeout=2)


class CountingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    async def abatch(self, ops):
        if ops and any(isinstance(op, GetOp) for op in ops):
            self.batches.append(len(ops))
        return await super().abatch(ops)


async def test_one_poller_reads_every_run_of_the_process_in_one_batch_and_a_stop_leaves_the_others_watched(events):
    store = CountingStore()
    poller = stop_request.StopRequestPoller(store, poll_s=0.01)
    first, second = Run(key="run-a"), Run(key="run-b")
    task = poller.watch(first, owner="alice")
    assert poller.watch(second, owner="bob") is task
    await asyncio.sleep(0.05)
    # Per run and namespace (as given, and the owner's scope): a read of its stop request, a search of its steers.
    assert store.batches and set(store.batches) == {8}, "each run was read on its own"

    await store.aput(("users", "alice", *STOP_REQUESTS_NAMESPACE), "run-a", {"mode": "now"})
    await asyncio.sleep(0.05)

    assert first.control.halt is not None and second.control.halt is None
    assert store.batches[-1] == 4 and not task.done()
    second.control.close()
    await asyncio.wait_for(task, timeout=2)


async def test_the_watcher_ends_with_its_run(run):
    watcher = asyncio.create_task(watch_for_stop_request(InMemoryStore(), run, poll_s=0.01))
    await asyncio.sleep(0.03)

    run.control.close()

    await asyncio.wait_for(watcher, timeout=2)


class FlakyStore(InMemoryStore):
    """A store whose first reads fail, as a database store does while it reconnects."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.reads = 0

    async def abatch(self, ops):
        if any(isinstance(op, GetOp) for op in ops):
            self.reads += 1
            if self.reads <= self.failures:
                raise ConnectionError("store unavailable")
        return await super().abatch(ops)


async def test_a_failing_store_is_retried_rather_than_ending_the_run(run, events):
    store = FlakyStore(failures=2)
    await store.aput(STOP_REQUESTS_NAMESPACE, run.key, {"by": "user"})

    await asyncio.wait_for(watch_for_stop_request(store, run, poll_s=0.01), timeout=2)

    assert store.reads == 3 and run.control.halt is not None and run.control.halt.reason == EndReason.STOPPED_BY_USER


async def test_a_model_call_in_flight_is_cut_and_the_sub_agent_hands_back_what_it_found(run):
    found = '{"summary": "Sodium cells cost less.", "findings": [], "gaps": []}'
    state = {"messages": [HumanMessage("brief"), AIMessage(found)]}
    started = asyncio.Event()

    async def slow_model(request: ModelRequest) -> ModelResponse:
        started.set()
        await asyncio.sleep(30)
        return ModelResponse(result=[AIMessage("too late")])

    call = asyncio.create_task(
        budget().awrap_model_call(ModelRequest(model=None, messages=state["messages"], state=state), slow_model)
    )
    await started.wait()
    run.control.request_stop(USER_STOP)
    response = await asyncio.wait_for(call, timeout=2)

    [hand_back] = response.result
    handed = parse_findings(hand_back.text)
    assert handed.summary == "Sodium cells cost less."
    assert any("the user's request to stop and report" in gap for gap in handed.gaps)


async def test_a_tool_call_in_flight_is_cut_with_an_error_naming_the_stop(run):
    search = {"name": "web_search", "args": {}, "id": "call-1"}
    request = ToolCallRequest(tool_call=search, tool=None, state={}, runtime=None)
    started = asyncio.Event()

    async def slow_search(request: ToolCallRequest) -> ToolMessage:
        started.set()
        await asyncio.sleep(30)
        return ToolMessage("results", tool_call_id="call-1")

    call = asyncio.create_task(budget().awrap_tool_call(request, slow_search))
    await started.wait()
    run.control.request_stop(USER_STOP)
    result = await asyncio.wait_for(call, timeout=2)

    assert result.status == "error" and "asked the run to stop" in result.text


async def test_after_a_stop_no_call_starts_in_any_role(run):
    run.control.request_stop(USER_STOP)
    called = []

    async def model(request: ModelRequest) -> ModelResponse:
        called.append(request)
        return ModelResponse(result=[AIMessage("x")])

    await budget("orchestrator").awrap_model_call(
        ModelRequest(model=None, messages=[HumanMessage("q")], state={}), model
    )
    await budget().awrap_model_call(ModelRequest(model=None, messages=[HumanMessage("brief")], state={}), model)

    assert called == []


async def test_a_wrap_up_request_winds_the_run_down_and_a_later_stop_now_halts_it(run, events):
    store = InMemoryStore()
    watcher = asyncio.create_task(watch_for_stop_request(store, run, poll_s=0.01))

    await store.aput(STOP_REQUESTS_NAMESPACE, run.key, {"mode": "wrap_up"})
    await asyncio.sleep(0.05)

    assert run.control.wrap_up_requested and run.control.halt is None and not watcher.done()
    assert [(e["state"], e["reason"]) for e in events] == [("stop_requested", "wrap_up")]
    assert await store.aget(STOP_REQUESTS_NAMESPACE, run.key) is None

    await store.aput(STOP_REQUESTS_NAMESPACE, run.key, {"mode": "now"})
    await asyncio.wait_for(watcher, timeout=2)

    assert run.control.halt is not None and run.control.halt.reason == EndReason.STOPPED_BY_USER
    assert [e["reason"] for e in events] == ["wrap_up", "now"]


async def test_while_wrapping_up_every_model_call_is_told_and_only_the_report_may_still_run(run):
    run.control.request_wrap_up()
    guard = budget("orchestrator")
    state = {"messages": [HumanMessage("q")]}
    sent = []

    async def model(request: ModelRequest) -> ModelResponse:
        sent.append(request.messages)
        return ModelResponse(result=[AIMessage("writing")])

    async def tool(request: ToolCallRequest) -> ToolMessage:
        return ToolMessage("ran", tool_call_id=request.tool_call["id"])

    first = await guard.awrap_model_call(ModelRequest(model=None, messages=state["messages"], state=state), model)
    await guard.awrap_model_call(ModelRequest(model=None, messages=state["messages"], state=state), model)
    refused = await guard.awrap_tool_call(tool_call("task"), tool)
    delivered = await guard.awrap_tool_call(tool_call("submit_report"), tool)

    for messages in sent:
        assert "WRAP UP NOW: the user asked this research run to finish now" in messages[-1].text
        assert "submit_report" in messages[-1].text
    assert [m.text for m in first.result] == ["writing"], "the nudge is the call's, never the thread's"
    assert [m.text for m in state["messages"]] == ["q"]
    assert refused.status == "error" and "wrap up" in refused.text
    assert delivered.text == "ran"


def tool_call(name: str) -> ToolCallRequest:
    return ToolCallRequest(
        tool_call={"name": name, "args": {}, "id": f"call-{name}"}, tool=None, state={}, runtime=None
    )
