"""The conversation as the harness sees it: its own messages, the user's turns, and a guard's answer.

Contract:
- only the user's words are human messages in a thread's state: a harness message to the model (a nudge,
  a bounce, the compaction summary, the task view) is a ``harness_message`` given only to the model call
  that needs it (a guard re-asks within the same model step; the summary is added to each request), never
  persisted, since a generic client (deep-agents-ui) draws every persisted human message as the user's;
- what the harness persists in the agent's seat (a halted agent's last words) is a ``harness_note``. Both
  carry the reserved name ``HARNESS_MESSAGE_NAME`` (``names.py``), the marker
  ``additional_kwargs.dra_harness`` and an id starting with ``HIDDEN_ID_PREFIX``, so a frontend can hide it
  (agent-chat-ui does by the id); providers get only the name. ``is_harness_message`` tells them from the user's and the model's own;
- a turn's deliverable, when the harness (not the model) writes it as the turn's last AI message, is a
  ``deliverable_message``: shown to the user like any answer, named so it is never taken for a model reply;
- a *real* user message is a ``HumanMessage`` the harness did not inject; the current turn starts at
  the last one, so harness messages never open a turn. ``turn_key`` names the turn by that message's
  id; compaction keeps the request message, id included, verbatim, so compacting never starts a turn;
- guards act inside the model call (``wrap_model_call``), not as graph nodes of their own, so they add
  no graph steps: ``respond`` builds what such a guard returns, the messages it adds before the model's
  reply and the update of its private state.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.types import Command

from .names import HARNESS_MESSAGE_NAME

# The turn's deliverable (a delivered report, the clarifying questions, a salvaged report) as an AI
# message the harness wrote for the user: shown by every client, but no reply of the model's.
DELIVERABLE_MESSAGE_NAME = "dra_deliverable"


# agent-chat-ui hides messages whose id starts with this; other frontends filter on the name or the marker.
HIDDEN_ID_PREFIX = "do-not-render-"
HARNESS_MARKER = {HARNESS_MESSAGE_NAME: True}
_CONTENT_KEY = "dra_content"


def harness_message(text: str, *, carries_content: bool = False) -> HumanMessage:
    """A message from the harness to the model, in the user's seat for one model call: never persisted.
    ``carries_content`` marks one that restates the conversation's own content (the compaction summary)
    rather than instructing the model, so a sub-agent may repeat its words in an answer."""
    fields = _harness_fields()
    if carries_content:
        fields["additional_kwargs"][_CONTENT_KEY] = True
    return HumanMessage(content=text, **fields)


def harness_note(text: str) -> AIMessage:
    """A note the harness writes in the model's seat (a stopped agent's last words), never the model's reply."""
    return AIMessage(content=text, **_harness_fields())


def _harness_fields() -> dict[str, Any]:
    return {
        "name": HARNESS_MESSAGE_NAME,
        "id": f"{HIDDEN_ID_PREFIX}{uuid.uuid4().hex}",
        "additional_kwargs": dict(HARNESS_MARKER),
    }


def deliverable_message(text: str) -> AIMessage:
    """The turn's last AI message: what the user should read."""
    return AIMessage(content=text, name=DELIVERABLE_MESSAGE_NAME)


def is_harness_message(message: BaseMessage) -> bool:
    return getattr(message, "name", None) == HARNESS_MESSAGE_NAME


def is_harness_instruction(message: BaseMessage) -> bool:
    """A harness message that instructs the model (a nudge, a bounce, a guard's warning), not one carrying content."""
    return is_harness_message(message) and not message.additional_kwargs.get(_CONTENT_KEY)


def is_user_turn(message: BaseMessage) -> bool:
    """True for a message the user wrote: a human message the harness did not inject."""
    return isinstance(message, HumanMessage) and not is_harness_message(message)


def last_user_index(messages: Sequence[AnyMessage]) -> int | None:
    """Index of the last real user message, or None when the transcript has none."""
    for index in range(len(messages) - 1, -1, -1):
        if is_user_turn(messages[index]):
            return index
    return None


def turn_key(messages: Sequence[AnyMessage]) -> str:
    """Identifies the current user turn; unchanged by harness messages, so they never start a turn."""
    index = last_user_index(messages)
    if index is None:
        return ""
    return messages[index].id or f"index-{index}"


def latest_user_text(messages: Sequence[AnyMessage]) -> str:
    index = last_user_index(messages)
    return "" if index is None else messages[index].text


def turn_messages(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The current turn: the last real user message and everything after it (everything, without one)."""
    index = last_user_index(messages)
    return list(messages[index or 0 :])


def previous_turns(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Everything before the current turn: earlier turns and anything compaction left in front."""
    index = last_user_index(messages)
    return [] if index is None else list(messages[:index])


def is_fresh_turn(messages: Sequence[AnyMessage]) -> bool:
    """True before the first model step of a turn: a real user message that no AI message has followed yet."""
    index = last_user_index(messages)
    if index is None:
        return False
    return not any(isinstance(message, AIMessage) for message in messages[index + 1 :])


def respond(
    messages: Sequence[BaseMessage],
    *,
    model_response: ModelResponse | None = None,
    update: dict[str, Any] | None = None,
) -> ModelResponse | ExtendedModelResponse:
    """A guard's answer to a model call: ``messages`` persisted before the model's own result, if any,
    plus an update of the guard's private state."""
    result = [*messages, *(model_response.result if model_response else [])]
    response = ModelResponse(
        result=result, structured_response=model_response.structured_response if model_response else None
    )
    if not update:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=update))
