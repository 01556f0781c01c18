"""Completion: an orchestrator that stops talking after research, without delivering, is sent back to work.

Contract (orchestrator only; it runs inside the guard chain, so every re-ask is metered like any call):
- it acts on a reply with no tool call, once research has started, while no report was delivered, no
  clarification is pending and the run is not halted;
- it is the answer gate (``handover/answer_gate.AnswerGate``) whose bounces are nudges, sent without a
  ``status: revising``: the reply is classified (``classify_final_text``) and answered within the same
  model step with the matching nudge (``nudge_for``) as a harness message, and the model is asked again: the reply stays in the
  conversation, the nudge is given to the re-asks of this step only (only the user's words are human
  messages). Per user turn: a report written as prose and a raw JSON dump get one
  nudge each, any other text one, a short intent stub ("Now I will…") up to ``MAX_INTENT_NUDGES``;
- an intent stub once its nudges are spent halts the run as ``stalled_after_nudges``, so the lifecycle
  ends it with a salvaged partial report; any other reply whose nudge is spent ends the turn, and the
  lifecycle delivers what it can (the last report-like text, or a report salvaged from the findings).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, NotRequired

from langchain.agents.middleware import AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.channels import UntrackedValue

from ..domain.conversation import harness_message, respond
from ..domain.stops import StopCause
from ..handover.answer_gate import AnswerGate, final_answer
from ..run import Halt, Run, RunControl, run_hook
from .final_text import classify_final_text, nudge_for

MAX_INTENT_NUDGES = 4
NUDGE_LIMITS: dict[str, int] = {
    "report_like": 1,
    "json_dump": 1,
    "intent_stub": MAX_INTENT_NUDGES,
    "other": 1,
}


class CompletionState(AgentState):
    completion_turn: NotRequired[Annotated[str | None, PrivateStateAttr, UntrackedValue]]
    completion_bounces: NotRequired[Annotated[dict[str, int], PrivateStateAttr, UntrackedValue]]


class CompletionMiddleware(AnswerGate):
    """Nudges an orchestrator that stopped without delivering its report; halts one that only announces."""

    state_schema = CompletionState
    gate_key = "completion"
    per_turn = True

    def allowance(self, kind: str) -> int:
        return NUDGE_LIMITS[kind]

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        nudges = self.bounces_spent(request.state, request.messages)
        added: list[AnyMessage] = []
        replies: list[AnyMessage] = []
        update = None
        while True:
            response = await handler(request.override(messages=[*request.messages, *added]) if added else request)
            reply = _stopped_without_report(response, run.control)
            if reply is None:
                break
            kind = classify_final_text(reply.text)
            if not self.may_bounce(nudges, kind):
                if kind == "intent_stub":
                    detail = f"the orchestrator kept announcing a next step without taking it, after {MAX_INTENT_NUDGES} nudges"
                    run.control.halt_run(Halt(cause=StopCause.STALLED, detail=detail))
                break
            update = self.spend(nudges, kind, request.messages)
            nudges = self.spent_after(update)
            added += [*response.result, harness_message(nudge_for(kind))]
            replies += response.result
        return respond(replies, model_response=response, update=update)


def _stopped_without_report(response: ModelResponse, control: RunControl) -> AIMessage | None:
    """The reply when it would end a research turn that delivered nothing, else None."""
    reply = final_answer(response)
    if reply is None:
        return None
    if (
        not control.research_started
        or control.report_delivered
        or control.clarification_requested
        or control.halt is not None
    ):
        return None
    return reply
