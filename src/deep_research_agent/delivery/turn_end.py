"""Turn end: once the turn's deliverable is out, the turn ends, and its last AI message is the deliverable.

Contract (orchestrator only; outside the guard chain, so the call it answers is neither metered nor
announced): after ``submit_report`` delivered a report or ``request_clarification`` asked its questions,
the next model call does not reach the model. It is answered with the turn's last AI message: the
delivered report (the checked text, the same as ``final_report``) or the questions as a numbered list.
A generic client that renders ``messages`` then shows the result as the answer; the tool-call rows stay.
The turn ends there because that message calls no tool, so delivery never depends on the model choosing
to stop, and no graph step is spent on a hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

from ..domain.conversation import deliverable_message
from ..evidence.store import EvidenceStore
from ..report.rendering import readable_report
from ..run import Run, RunControl, run_hook
from .clarification import questions_text


class TurnEndMiddleware(AgentMiddleware):
    """Answers the model call after a delivery with the deliverable itself, which ends the turn."""

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse:
        answer = deliverable(request.state, run.control, run.evidence)
        if answer is None:
            return await handler(request)
        return ModelResponse(result=[deliverable_message(answer)])


def deliverable(state: Mapping[str, Any], control: RunControl, evidence: EvidenceStore) -> str | None:
    """What the turn delivered, as the user should read it; None while nothing is delivered."""
    if control.report_delivered:
        return readable_report(state.get("final_report") or "", evidence)
    if control.clarification_requested and control.questions:
        return questions_text(control.questions)
    return None
