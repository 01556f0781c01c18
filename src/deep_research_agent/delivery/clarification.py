"""Clarifying questions: the ``request_clarification`` tool and the prose fallback.

Contract (orchestrator only):
- gives the orchestrator ``request_clarification(questions)`` (1 to 3): it emits a ``clarification``
  event, marks the run as waiting and answers with one short line (the questions are in its arguments
  and in the turn's last message, so a client never shows them three times); once research has started
  in the run, it is refused and the model is told to finish instead;
- once the tool has asked, ``TurnEndMiddleware`` (not this one) ends the turn at the next model call, with
  ``questions_text`` as the turn's last AI message: one lead sentence, then each question as its own
  paragraph opening with its number in bold (text, not an ordered-list marker, which some renderers
  hide), and the run ends ``done/awaiting_clarification``;
- a model that asks its questions in prose instead (a final message with no tool call, before any
  research) still produces the same ``clarification`` card, and the run waits for the answers.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from ..domain.errors import tool_error_text
from ..domain.names import ToolErrorClass, ToolName
from ..protocol.events import Clarification, emit
from ..run import Run, run_hook, run_tool

_MAX_QUESTIONS = 3
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*")
_CLARIFY_CUE = re.compile(
    r"(?i)\b(clarif\w*|before I (?:start|begin|research)|could you (?:specify|tell me|confirm)|"
    r"do you (?:mean|want)|which (?:one|of)|what (?:timeframe|scope|period))\b"
)


class ClarificationArgs(BaseModel):
    questions: list[str] = Field(min_length=1, max_length=3, description="1 to 3 short, specific questions.")


@tool(ToolName.REQUEST_CLARIFICATION, args_schema=ClarificationArgs)
@run_tool
def request_clarification(run: Run, questions: list[str]) -> str:
    """Ask the user 1-3 clarifying questions when the request is ambiguous. Only before any research starts."""
    control = run.control
    if control.research_started:
        return tool_error_text(
            ToolName.REQUEST_CLARIFICATION,
            ToolErrorClass.PERMANENT,
            "research has already started in this run, so the user cannot be asked now. "
            f"Finish the research on stated assumptions and deliver with {ToolName.SUBMIT_REPORT}.",
        )
    cleaned = [q.strip() for q in questions if q.strip()]
    control.mark_clarification_requested(cleaned)
    emit(Clarification(questions=cleaned))
    return f"Asked the user {len(cleaned)} question{'s' if len(cleaned) != 1 else ''}; waiting for the answers."


def questions_text(questions: list[str]) -> str:
    """The clarifying questions as the user reads them, numbered in any Markdown renderer."""
    lead = (
        "Before I start the research, a quick question:"
        if len(questions) == 1
        else ("Before I start the research, a few quick questions:")
    )
    return "\n\n".join([lead, *(f"**{number}.** {question}" for number, question in enumerate(questions, 1))])


class ClarificationMiddleware(AgentMiddleware):
    """Gives the orchestrator ``request_clarification`` and turns prose questions into the same card."""

    tools = [request_clarification]

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse:
        # Inside the model call rather than an after_model hook, which would be a graph step on every turn.
        response = await handler(request)
        reply = response.result[-1] if response.result else None
        if not isinstance(reply, AIMessage) or reply.tool_calls:
            return response
        control = run.control
        if control.research_started or control.report_delivered or control.clarification_requested:
            return response
        questions = prose_questions(reply.text)
        if questions:
            control.mark_clarification_requested(questions)
            emit(Clarification(questions=questions))
        return response


def prose_questions(text: str) -> list[str]:
    """The clarifying questions a message asks in prose, or [] when it is not asking for clarification.

    Listed questions win over questions in running text, which are usually the lead-in ("Could you clarify?").
    """
    listed, inline = [], []
    for raw in text.splitlines():
        is_listed = bool(_LIST_MARKER.match(raw))
        line = _LIST_MARKER.sub("", raw).strip().strip("*_ ")
        if line.endswith("?"):
            sentences = re.split(r"(?<=[.!?])\s+", line)
            question = next((s for s in reversed(sentences) if s.endswith("?")), line)
            (listed if is_listed else inline).append(question)
    candidates = listed or inline
    if not candidates:
        return []
    if len(candidates) >= 2 or _CLARIFY_CUE.search(text):
        return candidates[:_MAX_QUESTIONS]
    return []
