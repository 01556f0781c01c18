"""Specification of how the run lifecycle contains unexpected exceptions: an end status, never a traceback."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from deep_research_agent.config import ResearchConfig
from deep_research_agent.middleware.lifecycle import RunLifecycleMiddleware

pytestmark = pytest.mark.anyio

SECRET_DETAIL = "internal state at 0xdeadbeef"


def lifecycle() -> RunLifecycleMiddleware:
    return RunLifecycleMiddleware(ResearchConfig.resolve({"configurable": {}}, environ={}))


async def broken(request: object) -> ModelResponse:
    raise KeyError(SECRET_DETAIL)


async def test_an_unexpected_exception_in_a_model_call_ends_the_run_with_internal_error():
    request = ModelRequest(model=None, messages=[HumanMessage("question")], state={})

    result = await lifecycle().awrap_model_call(request, broken)

    assert isinstance(result, ExtendedModelResponse)
    assert result.command.update["run_error"]["reason"] == "internal_error"
    shown = result.model_response.result[0].text + result.command.update["run_error"]["detail"]
    assert SECRET_DETAIL not in shown and "KeyError" not in shown and "Traceback" not in shown


async def test_an_unexpected_exception_in_a_tool_call_ends_the_run_before_the_next_model_call():
    middleware = lifecycle()
    request = ToolCallRequest(tool_call={"name": "submit_report", "args": {}, "id": "call-1"}, tool=None, state={}, runtime=None)

    result = await middleware.awrap_tool_call(request, broken)

    assert isinstance(result, Command) and result.update["run_error"]["reason"] == "internal_error"
    [message] = result.update["messages"]
    assert isinstance(message, ToolMessage) and message.status == "error" and SECRET_DETAIL not in message.text

    called = []

    async def model(request: ModelRequest) -> ModelResponse:
        called.append(request)
        raise AssertionError("the model must not be asked again")

    after = await middleware.awrap_model_call(
        ModelRequest(model=None, messages=[HumanMessage("question")], state={"run_error": result.update["run_error"]}), model
    )
    assert called == [] and not after.result[0].tool_calls
