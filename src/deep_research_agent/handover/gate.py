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
- an answer that copied an example's placeholders, in a unit that read a page (``pages_read``), is bounced
  ending on an example whose source is the last page it read;
- once the bounce is spent, a failing answer is replaced by what can be handed over: the findings that
  parse, cleaned, or else the prose, trimmed (``FindingsVerdict.fallback_text``);
- the findings it accepts or hands over are staged in the run's evidence store under this sub-agent's
  ``task`` call, parsed once: the orchestrator's side (``publish.py``) takes that object, never re-parses;
- an empty ``findings`` list is a valid answer, and the gate never fails a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentState, ModelRequest
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.channels import UntrackedValue

from ..domain.conversation import harness_message, latest_user_text
from ..domain.names import EvidenceKind, RevisionReason, ToolName
from ..domain.urls import normalise_url
from ..evidence.store import EvidenceStore
from ..protocol.sender import current_sender
from ..run import Run, UsageMeter
from ..tools.arguments import example_call, tool_schema
from .answer_gate import SubAgentAnswerGate
from .contract import UNRESEARCHED, FindingsVerdict, bounce_message, validate_findings

# The tools a unit's research starts with, in the order the example prefers them.
SEARCH_TOOLS = (ToolName.WEB_SEARCH.value, ToolName.CORPUS_SEARCH.value)


def first_research_tool(tools: Sequence[BaseTool | dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The name and schema of the tool a unit's research starts with: its search, else its first tool."""
    schemas = dict(tool_schema(tool) for tool in tools)
    name = next((name for name in SEARCH_TOOLS if name in schemas), next(iter(schemas)))
    return name, schemas[name]


class FindingsGateState(AgentState):
    findings_gate_bounces: NotRequired[Annotated[dict[str, int], PrivateStateAttr, UntrackedValue]]


class FindingsGateMiddleware(SubAgentAnswerGate[FindingsVerdict]):
    """Bounces a sub-agent's unusable findings once, then hands over what is usable."""

    label = "FindingsGate"
    state_schema = FindingsGateState
    gate_key = "findings_gate"
    reason = RevisionReason.SUBAGENT_FINDINGS

    async def judge(self, run: Run, text: str, request: ModelRequest, added: Sequence[AnyMessage]) -> FindingsVerdict:
        """Counted on the request's own messages: the bounce adds no tool call. A failing answer of a unit that
        called no tool is told first to call one: a search for the unit's brief (else its first tool's example)."""
        made = _tool_calls_made(run.usage, request.messages)
        verdict = validate_findings(text, tool_calls_made=made, conversation=[*request.messages, *added])
        if verdict.ok:
            return verdict
        if made:
            read = pages_read(request.messages, run.evidence) if verdict.copied_text else []
            return verdict.model_copy(update={"read_source": read[-1]}) if read else verdict
        if not request.tools:
            return verdict
        name, schema = first_research_tool(request.tools)
        example = example_call(name, schema, fill=latest_user_text(request.messages))
        unresearched = f"{UNRESEARCHED}. Start with a {name} call, like this:\n{example}"
        return verdict.model_copy(update={"problems": [unresearched, *verdict.problems]})

    def bounce_text(self, problems: Sequence[str]) -> str:
        return bounce_message(problems)

    def bounce_for(self, verdict: FindingsVerdict) -> AnyMessage:
        return harness_message(bounce_message(verdict.problems, read_source=verdict.read_source))

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
