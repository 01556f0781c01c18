"""One middleware layer that runs an agent's guards in order, first = outermost.

Contract: ``GuardChainMiddleware(guards)`` behaves like listing the guards as separate middleware in
the same order: each guard's ``awrap_model_call`` and ``awrap_tool_call`` wraps the next one's, a guard
may call its handler zero or more times, and the state updates the guards return (their private
counters) are merged into the model node's update; when a guard calls its handler again, only the last
call's inner updates count, as in langchain. The chain's state schema is the union of the guards'.
The chain forwards nothing else, so it refuses at construction, with a ``TypeError`` naming the guard and
what would be lost, a guard that has any other hook (``before_model``, ``after_agent``, the sync
``wrap_*`` ...), tools of its own, or state keys ``GuardChainState`` lacks: listed as its own middleware,
such a guard works; in the chain it would silently lose them.

Why not list them separately: langchain wraps every middleware's ``awrap_model_call`` and
``awrap_tool_call`` in a LangSmith span that, traced or not, costs a new task and two thread-pool hops
per call. Seven guards as seven layers measurably slowed ten concurrent runs sharing one event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn

from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..delivery.completion import CompletionState
from ..domain.per_role import PerRoleMiddleware
from ..handover.gate import FindingsGateState
from ..handover.script import ScriptGateState
from .loop import LoopGuardState
from .runaway import RunawayState
from .step_limit import StepLimitState

ModelHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]
ToolHandler = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]

# Every hook langchain runs for a middleware except the two the chain forwards.
_DROPPED_HOOKS = (
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
)


class GuardChainState(
    StepLimitState, LoopGuardState, RunawayState, FindingsGateState, ScriptGateState, CompletionState
):
    """Every guard's private counters (the answer gates' too: an agent without a gate never sets them)."""


class GuardChainMiddleware(PerRoleMiddleware):
    """Runs several single-concern guards as one middleware layer, in order."""

    label = "Guards"
    state_schema = GuardChainState

    def __init__(self, guards: Sequence[AgentMiddleware], *, role: str) -> None:
        super().__init__(role=role)
        for guard in guards:
            _refuse_what_the_chain_would_drop(guard)
        self.model_guards = [g for g in guards if type(g).awrap_model_call is not AgentMiddleware.awrap_model_call]
        self.tool_guards = [g for g in guards if type(g).awrap_tool_call is not AgentMiddleware.awrap_tool_call]

    async def awrap_model_call(
        self, request: ModelRequest, handler: ModelHandler
    ) -> ModelResponse | ExtendedModelResponse:
        response, updates = await self._model_call(0, request, handler)
        if not updates:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(update=updates))

    async def awrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> ToolMessage | Command:
        return await self._tool_call(0, request, handler)

    async def _model_call(
        self, index: int, request: ModelRequest, handler: ModelHandler
    ) -> tuple[ModelResponse, dict[str, Any]]:
        if index == len(self.model_guards):
            return await handler(request), {}
        inner_updates: dict[str, Any] = {}

        async def inner(req: ModelRequest) -> ModelResponse:
            response, updates = await self._model_call(index + 1, req, handler)
            inner_updates.clear()
            inner_updates.update(updates)
            return response

        result = await self.model_guards[index].awrap_model_call(request, inner)
        if isinstance(result, ExtendedModelResponse):
            own = dict(result.command.update or {}) if result.command is not None else {}
            return result.model_response, {**inner_updates, **own}
        if isinstance(result, AIMessage):
            return ModelResponse(result=[result]), dict(inner_updates)
        return result, dict(inner_updates)

    async def _tool_call(self, index: int, request: ToolCallRequest, handler: ToolHandler) -> ToolMessage | Command:
        if index == len(self.tool_guards):
            return await handler(request)
        return await self.tool_guards[index].awrap_tool_call(
            request, lambda req: self._tool_call(index + 1, req, handler)
        )


def _refuse_what_the_chain_would_drop(guard: AgentMiddleware) -> None:
    on_its_own = "list it as the agent's own middleware instead"
    hooks = [hook for hook in _DROPPED_HOOKS if getattr(type(guard), hook) is not getattr(AgentMiddleware, hook)]
    if hooks:
        _refuse(guard, f"implements {', '.join(hooks)}, which the chain does not run", on_its_own)
    if tools := getattr(guard, "tools", ()):
        _refuse(guard, f"registers tools ({', '.join(t.name for t in tools)}), which the chain does not", on_its_own)
    if keys := _state_keys(guard.state_schema) - _state_keys(GuardChainState):
        _refuse(
            guard,
            f"keeps state ({', '.join(sorted(keys))}) that GuardChainState lacks",
            "add its state schema to GuardChainState's bases",
        )


def _refuse(guard: AgentMiddleware, what: str, fix: str) -> NoReturn:
    raise TypeError(f"GuardChainMiddleware cannot run {guard.name}: it {what}; {fix}.")


def _state_keys(schema: type) -> frozenset[str]:
    return schema.__required_keys__ | schema.__optional_keys__
