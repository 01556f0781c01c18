"""Prompt caching: Anthropic-style ``cache_control`` breakpoints on every model request.

Contract (one instance per agent graph; innermost, so no other middleware sees the marks):
- the system prompt and the two newest cacheable messages get ``cache_control: {"type": "ephemeral"}``
  on their last text part. Providers that cache through such parts (OpenRouter in front of Anthropic,
  Gemini and others) reuse the prefix; others ignore the key;
- cacheable means a user message, or an assistant message with text: langchain-openai forwards those
  content parts as they are, while it strips unknown keys from tool results;
- only the outgoing request changes; the agent's state keeps plain messages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ..domain.per_role import PerRoleMiddleware

CACHE_CONTROL = {"type": "ephemeral"}
CACHED_MESSAGES = 2


def with_breakpoint(message: BaseMessage) -> BaseMessage | None:
    """A copy of ``message`` whose last text part carries ``cache_control``, or None if it has no text."""
    content = message.content
    if isinstance(content, str):
        if not content:
            return None
        return message.model_copy(
            update={"content": [{"type": "text", "text": content, "cache_control": CACHE_CONTROL}]}
        )
    parts = list(content)
    for index in range(len(parts) - 1, -1, -1):
        part = parts[index]
        if isinstance(part, dict) and part.get("type") == "text" and part.get("text"):
            parts[index] = {**part, "cache_control": CACHE_CONTROL}
            return message.model_copy(update={"content": parts})
    return None


def _cacheable(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) or (isinstance(message, AIMessage) and bool(message.text))


class PromptCachingMiddleware(PerRoleMiddleware):
    """Adds cache breakpoints to the system prompt and the newest cacheable messages of each request."""

    label = "PromptCaching"

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        messages = list(request.messages)
        marked = 0
        for index in range(len(messages) - 1, -1, -1):
            if marked == CACHED_MESSAGES:
                break
            if _cacheable(messages[index]) and (copy := with_breakpoint(messages[index])) is not None:
                messages[index] = copy
                marked += 1
        overrides: dict[str, Any] = {"messages": messages}
        if request.system_message is not None and (system := with_breakpoint(request.system_message)) is not None:
            overrides["system_message"] = system
        return await handler(request.override(**overrides))
