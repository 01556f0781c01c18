"""A research turn in which the model calls no tool ends with an honest error, never as an answer.

Contract (orchestrator only; outside its guard chain and inside the triage router, so it sees only turns the
router sent to research, or every turn when the router is off, and its re-ask is guarded and metered like
any call):
- it acts on a reply with no tool call when nothing in the turn has called a tool yet, no research has
  started, nothing was delivered or asked, the run is not halted, the thread holds no report (a follow-up
  may be answered from it) and the reply asks no clarifying questions in prose;
- the first such reply is answered, in the same model step, with a harness message that says a research
  question needs tools, called through the tool-calling interface; with ``first_call`` (the assist's:
  ``first_call(question)``, the call that starts the research of the user's question, which a small model
  copies) it ends on that example; the model is asked again;
- a second such reply in the turn ends the run: ``run_error`` ``no_tool_calls`` (end status
  ``error/no_tool_calls``), whose detail says the model may not support tool calling. The reply itself
  is replaced by that notice, so no client shows it as the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.types import Command

from ..delivery.clarification import prose_questions
from ..domain.conversation import harness_message, is_harness_message, latest_user_text, respond, turn_messages
from ..domain.knobs import KnobError
from ..domain.names import EndReason
from ..domain.stops import RunError
from ..run import Run, run_hook

NUDGE_OPENING = "This question needs research, and your reply called no tool"
NO_TOOL_CALLS_DETAIL = (
    "The model answered a research question twice without calling any tool, so nothing was researched; "
    "it may not support tool calling. Use a model with tool calling (on vLLM: --enable-auto-tool-choice "
    "--tool-call-parser; on llama.cpp: --jinja), or a larger model"
)


class NoToolCallsMiddleware(AgentMiddleware):
    """Nudges an orchestrator that answers a research question without tools once, then ends the run honestly."""

    def __init__(self, *, first_call: Callable[[str], str] | None = None) -> None:
        """``first_call``: the example call shown for the user's question (one line of JSON), or None for none."""
        if first_call is not None and not callable(first_call):
            raise KnobError(type(self).__name__, "first_call", first_call, "a function of the question, or None")
        super().__init__()
        self.first_call = first_call

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        response = await handler(request)
        if request.state.get("final_report") or not _tool_less(response, request.messages, run):
            return response
        if _nudged(request.messages):
            return _ended(response)
        example = self.first_call(latest_user_text(request.messages)) if self.first_call is not None else ""
        nudge = harness_message(
            f"{NUDGE_OPENING}. Do not answer from memory: plan and research it with your tools, calling them through "
            f"the tool-calling interface{', for example:' + chr(10) + example if example else '.'}"
        )
        added = [*response.result, nudge]
        again = await handler(request.override(messages=[*request.messages, *added]))
        if _tool_less(again, [*request.messages, *added], run):
            ended = _ended(again)
            return ExtendedModelResponse(
                model_response=ModelResponse(result=[*added, *ended.model_response.result]), command=ended.command
            )
        return respond(added, model_response=again)


def _tool_less(response: ModelResponse, messages: Sequence[AnyMessage], run: Run) -> bool:
    """True when ``response`` would end a research turn in which no tool was called."""
    reply = response.result[-1] if response.result else None
    if not isinstance(reply, AIMessage) or reply.tool_calls or is_harness_message(reply):
        return False
    control = run.control
    if control.research_started or control.report_delivered or control.clarification_requested or control.halt:
        return False
    if any(isinstance(m, AIMessage) and m.tool_calls for m in turn_messages(messages)):
        return False
    return not prose_questions(reply.text)


def _nudged(messages: Sequence[AnyMessage]) -> bool:
    return any(is_harness_message(m) and m.text.startswith(NUDGE_OPENING) for m in turn_messages(messages))


def _ended(response: ModelResponse) -> ExtendedModelResponse:
    notice = AIMessage(content=f"(The run stopped: {NO_TOOL_CALLS_DETAIL}.)")
    error: Any = RunError(reason=EndReason.NO_TOOL_CALLS.value, detail=NO_TOOL_CALLS_DETAIL)
    return ExtendedModelResponse(
        model_response=ModelResponse(result=[notice], structured_response=response.structured_response),
        command=Command(update={"run_error": error}),
    )
