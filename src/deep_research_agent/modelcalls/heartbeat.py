"""The model-call heartbeat of one agent: who is thinking, on which model, about what.

``ModelCallHeartbeatMiddleware`` contract: one ``status: model_call`` right before every model step of
the agent (not per retry), with the role, model, step number (the agent's own model calls so far, plus one:
a sub-agent counts its task's calls), the unit it works on (a sub-agent's brief, the orchestrator's user
request) and, after tool results, which tools returned and how many characters.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from ..domain.conversation import latest_user_text
from ..domain.per_role import PerRoleMiddleware
from ..domain.usage import RoleUsage
from ..protocol.events import ModelCallStatus, emit
from ..protocol.sender import current_sender
from ..run import Run, run_hook

_UNIT_CHARS = 200


class ModelCallHeartbeatMiddleware(PerRoleMiddleware):
    """Announces each model step of one agent: who is thinking, on which model, about what."""

    label = "ModelCallHeartbeat"

    def __init__(self, *, role: str, model: str) -> None:
        super().__init__(role=role)
        self.model = model

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> Any:
        sender = current_sender.get()
        unit = sender.unit or latest_user_text(request.messages)
        after = _tool_results_since_last_reply(request.messages)
        emit(
            ModelCallStatus(
                model=self.model,
                step=_own_usage(run, self.role).model_calls + 1,
                unit=unit[:_UNIT_CHARS] if unit else None,
                after=[m.name or "tool" for m in after] or None,
                after_chars=sum(len(m.text) for m in after) if after else None,
            )
        )
        return await handler(request)


def _own_usage(run: Run, role: str) -> RoleUsage:
    """A sub-agent's counters are its task's; the orchestrator's are its role's."""
    task_id = current_sender.get().task_id
    return run.usage.of_task(task_id) if task_id else run.usage.of_role(role)


def _tool_results_since_last_reply(messages: list[AnyMessage]) -> list[ToolMessage]:
    results: list[ToolMessage] = []
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            break
        if isinstance(message, ToolMessage):
            results.append(message)
    return results[::-1]
