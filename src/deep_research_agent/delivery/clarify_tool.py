"""``request_clarification``: ask the user 1–3 questions, then end the turn.

Contract: the tool emits a ``clarification`` event, echoes the questions into its own result (so they stay
in context even if history is compacted) and marks the run as waiting; ``ClarificationMiddleware`` then
ends the turn before the next model call, whether or not the model would have stopped, and the run ends
``done/awaiting_clarification``. Once research has started in the run, the tool is refused and the model
is told to finish instead.
"""

from __future__ import annotations

from langchain_core.tools import tool
from pydantic import BaseModel, Field

from ..protocol.events import emit
from ..run.ledger import current_ledger

REQUEST_CLARIFICATION = "request_clarification"


class ClarificationArgs(BaseModel):
    questions: list[str] = Field(min_length=1, max_length=3, description="1 to 3 short, specific questions.")


@tool(REQUEST_CLARIFICATION, args_schema=ClarificationArgs)
def request_clarification(questions: list[str]) -> str:
    """Ask the user 1-3 clarifying questions when the request is ambiguous. Only before any research starts."""
    ledger = current_ledger()
    if ledger.research_started:
        return (
            "ERROR [permanent] request_clarification: research has already started in this run, so the user "
            "cannot be asked now. Finish the research on stated assumptions and deliver with submit_report."
        )
    cleaned = [q.strip() for q in questions if q.strip()]
    ledger.clarification_requested = True
    emit("clarification", questions=cleaned)
    listed = "\n".join(f"{i}. {q}" for i, q in enumerate(cleaned, 1))
    return f"Asked the user and waiting for the answers:\n{listed}"
