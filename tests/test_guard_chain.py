"""Specification of what ``GuardChainMiddleware`` accepts: only guards it can run whole.

The chain forwards ``awrap_model_call`` and ``awrap_tool_call`` and holds the guards' state in
``GuardChainState``; a guard with anything more would silently lose it in the chain, so it is refused
when the chain is built, with a TypeError naming the guard and what it would lose.
"""

from __future__ import annotations

from typing import Annotated, NotRequired

import pytest
from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.tools import tool

from deep_research_agent.domain.per_role import PerRoleMiddleware
from deep_research_agent.guards.chain import GuardChainMiddleware
from deep_research_agent.guards.loop import LoopGuardMiddleware

ROLE = "research-subagent"


def probe(**members: object) -> PerRoleMiddleware:
    """A guard named ``Probe[research-subagent]`` with the given class members."""
    return type("Probe", (PerRoleMiddleware,), {"label": "Probe", **members})(role=ROLE)


async def passes_through(self, request, handler):
    return await handler(request)


def test_guards_with_only_async_wrap_hooks_and_their_state_in_the_chain_state_are_accepted():
    both, model_only = (
        probe(awrap_model_call=passes_through, awrap_tool_call=passes_through),
        LoopGuardMiddleware(role=ROLE),
    )

    chain = GuardChainMiddleware([both, model_only], role=ROLE)

    assert chain.model_guards == [both, model_only] and chain.tool_guards == [both]


@pytest.mark.parametrize(
    "hook",
    [
        "before_agent",
        "abefore_agent",
        "before_model",
        "abefore_model",
        "wrap_model_call",
        "wrap_tool_call",
        "after_model",
        "aafter_model",
        "after_agent",
        "aafter_agent",
    ],
)
def test_a_guard_with_a_hook_the_chain_does_not_run_is_refused_by_name_and_hook(hook):
    guard = probe(awrap_model_call=passes_through, **{hook: lambda self, *args: None})

    with pytest.raises(
        TypeError, match=rf"cannot run Probe\[{ROLE}\]: it implements {hook}, which the chain does not run"
    ):
        GuardChainMiddleware([LoopGuardMiddleware(role=ROLE), guard], role=ROLE)


def test_a_guard_that_registers_tools_is_refused():
    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return query

    with pytest.raises(TypeError, match=r"Probe\[research-subagent\]: it registers tools \(lookup\)"):
        GuardChainMiddleware([probe(tools=[lookup])], role=ROLE)


def test_a_guard_whose_state_the_chain_state_lacks_is_refused():
    class ProbeState(AgentState):
        probe_count: NotRequired[Annotated[int, PrivateStateAttr]]

    with pytest.raises(
        TypeError, match=r"Probe\[research-subagent\]: it keeps state \(probe_count\) that GuardChainState lacks"
    ):
        GuardChainMiddleware([probe(state_schema=ProbeState)], role=ROLE)
