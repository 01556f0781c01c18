"""Clarifying questions: the ``request_clarification`` tool and the prose fallback.

Contract (orchestrator only):
- gives the orchestrator ``request_clarification``;
- once the tool has asked, ``TurnEndMiddleware`` ends the turn before the next model call, with no
  reliance on the model stopping;
- a model that asks its questions in prose instead (a final message with no tool call, before any
  research) still produces the same ``clarification`` card, and the run waits for the answers.
"""

from __future__ import annotations

import re
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from ..protocol.events import emit
from ..run.ledger import current_ledger
from .clarify_tool import request_clarification
from ..lifecycle.containment import contain_hook_failures

_MAX_QUESTIONS = 3
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*")
_CLARIFY_CUE = re.compile(
    r"(?i)\b(clarif\w*|before I (?:start|begin|research)|could you (?:specify|tell me|confirm)|"
    r"do you (?:mean|want)|which (?:one|of)|what (?:timeframe|scope|period))\b"
)


class ClarificationMiddleware(AgentMiddleware):
    """Gives the orchestrator ``request_clarification`` and turns prose questions into the same card."""

    tools = [request_clarification]

    @hook_config(can_jump_to=["end"])
    @contain_hook_failures
    async def aafter_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        last = state["messages"][-1] if state.get("messages") else None
        if not isinstance(last, AIMessage) or last.tool_calls:
            return None
        ledger = current_ledger()
        if ledger.research_started or ledger.report_delivered or ledger.clarification_requested:
            return None
        questions = prose_questions(last.text)
        if questions:
            ledger.clarification_requested = True
            emit("clarification", questions=questions)
        return None


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
