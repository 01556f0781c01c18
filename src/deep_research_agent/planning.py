"""The orchestrator's plan as todos: langchain's ``TodoListMiddleware`` (``write_todos`` and its prompt),
with its one check moved from an ``after_model`` hook into the model call.

Why not the library's as it is: its ``after_model`` hook, which refuses parallel ``write_todos`` calls, is
a graph step on every model turn of the orchestrator, and a client's recursion limit counts those steps.
Contract: a reply with more than one ``write_todos`` call gets an error result for each of them (the
library's own message), so none runs and the model writes its plan again with one call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, TodoListMiddleware
from langchain_core.messages import AIMessage, ToolMessage

from .domain.names import ToolName

PARALLEL_TODOS_ERROR = (
    "Error: The `write_todos` tool should never be called multiple times in parallel. Please call it only once "
    "per model invocation to update the todo list."
)


class PlanningMiddleware(TodoListMiddleware):
    """``write_todos`` for the orchestrator, without a graph step per model turn."""

    after_model = AgentMiddleware.after_model
    aafter_model = AgentMiddleware.aafter_model

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        response = await super().awrap_model_call(request, handler)
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        reply = response.result[-1] if response.result else None
        if not isinstance(reply, AIMessage):
            return response
        calls = [call for call in reply.tool_calls if call["name"] == ToolName.WRITE_TODOS]
        if len(calls) <= 1:
            return response
        refused = [ToolMessage(PARALLEL_TODOS_ERROR, tool_call_id=call["id"], status="error") for call in calls]
        return ModelResponse(result=[*response.result, *refused], structured_response=response.structured_response)
