"""Sub-agent lifecycle: brackets every ``task`` call with events and contains its failures.

Contract (orchestrator only):
- ``subagent_start`` before the sub-agent runs and ``subagent_done`` after, with its role and model;
  ``subagent_done`` adds the sub-agent's own model calls and tokens;
- while the sub-agent runs, every event it emits carries its role and this ``task`` call's id (through
  the ``current_sender`` context variable, which parallel ``task`` calls each hold separately);
- a sub-agent that raises becomes an error result for that ``task`` ("not researched, retry once") and a
  ``subagent_failed`` status: one dead worker never kills the run;
- when the sub-agent's answer carries the findings object, the orchestrator receives that object alone
  (normalised JSON), a ``subagent_findings`` event shows it (``halted`` names the guard that stopped the
  sub-agent, if one did), and its source URLs join the run's sources;
- what reaches the orchestrator is capped at ``MAX_HANDOVER_CHARS``: findings beyond the cap are dropped
  (and named as a gap), any other answer is cut with a note, so one degenerate worker cannot flood the
  orchestrator's context.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..protocol.sender import Sender, current_sender
from ..protocol.events import emit
from ..protocol.secrets import redact
from .contract import Findings, parse_findings
from ..run.ledger import RunLedger, current_ledger

logger = logging.getLogger(__name__)

TASK_TOOL = "task"
MAX_HANDOVER_CHARS = 20_000
_UNIT_CHARS = 300
_SUMMARY_CHARS = 4000
_GAP_CHARS = 500
_MAX_GAPS = 20


class SubagentLifecycleMiddleware(AgentMiddleware):
    """Emits sub-agent start/done/failed events and attributes sub-agent events to their ``task`` call."""

    def __init__(self, *, models_by_role: Mapping[str, str]) -> None:
        super().__init__()
        self.models_by_role = dict(models_by_role)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
    ) -> ToolMessage | Command:
        if request.tool_call["name"] != TASK_TOOL:
            return await handler(request)
        args = request.tool_call.get("args") or {}
        role = str(args.get("subagent_type") or "unknown")
        task_id = request.tool_call["id"]
        unit = str(args.get("description") or "")
        model = self.models_by_role.get(role)
        ledger = current_ledger()
        ledger.research_started = True

        emit("status", state="subagent_start", role=role, task_id=task_id, subagent=role, model=model)
        token = current_sender.set(Sender(role=role, task_id=task_id, unit=unit[:_UNIT_CHARS]))
        try:
            result = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - a dead worker must not kill the run
            logger.warning("sub-agent %s (%s) failed: %r", role, task_id, exc)
            current_sender.reset(token)
            detail = redact(f"{type(exc).__name__}: {exc}")[:500]
            emit("status", state="subagent_failed", role=role, task_id=task_id, subagent=role, detail=detail)
            return ToolMessage(
                content=(
                    f"ERROR [transient] task: the {role} failed before finishing ({type(exc).__name__}). "
                    "This unit was not researched; retry it once, or continue without it and name the gap."
                ),
                tool_call_id=task_id,
                name=TASK_TOOL,
                status="error",
            )
        current_sender.reset(token)
        result = _hand_over(result, unit=unit, ledger=ledger, sender=Sender(role, task_id))
        spent = ledger.task(task_id)
        emit(
            "status",
            state="subagent_done",
            role=role,
            task_id=task_id,
            subagent=role,
            model=model,
            model_calls=spent.model_calls,
            total_tokens=spent.input_tokens + spent.output_tokens,
            tool_calls=spent.tool_calls,
        )
        return result


def _hand_over(result: ToolMessage | Command, *, unit: str, ledger: RunLedger, sender: Sender) -> ToolMessage | Command:
    """Replace the sub-agent's answer by its parsed findings object (or its capped text) and publish it."""
    message = _tool_message_of(result)
    if message is None:
        return result
    findings = parse_findings(message.text)
    if findings is None:
        return _replace_message(result, message, _capped_text(message.text))
    findings = _capped_findings(findings)
    ledger.findings.append((unit, findings))
    emit(
        "subagent_findings",
        role=sender.role,
        task_id=sender.task_id,
        unit=unit[:_UNIT_CHARS],
        summary=findings.summary,
        findings=[f.model_dump() for f in findings.findings],
        gaps=findings.gaps,
        halted=ledger.halted_tasks.get(sender.task_id or ""),
    )
    for finding in findings.findings:
        if finding.source.startswith(("http://", "https://")):
            record = ledger.add_source(finding.source)
            if record is not None:
                emit("source", role=sender.role, task_id=sender.task_id, title=record.title, url=record.url, domain=record.domain)
    return _replace_message(result, message, findings.to_json())


def _capped_text(text: str) -> str:
    if len(text) <= MAX_HANDOVER_CHARS:
        return text
    return (
        text[:MAX_HANDOVER_CHARS].rstrip()
        + f"\n\n[Cut: the sub-agent's answer was {len(text):,} characters; only the first {MAX_HANDOVER_CHARS:,} are shown.]"
    )


def _capped_findings(findings: Findings) -> Findings:
    """Fit the findings object under the hand-over cap: clip summary and gaps, then drop findings from the end."""
    if len(findings.to_json()) <= MAX_HANDOVER_CHARS:
        return findings
    summary = _clip(findings.summary, _SUMMARY_CHARS)
    gaps = [_clip(gap, _GAP_CHARS) for gap in findings.gaps[:_MAX_GAPS]]
    kept = list(findings.findings)

    def build() -> Findings:
        dropped = len(findings.findings) - len(kept)
        note = f"{dropped} findings were dropped" if dropped else "The answer was shortened"
        return Findings(summary=summary, findings=kept, gaps=[*gaps, f"{note} to fit the hand-over size cap."])

    while kept and len(build().to_json()) > MAX_HANDOVER_CHARS:
        kept.pop()
    return build()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def _replace_message(result: ToolMessage | Command, message: ToolMessage, content: str) -> ToolMessage | Command:
    if content == message.content:
        return result
    replacement = message.model_copy(update={"content": content})
    if isinstance(result, ToolMessage):
        return replacement
    update = dict(result.update or {})
    update["messages"] = [replacement if m is message else m for m in update.get("messages", [])]
    return Command(graph=result.graph, update=update, resume=result.resume, goto=result.goto)


def _tool_message_of(result: ToolMessage | Command) -> ToolMessage | None:
    if isinstance(result, ToolMessage):
        return result
    update = result.update if isinstance(result.update, dict) else {}
    messages = [m for m in update.get("messages", []) if isinstance(m, ToolMessage)]
    return messages[-1] if messages else None
