"""Sub-agent lifecycle: brackets every ``task`` call with events and contains its failures.

Contract (orchestrator only):
- ``subagent_start`` before the sub-agent runs and ``subagent_done`` after, with its role and model;
  ``subagent_done`` adds the sub-agent's own model calls and tokens;
- while the sub-agent runs, every event it emits carries its role and this ``task`` call's id (through
  the ``current_sender`` context variable, which parallel ``task`` calls each hold separately);
- a sub-agent that raises becomes an error result for that ``task`` ("not researched, retry once") and a
  ``subagent_failed`` status: one dead worker never kills the run;
- when the sub-agent's answer carries the findings object, the orchestrator receives that object alone
  (normalised JSON), a ``subagent_findings`` event shows it, and its source URLs join the run's sources.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..events import Sender, current_sender, emit, redact
from ..findings import parse_findings
from ..ledger import RunLedger, current_ledger

logger = logging.getLogger(__name__)

TASK_TOOL = "task"


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
        model = self.models_by_role.get(role)
        ledger = current_ledger()
        ledger.research_started = True

        emit("status", state="subagent_start", role=role, task_id=task_id, subagent=role, model=model)
        token = current_sender.set(Sender(role=role, task_id=task_id))
        try:
            result = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - a dead worker must not kill the run
            logger.warning("sub-agent %s (%s) failed: %s", role, task_id, redact(repr(exc)))
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
        result = _hand_over_findings(result, unit=str(args.get("description") or ""), ledger=ledger, sender=Sender(role, task_id))
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


_UNIT_CHARS = 300


def _hand_over_findings(result: ToolMessage | Command, *, unit: str, ledger: RunLedger, sender: Sender) -> ToolMessage | Command:
    """Replace the sub-agent's answer by its parsed findings object and publish it."""
    message = _tool_message_of(result)
    if message is None:
        return result
    findings = parse_findings(message.text)
    if findings is None:
        return result
    ledger.findings.append((unit, findings))
    emit(
        "subagent_findings",
        role=sender.role,
        task_id=sender.task_id,
        unit=unit[:_UNIT_CHARS],
        summary=findings.summary,
        findings=[f.model_dump() for f in findings.findings],
        gaps=findings.gaps,
    )
    for finding in findings.findings:
        if finding.source.startswith(("http://", "https://")):
            record = ledger.add_source(finding.source)
            if record is not None:
                emit("source", role=sender.role, task_id=sender.task_id, title=record.title, url=record.url, domain=record.domain)
    replacement = message.model_copy(update={"content": findings.to_json()})
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
