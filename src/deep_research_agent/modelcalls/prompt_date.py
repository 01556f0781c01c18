"""The date in an agent's system prompt is the date of the model call, not of the graph's compilation.

Contract (one instance per agent, in its guard chain): every ``{today}`` (``prompts.TODAY``) in the
request's system prompt becomes ``prompts.today()`` before the call leaves; a request whose system prompt
holds none, or has no system prompt, passes unchanged. It reads the prompt as create_agent builds it from a
role's string prompt (a prompt already split into content blocks is passed on as it is), which is why it
sits outside every middleware that does that split (deepagents' sub-agent and todo prompts, prompt caching).

Why here: a compiled graph serves every run with its settings for as long as the server lives, so a date
filled in at compile time goes stale at midnight; a per-call fill costs a string replace.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import ModelRequest, ModelResponse

from .. import prompts
from ..domain.per_role import PerRoleMiddleware


class PromptDateMiddleware(PerRoleMiddleware):
    """Fills the system prompt's ``{today}`` with the date of each model call."""

    label = "PromptDate"

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        system = request.system_message
        if system is None or not isinstance(system.content, str) or prompts.TODAY not in system.content:
            return await handler(request)
        dated = system.model_copy(update={"content": system.content.replace(prompts.TODAY, prompts.today())})
        return await handler(request.override(system_message=dated))
