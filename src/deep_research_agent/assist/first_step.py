"""The assist's first-step line: a research unit's first model call ends with the call that starts its research.

Contract (research sub-agents with the assist on; inside the guard chain and the findings gate, so the gate
judges the unit's own conversation):
- on a model call whose messages hold no tool call yet and whose last message is not already a harness
  message (the gate's bounce names its own call), the request gets one harness message after the brief:
  "Start with a `query` call." naming the first call of the order the research sub-agent's prompt gives
  (``tools/start.py``: the knowledge base, the corpus or MCP server the brief names, the corpora, the web),
  among the tools the run offers this unit; it is sent for that call only, never persisted;
- a unit whose offered tools hold none of them (MCP tools only, its brief naming no server) gets nothing.

Why a message after the brief and not a sentence in the system prompt: small models follow the last message.
Measured on Qwen2.5-Coder-0.5B through ``bench/local_model.py``'s recorded requests, the unit's first reply
was a search in 0 of 4 samples as it was, in 1 of 4 with a "First step" section in the system prompt, and
in 4 of 4 with this line after the brief.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from ..domain.conversation import harness_message, is_harness_message, latest_user_text
from ..domain.knobs import KnobError
from ..domain.per_role import PerRoleMiddleware
from ..tools.arguments import tool_schema
from ..tools.start import ResearchSources, first_tool

FIRST_STEP = "Start with a `{name}` call."


class FirstStepMiddleware(PerRoleMiddleware):
    """Tells a research unit, on its first model call, which call starts its research."""

    label = "FirstStep"

    def __init__(self, *, role: str, sources: ResearchSources = ResearchSources()) -> None:
        """``sources``: the run's corpora and MCP servers, which a brief may name."""
        if not isinstance(sources, ResearchSources):
            raise KnobError(type(self).__name__, "sources", sources, "a ResearchSources")
        super().__init__(role=role)
        self.sources = sources

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        if _started(request):
            return await handler(request)
        offered = {tool_schema(tool)[0] for tool in request.tools}
        name = first_tool(offered, latest_user_text(request.messages), self.sources)
        if name is None:
            return await handler(request)
        hint = harness_message(FIRST_STEP.format(name=name))
        return await handler(request.override(messages=[*request.messages, hint]))


def _started(request: ModelRequest) -> bool:
    """True once the unit has called a tool, or when the harness already spoke last."""
    if request.messages and is_harness_message(request.messages[-1]):
        return True
    return any(isinstance(m, AIMessage) and m.tool_calls for m in request.messages)
