"""A research unit's first model call ends with a line naming the search that starts its research.

Contract (research sub-agents only, inside the guard chain and the findings gate, so the gate judges the
unit's own conversation):
- on a model call whose messages hold no tool call yet, whose last message is not already a harness
  message (the gate's bounce names its own call), and whose tools include a search (``web_search``, else
  ``corpus_search``), the request gets one harness message after the brief: "Start with a `web_search`
  call."; it is sent for that call only, never persisted;
- a unit offered no search (MCP tools only) gets nothing.

Why a message after the brief and not a sentence in the system prompt: small models follow the last message.
Measured on Qwen2.5-Coder-0.5B through ``bench/local_model.py``'s recorded requests, the unit's first reply
was a search in 0 of 4 samples as it was, in 1 of 4 with a "First step" section in the system prompt, and
in 4 of 4 with this line after the brief.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from ..domain.conversation import harness_message, is_harness_message
from ..tools.arguments import tool_schema
from .gate import SEARCH_TOOLS

FIRST_STEP = "Start with a `{name}` call."


class FirstSearchMiddleware(AgentMiddleware):
    """Tells a research unit, on its first model call, which search starts its research."""

    name = "FirstSearch"

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        search = _search_offered(request)
        if search is None or _started(request):
            return await handler(request)
        hint = harness_message(FIRST_STEP.format(name=search))
        return await handler(request.override(messages=[*request.messages, hint]))


def _search_offered(request: ModelRequest) -> str | None:
    offered = {tool_schema(tool)[0] for tool in request.tools}
    return next((name for name in SEARCH_TOOLS if name in offered), None)


def _started(request: ModelRequest) -> bool:
    """True once the unit has called a tool, or when the harness already spoke last."""
    if request.messages and is_harness_message(request.messages[-1]):
        return True
    return any(isinstance(m, AIMessage) and m.tool_calls for m in request.messages)
