"""Findings gate: a research sub-agent's final answer is checked before it is handed to the orchestrator.

Contract (research sub-agents only; it runs inside the guard chain, so every model call it makes is
metered, retried and heartbeat-reported like any other):
- a reply with no tool call is the sub-agent's final answer; it is judged by ``validate_findings`` with
  the number of tool calls this sub-agent made;
- the first failing answer of a sub-agent run is bounced once, within the same model step: a
  ``status: revising`` (reason ``subagent_findings``, the problems in ``detail``) is sent, the model is
  asked again with the answer and a harness message (``bounce_message``), and all three stay in the
  conversation. The bounce counter is private state of that sub-agent run, so parallel sub-agents
  never share it;
- once the bounce is spent, a failing answer is replaced by what can be handed over: the findings that
  parse, cleaned, or else the prose, trimmed (``FindingsVerdict.fallback_text``);
- the findings it accepts or hands over are staged in the run's evidence store under this sub-agent's
  ``task`` call, parsed once: the orchestrator's side (``publish.py``) takes that object, never re-parses;
- the findings it accepts or hands over are staged in the run's evidence store under this sub-agent's
  ``task`` call, parsed once: the orchestrator's side (``publish.py``) takes that object, never re-parses;
- an empty ``findings`` list is a valid answer, and the gate never fails a run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, NotRequired

from langchain.agents.middleware import AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.channels import UntrackedValue

from ..domain.conversation import harness_message, is_harness_message, respond
from ..domain.names import RevisionReason
from ..domain.per_role import PerRoleMiddleware
from ..evidence.store import EvidenceStore
from ..protocol.events import RevisingStatus, emit
from ..protocol.sender import current_sender
from ..run import Run, UsageMeter, run_hook
from .contract import FindingsVerdict, bounce_message, validate_findings


class FindingsGateState(AgentState):
    findings_bounced: NotRequired[Annotated[bool, PrivateStateAttr, UntrackedValue]]


class FindingsGateMiddleware(PerRoleMiddleware):
    """Bounces a sub-agent's unusable findings once, then hands over what is usable."""

    label = "FindingsGate"
    state_schema = FindingsGateState

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        response = await handler(request)
        reply = _final_answer(response)
        if reply is None:
            return response
        verdict = validate_findings(reply.text, tool_calls_made=_tool_calls_made(run.usage, request.messages))
        if verdict.ok:
            _stage(run.evidence, verdict)
            return response
        if request.state.get("findings_bounced"):
            _stage(run.evidence, verdict)
            handed_over = reply.model_copy(update={"content": verdict.fallback_text})
            return respond([*response.result[:-1], handed_over])
        emit(RevisingStatus(reason=RevisionReason.SUBAGENT_FINDINGS, detail=" ".join(verdict.problems)))
        added: list[AnyMessage] = [*response.result, harness_message(bounce_message(verdict.problems))]
        retry = await handler(request.override(messages=[*request.messages, *added]))
        second = _final_answer(retry)
        if second is not None:
            again = validate_findings(second.text, tool_calls_made=_tool_calls_made(run.usage, request.messages))
            _stage(run.evidence, again)
            if not again.ok:
                retry = ModelResponse(
                    result=[*retry.result[:-1], second.model_copy(update={"content": again.fallback_text})],
                    structured_response=retry.structured_response,
                )
        return respond(added, model_response=retry, update={"findings_bounced": True})


def _final_answer(response: ModelResponse) -> AIMessage | None:
    """The reply when it ends the sub-agent's work: an AI message of the model's with no tool call."""
    reply = response.result[-1] if response.result else None
    if not isinstance(reply, AIMessage) or reply.tool_calls or is_harness_message(reply):
        return None
    return reply


def _stage(evidence: EvidenceStore, verdict: FindingsVerdict) -> None:
    """Hand the parsed findings to this sub-agent's hand-over; an answer with none hands over its text."""
    task_id = current_sender.get().task_id
    if task_id and verdict.findings is not None:
        evidence.stage_findings(task_id, verdict.findings)


def _tool_calls_made(usage: UsageMeter, messages: list[AnyMessage]) -> int:
    """This sub-agent's tool calls: those in its conversation, or the run's count for its ``task`` when
    compaction summarized some of them away."""
    in_messages = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
    task_id = current_sender.get().task_id
    return max(in_messages, usage.of_task(task_id).tool_calls if task_id else 0)
