"""Messages the harness itself puts into a conversation: nudges, bounces and a halted agent's hand-back.

Contract:
- every message the harness injects carries the reserved name ``HARNESS_MESSAGE_NAME``;
  ``is_harness_message`` tells them from the user's and the model's own messages;
- a harness message is never a user-turn boundary: ``turn_key`` identifies the current user turn by its
  last real user message, so per-turn counters reset only when the user speaks;
- ``hand_back`` is what a sub-agent stopped by a guard returns to the orchestrator: its last findings
  object if it wrote one, otherwise a findings object that says it was halted and quotes the head of its
  last notes, always with a gap that names the guard;
- ``stop_agent`` is the final message of any agent a guard stops. For a sub-agent it is the hand-back
  (and the ledger remembers which guard stopped that ``task``); for the orchestrator it is a short notice,
  and the run is halted with the given ``Halt`` so the lifecycle salvages a report;
- guards act inside the model call (``wrap_model_call``), not as graph nodes of their own, so they add
  no graph steps: ``respond`` builds what such a guard returns, with the messages it adds before the
  model's reply and the update of its private state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.types import Command

from .names import Role
from .protocol.sender import current_sender
from .handover.contract import Findings, parse_findings
from .run.ledger import Halt, current_ledger

HARNESS_MESSAGE_NAME = "dra_harness"
_NOTES_CHARS = 1500

HALTED_BY = {
    "budget": "the run's budget",
    "loop_guard": "the loop guard (it kept repeating one identical tool call)",
    "runaway_guard": "the runaway-output guard (its output degenerated twice)",
    "step_limit": "the step limit",
    "user": "the user's request to stop and report",
}


def harness_message(text: str) -> HumanMessage:
    """A message from the harness to the model, in the user's seat but never a user turn."""
    return HumanMessage(content=text, name=HARNESS_MESSAGE_NAME)


def is_harness_message(message: BaseMessage) -> bool:
    return getattr(message, "name", None) == HARNESS_MESSAGE_NAME


def is_user_turn(message: BaseMessage) -> bool:
    """True for a message the user wrote: a human message the harness did not inject."""
    return isinstance(message, HumanMessage) and not is_harness_message(message)


def turn_key(messages: Sequence[AnyMessage]) -> str:
    """Identifies the current user turn; unchanged by harness messages, so they never start a turn."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if is_user_turn(message):
            return message.id or f"index-{index}"
    return ""


def latest_user_text(messages: Sequence[AnyMessage]) -> str:
    for message in reversed(messages):
        if is_user_turn(message):
            return message.text
    return ""


def hand_back(messages: Sequence[AnyMessage], *, halted_by: str) -> AIMessage:
    """The final message of a sub-agent a guard stopped: what it found, marked as halted."""
    why = HALTED_BY[halted_by]
    findings = _last_findings(messages)
    if findings is None:
        summary = f"Halted by {why} before this unit returned findings."
        notes = _last_notes(messages)
        if notes:
            summary += f" Its last notes: {notes}"
        findings = Findings(summary=summary)
    gap = f"This unit was halted by {why}; what it had not yet gathered is missing."
    findings = findings.model_copy(update={"gaps": [*findings.gaps, gap]})
    return AIMessage(content=findings.to_json(), name=HARNESS_MESSAGE_NAME)


def respond(
    messages: Sequence[BaseMessage], *, model_response: ModelResponse | None = None, update: dict[str, Any] | None = None
) -> ModelResponse | ExtendedModelResponse:
    """A guard's answer to a model call: ``messages`` persisted before the model's own result, if any,
    plus an update of the guard's private state."""
    result = [*messages, *(model_response.result if model_response else [])]
    response = ModelResponse(result=result, structured_response=model_response.structured_response if model_response else None)
    if not update:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=update))


def stop_agent(role: str, messages: Sequence[AnyMessage], *, halted_by: str, halt: Halt) -> AIMessage:
    """The last message of an agent a guard stopped; halts the run when that agent is the orchestrator."""
    ledger = current_ledger()
    if role == Role.ORCHESTRATOR:
        ledger.halt_run(halt)
        return AIMessage(content=f"(Stopped by {HALTED_BY[halted_by]}: {halt.detail.rstrip('.')}.)", name=HARNESS_MESSAGE_NAME)
    task_id = current_sender.get().task_id
    if task_id:
        ledger.halted_tasks.setdefault(task_id, halted_by)
    return hand_back(messages, halted_by=halted_by)


def _last_notes(messages: Sequence[AnyMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not is_harness_message(message) and message.text.strip():
            text = message.text.strip()
            return text if len(text) <= _NOTES_CHARS else text[:_NOTES_CHARS].rstrip() + " …"
    return ""


def _last_findings(messages: Sequence[AnyMessage]) -> Findings | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.text:
            findings = parse_findings(message.text)
            if findings is not None:
                return findings
    return None
