"""Completion: an orchestrator that stops talking after research, without delivering, is sent back to work.

Contract (orchestrator only; it runs inside the guard chain, so every re-ask is metered like any call):
- it acts on a reply with no tool call, once research has started, while no report was delivered, no
  clarification is pending and the run is not halted;
- the reply is classified (``classify_final_text``) and answered within the same model step with the
  matching nudge (``nudge_for``) as a harness message, and the model is asked again: the reply stays in the
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

from langchain.agents.middleware import AgentMiddleware, AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.channels import UntrackedValue

from ..domain.conversation import harness_message, is_harness_message, respond, turn_key
from ..domain.stops import StopCause
from ..run import Halt, Run, RunControl, run_hook
from .final_text import FinalTextKind, classify_final_text, nudge_for

MAX_INTENT_NUDGES = 4
NUDGE_LIMITS: dict[FinalTextKind, int] = {
    "report_like": 1,
    "json_dump": 1,
    "intent_stub": MAX_INTENT_NUDGES,
    "other": 1,
}


class CompletionState(AgentState):
    completion_turn: NotRequired[Annotated[str | None, PrivateStateAttr, UntrackedValue]]
    completion_nudges: NotRequired[Annotated[dict[str, int], PrivateStateAttr, UntrackedValue]]


class CompletionMiddleware(AgentMiddleware):
    """Nudges an orchestrator that stopped without delivering its report; halts one that only announces."""

    state_schema = CompletionState

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        turn = turn_key(request.messages)
        nudges = (
            dict(request.state.get("completion_nudges") or {}) if request.state.get("completion_turn") == turn else {}
        )
        added: list[AnyMessage] = []
        replies: list[AnyMessage] = []
        while True:
            response = await handler(request.override(messages=[*request.messages, *added]) if added else request)
            reply = _stopped_without_report(response, run.control)
            if reply is None:
                break
            kind = classify_final_text(reply.text)
            if nudges.get(kind, 0) >= NUDGE_LIMITS[kind]:
                if kind == "intent_stub":
                    detail = f"the orchestrator kept announcing a next step without taking it, after {MAX_INTENT_NUDGES} nudges"
                    run.control.halt_run(Halt(cause=StopCause.STALLED, detail=detail))
                break
            nudges[kind] = nudges.get(kind, 0) + 1
            added += [*response.result, harness_message(nudge_for(kind))]
            replies += response.result
        update = {"completion_turn": turn, "completion_nudges": nudges} if added else None
        return respond(replies, model_response=response, update=update)


def _stopped_without_report(response: ModelResponse, control: RunControl) -> AIMessage | None:
    """The reply when it would end a research turn that delivered nothing, else None."""
    reply = response.result[-1] if response.result else None
    if not isinstance(reply, AIMessage) or reply.tool_calls or is_harness_message(reply):
        return None
    if (
        not control.research_started
        or control.report_delivered
        or control.clarification_requested
        or control.halt is not None
    ):
        return None
    return reply
