"""Specification of the step guard: an agent stops cleanly before LangGraph's recursion limit, whatever
hook nodes its middleware adds and however many steps its thread has already run."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from deep_research_agent.domain.per_role import PerRoleMiddleware
from deep_research_agent.guards.chain import GuardChainMiddleware
from deep_research_agent.guards.step_limit import StepLimitMiddleware, steps_to_finish
from testkit.recording_model import RecordingChatModel

pytestmark = pytest.mark.anyio

ROLE = "research-subagent"


def hooked(label: str, *hooks: str) -> PerRoleMiddleware:
    """A middleware whose given node hooks do nothing (sync hooks take (state, runtime), async ones too)."""

    async def async_hook(self, state, runtime):
        return None

    def sync_hook(self, state, runtime):
        return None

    members = {hook: async_hook if hook.startswith("a") else sync_hook for hook in hooks}
    return type(label, (PerRoleMiddleware,), {"label": label, **members})(role=ROLE)


# Every kind of middleware the reserve must count right: sync and async node hooks, both variants of one
# hook (one node), hooks before the agent (not on the way out), and a wrap-only middleware (no node).
OTHERS = [
    hooked("SyncBeforeModel", "before_model"),
    hooked("AsyncAfterModel", "aafter_model"),
    hooked("BothAfterAgent", "after_agent", "aafter_agent"),
    hooked("AsyncBeforeAgent", "abefore_agent"),
    hooked("AsyncAfterModelToo", "aafter_model"),
]


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def calls_ping_forever(messages) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "ping", "args": {}, "id": f"call-{len(messages)}"}])


def looping_agent(others, **options):
    guards = GuardChainMiddleware([StepLimitMiddleware(role=ROLE, agent_middleware=others)], role=ROLE)
    model = RecordingChatModel(replies=[calls_ping_forever])
    return create_agent(model, tools=[ping], middleware=[guards, *others], name=ROLE, **options)


def test_the_reserve_is_one_more_loop_and_the_exit_path_counted_on_the_nodes_langchain_builds():
    nodes = list(looping_agent(OTHERS).nodes)

    def count(hook: str) -> int:
        return sum(name.endswith(f".{hook}") for name in nodes)

    one_more_loop = (
        count("after_model") + 1 + count("before_model") + 1
    )  # after_model hooks, tools, before_model hooks, model
    exit_path = count("after_model") + count("after_agent")
    assert steps_to_finish(OTHERS) == one_more_loop + exit_path == 8


async def run(agent, thread: str, run_id: str, limit: int) -> list[dict]:
    config = {"configurable": {"thread_id": thread, "run_id": run_id}, "recursion_limit": limit}
    return [
        event
        async for event in agent.astream(
            {"messages": [{"role": "user", "content": "Ping on."}]}, config, stream_mode="custom"
        )
    ]


@pytest.mark.parametrize("limit", range(12, 31))
async def test_a_looping_agent_stops_cleanly_before_its_recursion_limit(limit):
    events = await run(looping_agent(OTHERS), "step-limit", f"step-limit-{limit}", limit)

    [stop] = [e for e in events if e.get("state") == "recursion_limit"]
    assert stop["limit"] == limit and stop["used"] + steps_to_finish(OTHERS) >= limit


async def test_every_run_of_a_thread_gets_its_full_limit_however_many_steps_the_thread_ran_before():
    agent = looping_agent(OTHERS, checkpointer=InMemorySaver())

    first = await run(agent, "one-thread", "first-run", 30)
    second = await run(agent, "one-thread", "second-run", 30)

    used = [[e["used"] for e in events if e.get("state") == "recursion_limit"] for events in (first, second)]
    assert used[0] == used[1] and len(used[0]) == 1
