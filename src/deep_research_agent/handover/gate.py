"""Findings gate: a research sub-agent's final answer is checked before it is handed to the orchestrator.

Contract (research sub-agents only; it runs inside the guard chain, so every model call it makes is
metered, retried and heartbeat-reported like any other; the bounce itself is ``answer_gate.SubAgentAnswerGate``'s):
- a reply with no tool call is the sub-agent's final answer; it is judged by ``validate_findings`` with
  the number of tool calls this sub-agent made;
- the first failing answer of a sub-agent run is bounced once, within the same model step: a
  ``status: revising`` (reason ``subagent_findings``, the problems in ``detail``) is sent, the model is
  asked again with the answer and a harness message (``bounce_message``), and all three stay in the
  conversation. The bounce counter is private state of that sub-agent run, so parallel sub-agents
  never share it;
- a failing answer of a unit that called no tool is told first that nothing was researched, and to research
  with its tools; with ``first_call`` (the assist's) it is shown the call that starts its research;
- with ``page_example`` (the assist's), an answer that copied an example's placeholders, in a unit that read
  a page (``pages_read``), is bounced ending on that example for the last page it read, not on the contract;
- once the bounce is spent, a failing answer is replaced by what can be handed over: the findings that
  parse, cleaned, or else the prose, trimmed (``FindingsVerdict.fallback_text``);
- the findings it accepts or hands over are staged in the run's evidence store under this sub-agent's
  ``task`` call, parsed once: the orchestrator's side (``publish.py``) takes that object, never re-parses;
- an empty ``findings`` list is a valid answer, and the gate never fails a run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentState, ModelRequest
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.channels import UntrackedValue

from ..domain.conversation import harness_message, latest_user_text
from ..domain.knobs import callable_knob
from ..domain.names import EvidenceKind, RevisionReason, ToolName
from ..domain.urls import normalise_url
from ..evidence.store import EvidenceStore
from ..protocol.sender import current_sender
from ..run import Run, UsageMeter
from .answer_gate import SubAgentAnswerGate
from .contract import UNRESEARCHED, FindingsVerdict, bounce_message, validate_findings

# What a unit that called no tool is told, without the assist's example of the call to start with.
RESEARCH_FIRST = "research it with your tools, then answer"
# The call that starts a unit's research, for its tools and brief; "" when there is none to show.
FirstCall = Callable[[Sequence[BaseTool | dict[str, Any]], str], str]
# The example answer that ends a bounce for copied placeholders, for the page the unit read.
PageExample = Callable[[str], str]


class FindingsGateState(AgentState):
    findings_gate_bounces: NotRequired[Annotated[dict[str, int], PrivateStateAttr, UntrackedValue]]


class FindingsGateMiddleware(SubAgentAnswerGate[FindingsVerdict]):
    """Bounces a sub-agent's unusable findings once, then hands over what is usable."""

    label = "FindingsGate"
    state_schema = FindingsGateState
    gate_key = "findings_gate"
    reason = RevisionReason.SUBAGENT_FINDINGS

    def __init__(
        self, *, role: str, first_call: FirstCall | None = None, page_example: PageExample | None = None
    ) -> None:
        """``first_call``: the call a unit that called no tool is shown to start with; ``page_example``: the example
        answer for a page the unit read, which ends a bounce for copied placeholders. Both are the assist's; None
        leaves them out."""
        callable_knob(type(self).__name__, "first_call", first_call, optional=True)
        callable_knob(type(self).__name__, "page_example", page_example, optional=True)
        super().__init__(role=role)
        self.first_call = first_call
        self.page_example = page_example

    async def judge(self, run: Run, text: str, request: ModelRequest, added: Sequence[AnyMessage]) -> FindingsVerdict:
        """Counted on the request's own messages: the bounce adds no tool call. A failing answer of a unit that
        called no tool is told first to research (shown the call to start with, by ``first_call``)."""
        made = _tool_calls_made(run.usage, request.messages)
        verdict = validate_findings(text, tool_calls_made=made, conversation=[*request.messages, *added])
        if verdict.ok:
            return verdict
        if made:
            if self.page_example is None or not verdict.copied_text:
                return verdict
            read = pages_read(request.messages, run.evidence)
            return verdict.model_copy(update={"example": self.page_example(read[-1])}) if read else verdict
        if not request.tools:
            return verdict
        call = self.first_call(request.tools, latest_user_text(request.messages)) if self.first_call else ""
        unresearched = f"{UNRESEARCHED}. {call}" if call else f"{UNRESEARCHED}: {RESEARCH_FIRST}."
        return verdict.model_copy(update={"problems": [unresearched, *verdict.problems]})

    def bounce_text(self, problems: Sequence[str]) -> str:
        return bounce_message(problems)

    def bounce_for(self, verdict: FindingsVerdict) -> AnyMessage:
        return harness_message(bounce_message(verdict.problems, example=verdict.example))

    def settle(self, run: Run, verdict: FindingsVerdict) -> None:
        """Hand the parsed findings to this sub-agent's hand-over; an answer with none hands over its text."""
        task_id = current_sender.get().task_id
        if task_id and verdict.findings is not None:
            run.evidence.stage_findings(task_id, verdict.findings)

    def hand_over(self, verdict: FindingsVerdict, reply: AIMessage) -> AIMessage:
        return reply.model_copy(update={"content": verdict.fallback_text})


def pages_read(messages: Sequence[AnyMessage], evidence: EvidenceStore) -> list[str]:
    """The pages this unit read, the last read last: its ``web_fetch`` calls that did not fail and whose URL the
    run's evidence holds a page for (a page reached through a redirect is held at its final URL, so not named)."""
    failed = {m.tool_call_id for m in messages if isinstance(m, ToolMessage) and m.status == "error"}
    recorded = {normalise_url(r.url): r.url for r in evidence.records() if r.kind == EvidenceKind.PAGE}
    asked = [
        str(call["args"].get("url") or "")
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["name"] == ToolName.WEB_FETCH and call["id"] not in failed
    ]
    read = [recorded[key] for key in map(normalise_url, asked) if key in recorded]
    return list(reversed(dict.fromkeys(reversed(read))))


def _tool_calls_made(usage: UsageMeter, messages: list[AnyMessage]) -> int:
    """This sub-agent's tool calls: those in its conversation, or the run's count for its ``task`` when
    compaction summarized some of them away."""
    in_messages = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
    task_id = current_sender.get().task_id
    return max(in_messages, usage.of_task(task_id).tool_calls if task_id else 0)
