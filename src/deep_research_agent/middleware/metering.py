"""Usage metering: every model and tool call of one agent, added to the run ledger.

Contract: one instance per agent graph (its ``name`` carries the role, so stacks never collide).
Each model call adds its tokens and its cost at the tier's prices to the role's counters and to the
counters of the ``task`` call that started the agent; each tool call adds one tool call. The
orchestrator turns the ledger into the ``usage`` event at the end of the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..config import ModelSpec
from ..events import current_sender
from ..ledger import RoleCounters, current_ledger


class UsageMeteringMiddleware(AgentMiddleware):
    """Counts model calls, tokens, dollars and tool calls of one role into the run ledger."""

    def __init__(self, *, role: str, spec: ModelSpec) -> None:
        super().__init__()
        self.role = role
        self.spec = spec

    @property
    def name(self) -> str:
        return f"UsageMetering[{self.role}]"

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        response = await handler(request)
        ledger = current_ledger()
        for counters in self._counters(ledger):
            counters.model_calls += 1
        for message in _messages_of(response):
            if isinstance(message, AIMessage) and message.usage_metadata:
                usage = message.usage_metadata
                cached = (usage.get("input_token_details") or {}).get("cache_read", 0) or 0
                cost = self.spec.cost_usd(usage.get("input_tokens", 0), usage.get("output_tokens", 0), cached)
                for counters in self._counters(ledger):
                    counters.input_tokens += usage.get("input_tokens", 0)
                    counters.output_tokens += usage.get("output_tokens", 0)
                    counters.cached_tokens += cached
                    counters.cost_usd += cost
        return response

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
    ) -> ToolMessage | Command:
        for counters in self._counters(current_ledger()):
            counters.tool_calls += 1
        return await handler(request)

    def _counters(self, ledger: Any) -> list[RoleCounters]:
        counters = [ledger.role(self.role)]
        task_id = current_sender.get().task_id
        if task_id:
            counters.append(ledger.task(task_id))
        return counters


def _messages_of(response: Any) -> list[Any]:
    if isinstance(response, AIMessage):
        return [response]
    inner = getattr(response, "model_response", response)
    return list(getattr(inner, "result", []) or [])
