"""Drive guard middleware in-process: one model call the way the agent's model node applies it, and the
events a guard module sends (outside a graph there is no stream to send them to)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel


async def call_model_through(
    guard: AgentMiddleware, state: dict[str, Any], reply: str = "working"
) -> tuple[list[BaseMessage], list[BaseMessage] | None]:
    """One model call through ``guard`` applied to ``state``: returns what it added to the conversation and
    what the model was sent (None when the guard stopped the call)."""
    sent: list[list[BaseMessage]] = []

    async def model(request: ModelRequest) -> ModelResponse:
        sent.append(request.messages)
        return ModelResponse(result=[AIMessage(reply)])

    result = await guard.awrap_model_call(ModelRequest(model=None, messages=state["messages"], state=state), model)
    response = result.model_response if isinstance(result, ExtendedModelResponse) else result
    if isinstance(result, ExtendedModelResponse) and result.command is not None:
        state.update(result.command.update)
    state["messages"] = [*state["messages"], *response.result]
    return response.result, sent[0] if sent else None


def capture_events(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[dict[str, Any]]:
    """Collect the events ``module`` emits, as ``{"type": ..., **fields}`` dicts, for this test."""
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(module, "emit", lambda event: sent.append(event_fields(event)))
    return sent


def event_fields(event: BaseModel) -> dict[str, Any]:
    """An emitted event model as the JSON dict of its ``type`` (a status': and ``state``) and of the fields its
    sender set, the way the sender wrote them (no defaults, no ``role`` unless it named one)."""
    named = {"type", "state"} & set(type(event).model_fields)
    return event.model_dump(mode="json", include=named | event.model_fields_set)
