"""Usage metering of one agent, and of side calls outside any agent's loop.

``UsageMeteringMiddleware`` contract: one instance per agent graph (its ``name`` carries the role, so
stacks never collide). Each model call adds its tokens and its cost to the role's counters and to the
counters of the ``task`` call that started the agent; the cost is the provider's own figure where the
response reports one (OpenRouter's ``usage.cost``, non-streamed calls only), else the tier's prices. Each
tool call adds one tool call as it starts, so budgets see calls in flight. The orchestrator turns the
usage into the ``usage`` event at the end of the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.per_role import PerRoleMiddleware
from ..domain.usage import RoleUsage
from ..protocol.sender import current_sender
from ..run import Run, UsageMeter, run_hook
from ..settings import ModelSpec


class UsageMeteringMiddleware(PerRoleMiddleware):
    """Counts model calls, tokens, dollars and tool calls of one role into the run's usage meter."""

    label = "UsageMetering"

    def __init__(self, *, role: str, spec: ModelSpec) -> None:
        super().__init__(role=role)
        self.spec = spec

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> Any:
        response = await handler(request)
        record_model_call(run.usage, self.role, self.spec, _messages_of(response))
        return response

    @run_hook
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
        *,
        run: Run,
    ) -> ToolMessage | Command:
        run.usage.count_tool_call(self.role, current_sender.get().task_id)
        return await handler(request)


def record_model_call(meter: UsageMeter, role: str, spec: ModelSpec, messages: list[Any]) -> None:
    """Add one model call, its tokens and its cost to the role's and the current task's counters in ``meter``."""
    spent = RoleUsage()
    for message in messages:
        if isinstance(message, AIMessage) and message.usage_metadata:
            usage = message.usage_metadata
            cached = (usage.get("input_token_details") or {}).get("cache_read", 0) or 0
            reported = _reported_cost(message)
            cost = (
                reported
                if reported is not None
                else spec.cost_usd(usage.get("input_tokens", 0), usage.get("output_tokens", 0), cached)
            )
            spent.input_tokens += usage.get("input_tokens", 0)
            spent.output_tokens += usage.get("output_tokens", 0)
            spent.cached_tokens += cached
            spent.cost_usd += cost
            spent.reported_cost_usd += reported or 0.0
    meter.count_model_call(role, current_sender.get().task_id, spent)


def side_call_meter(role: str, spec: ModelSpec) -> Callable[[UsageMeter, AIMessage], None]:
    """A callback for model calls made outside the agent loop (triage, compaction), so budgets see them: the
    middleware that makes one passes its run's usage meter and the response."""
    return lambda usage, message: record_model_call(usage, role, spec, [message])


def _reported_cost(message: AIMessage) -> float | None:
    token_usage = message.response_metadata.get("token_usage") or {}
    cost = token_usage.get("cost") if isinstance(token_usage, dict) else None
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def _messages_of(response: Any) -> list[Any]:
    if isinstance(response, AIMessage):
        return [response]
    inner = getattr(response, "model_response", response)
    return list(getattr(inner, "result", []) or [])
