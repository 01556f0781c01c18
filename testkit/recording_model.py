"""An in-process chat model that plays scripted replies and records every call, for middleware tests.

langchain_core's fake chat models cannot ``bind_tools``; this one can (it records the bound tool names),
so it can stand behind ``create_agent`` as well as behind a middleware's side calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from pydantic import Field

Reply = str | AIMessage | Exception | Callable[[list[BaseMessage]], AIMessage]


@dataclass
class RecordedCall:
    messages: list[BaseMessage]
    kwargs: dict[str, Any]
    tags: list[str] = field(default_factory=list)

    @property
    def system(self) -> str:
        return "\n".join(m.text for m in self.messages if m.type == "system")

    @property
    def chars(self) -> int:
        """Characters sent in this call: every message's text plus the bound tool names."""
        return sum(len(m.text) for m in self.messages) + sum(len(name) for name in self.kwargs.get("tool_names", []))


class RecordingChatModel(BaseChatModel):
    """Answers call *n* with ``replies[n]`` (the last reply repeats); an Exception reply is raised."""

    replies: list[Any] = Field(default_factory=list)
    calls: list[RecordedCall] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def bind_tools(self, tools: Sequence[BaseTool | dict[str, Any] | Any], **kwargs: Any) -> Any:
        return self.bind(tool_names=[t.name if isinstance(t, BaseTool) else str(t) for t in tools])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(RecordedCall(list(messages), dict(kwargs), list(run_manager.tags if run_manager else [])))
        if not self.replies:
            raise AssertionError("RecordingChatModel called without a scripted reply")
        reply = self.replies[min(len(self.calls), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(list(messages))
        message = AIMessage(content=reply) if isinstance(reply, str) else reply.model_copy()
        return ChatResult(generations=[ChatGeneration(message=message)])


def factory(model: RecordingChatModel) -> Callable[..., RecordingChatModel]:
    """A ``model_factory`` that hands out ``model`` for every slot and role."""
    return lambda slot, role: model
