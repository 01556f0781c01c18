"""The hand-over, on the orchestrator's side: every ``task`` call bracketed with events, its failures
contained, and the sub-agent's findings published.

Contract (orchestrator only; ``models_by_role`` is the roster, with each sub-agent's model):
- ``subagent_start`` before the sub-agent runs and ``subagent_done`` after, with its role and model; a
  ``task`` for a role not on the roster is left to the task tool, which says no such sub-agent exists;
  ``subagent_done`` adds the sub-agent's own model calls and tokens;
- while the sub-agent runs, every event it emits carries its role and this ``task`` call's id (through
  the ``current_sender`` context variable, which parallel ``task`` calls each hold separately), and its
  progress lines are shown on this call's card (``progress.unit_card``);
- while the sub-agent runs, the run's control lists its unit as running (``RunControl.running_units``, the
  ``task`` call id and brief), so a steering message can drop it (``delivery/steer.py``);
- a sub-agent that raises becomes an error result for that ``task`` ("not researched, retry once") and a
  ``subagent_failed`` status: one dead worker never kills the run;
- when the sub-agent ended with findings (staged, already parsed, by its findings gate or its guard's
  hand-back), the ``task`` result kept in the thread is that object as short Markdown
  (``report/rendering.findings_markdown``: what a generic client shows in its sub-agent card), and every
  model call of the orchestrator gets the object itself (normalised JSON) in its place, from the
  checkpointed ``findings``; a ``subagent_findings`` event shows it (``halted`` names what stopped the
  sub-agent, if anything did), the run's evidence store records the hand-over, and its source URLs join
  the run's sources; before that, each finding whose quote is in no text the run retrieved from its
  source is marked ``check: "quote_not_found"`` (``contract.quotes_checked``);
- each hand-over also updates the checkpointed ``findings`` and ``draft_report`` (``HandOverState``; the
  draft is vetted in a worker thread);
- a ``task`` cancelled in flight (the server cancels the run: a client's ``runs.cancel``) writes a
  ``draft_report`` assembled from everything the run had so far, the units in flight included (their staged
  findings, the pages they read), onto the thread's current checkpoint before the cancellation goes on
  (``_keep_in_checkpoint``): the thread's state shows it, and the next turn opens with it
  (``delivery/stopped.py``);
- what reaches the orchestrator is capped at ``MAX_HANDOVER_CHARS``: findings beyond the cap are dropped
  (and named as a gap), any other answer is cut with a note, so one degenerate worker cannot flood the
  orchestrator's context.

A research sub-agent carries one too (``nested=True``) for the extract and coding sub-agents it calls
through its own ``task``: the same events and caps, the findings handed to that research sub-agent and
shown as ``subagent_findings``, but not recorded as a hand-over of the run nor written to the
orchestrator's state, since the research sub-agent hands them on in its own findings.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import nullcontext
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import OmitFromInput
from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.errors import tool_error_text
from ..domain.findings import Findings
from ..domain.names import ToolErrorClass, ToolName
from ..domain.secrets import redact
from ..evidence.store import HandOver
from ..protocol.events import (
    Source,
    SubagentDoneStatus,
    SubagentFailedStatus,
    SubagentFindings,
    SubagentStartStatus,
    emit,
)
from ..protocol.sender import Sender, current_sender
from ..report.rendering import findings_markdown
from ..report.vetting import draft_report
from ..run import Run, run_hook
from .contract import capped_findings, capped_text, quotes_checked
from .progress import tool_message_of, unit_card

logger = logging.getLogger(__name__)

_UNIT_CHARS = 300
DRAFT_REASON = "the run had not finished: this draft is assembled from the research units handed over so far"
STOPPED_REASON = (
    "the run was stopped while research units were still running: this draft is assembled from what they had "
    "found and read so far"
)
# langgraph's id for writes that belong to no task (its NULL_TASK_ID, kept in a private module): a checkpoint's
# readers and the thread's next run apply them.
_NO_TASK = "00000000-0000-0000-0000-000000000000"


def _latest(_: str | None, new: str | None) -> str | None:
    return new


def _merged(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    return {**(old or {}), **(new or {})}


class HandOverState(AgentState):
    """Checkpointed as each unit hands over, so a run cut short (a client's cancel) still leaves its work:
    ``findings`` by ``task`` call id, and ``draft_report``, the report assembled from all of them so far,
    marked incomplete. Parallel ``task`` calls write both at once, hence the reducers."""

    # LangGraph takes an annotation's last item as its reducer.
    findings: NotRequired[Annotated[dict[str, Any], OmitFromInput, _merged]]
    draft_report: NotRequired[Annotated[str | None, OmitFromInput, _latest]]


class HandOverMiddleware(AgentMiddleware):
    """Emits sub-agent start/done/failed events and attributes sub-agent events to their ``task`` call."""

    state_schema = HandOverState

    def __init__(self, *, models_by_role: Mapping[str, str], nested: bool = False) -> None:
        super().__init__()
        self.models_by_role = dict(models_by_role)
        self.nested = nested

    @property
    def name(self) -> str:
        return "HandOverNested" if self.nested else "HandOverMiddleware"

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """The orchestrator reads each hand-over as its findings JSON, not the Markdown a client is shown."""
        handed_over = request.state.get("findings") or {}
        if self.nested or not handed_over:
            return await handler(request)
        messages = [_as_handed_over(m, handed_over) for m in request.messages]
        return await handler(request.override(messages=messages))

    @run_hook
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
        *,
        run: Run,
    ) -> ToolMessage | Command:
        if request.tool_call["name"] != ToolName.TASK:
            return await handler(request)
        args = request.tool_call.get("args") or {}
        role = str(args.get("subagent_type") or "unknown")
        if role not in self.models_by_role:
            # Not on the roster: the task tool answers that it does not exist, and nothing was started.
            return await handler(request)
        task_id = request.tool_call["id"]
        unit = str(args.get("description") or "")
        model = self.models_by_role.get(role)
        run.control.mark_research_started()
        if not self.nested:
            # A steering message can drop this unit while it runs (``delivery/steer.py``).
            run.control.unit_started(task_id, unit)

        emit(SubagentStartStatus(role=role, task_id=task_id, subagent=role, model=model))
        token = current_sender.set(Sender(role=role, task_id=task_id, unit=unit[:_UNIT_CHARS]))
        try:
            with nullcontext() if self.nested else unit_card(task_id):
                result = await handler(request)
        except asyncio.CancelledError:
            if not self.nested:
                await _keep_stopped_draft(run)
            raise
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - a dead worker must not kill the run
            logger.warning("sub-agent %s (%s) failed: %r", role, task_id, exc)
            current_sender.reset(token)
            detail = redact(f"{type(exc).__name__}: {exc}")[:500]
            emit(SubagentFailedStatus(role=role, task_id=task_id, subagent=role, detail=detail))
            return ToolMessage(
                content=tool_error_text(
                    ToolName.TASK,
                    ToolErrorClass.TRANSIENT,
                    f"the {role} failed before finishing ({type(exc).__name__}). "
                    "This unit was not researched; retry it once, or continue without it and name the gap.",
                ),
                tool_call_id=task_id,
                name=ToolName.TASK,
                status="error",
            )
        finally:
            if not self.nested:
                run.control.unit_ended(task_id)
        current_sender.reset(token)
        result = await _hand_over(result, unit=unit, run=run, sender=Sender(role, task_id), nested=self.nested)
        spent = run.usage.of_task(task_id)
        emit(
            SubagentDoneStatus(
                role=role,
                task_id=task_id,
                subagent=role,
                model=model,
                model_calls=spent.model_calls,
                total_tokens=spent.total_tokens,
                tool_calls=spent.tool_calls,
            )
        )
        return result


async def _hand_over(
    result: ToolMessage | Command, *, unit: str, run: Run, sender: Sender, nested: bool
) -> ToolMessage | Command:
    """Replace the sub-agent's answer by its staged findings object (or its capped text) and publish it."""
    message = tool_message_of(result)
    staged = run.evidence.take_staged(sender.task_id or "")
    if message is None:
        return result
    if staged is None:
        return _replace_message(result, message, capped_text(message.text))
    if not nested:
        staged = await asyncio.to_thread(quotes_checked, staged, run.evidence.library())
    findings = capped_findings(staged)
    halted = run.control.halted_by(sender.task_id or "")
    if not nested:
        run.evidence.add_handover(HandOver(task_id=sender.task_id or "", unit=unit, findings=findings))
    emit(
        SubagentFindings(
            role=sender.role,
            task_id=sender.task_id,
            unit=unit[:_UNIT_CHARS],
            summary=findings.summary,
            findings=findings.findings,
            gaps=findings.gaps,
            halted=halted,
        )
    )
    for finding in findings.findings:
        if finding.source.startswith(("http://", "https://")):
            if record := run.evidence.add_source(finding.source):
                emit(
                    Source(
                        role=sender.role,
                        task_id=sender.task_id,
                        title=record.title,
                        url=record.url,
                        domain=record.domain,
                    )
                )
    if nested:
        return _replace_message(result, message, findings.to_json())
    result = _replace_message(result, message, findings_markdown(findings, run.evidence))
    work = {
        "findings": {sender.task_id or unit: {"unit": unit, **findings.model_dump(), "halted": halted}},
        "draft_report": await asyncio.to_thread(draft_report, run.evidence, reason=DRAFT_REASON),
    }
    return _with_update(result, work)


async def _keep_stopped_draft(run: Run) -> None:
    """The draft of a run cancelled mid-unit, kept on the thread's checkpoint; never raises into the cancellation."""
    try:
        draft = await asyncio.shield(
            asyncio.to_thread(draft_report, run.evidence, reason=STOPPED_REASON, in_flight=True)
        )
        if not await asyncio.shield(_keep_in_checkpoint({"draft_report": draft})):
            logger.info("cancelled run %s has no checkpoint to keep its draft on", run.key)
    except Exception:  # noqa: BLE001 - the run is being cancelled: nothing more can be done for it
        logger.warning("could not keep the draft of cancelled run %s", run.key, exc_info=True)


async def _keep_in_checkpoint(values: Mapping[str, Any]) -> bool:
    """Write ``values`` onto the checkpoint the current graph step started from, as writes of no task, so they
    hold even when the step never finishes (a cancelled run saves none of its step's own writes); False outside
    a checkpointed graph run.

    Why not ``update_state``: it needs the compiled graph and makes a new checkpoint, which the server's cancel
    would race; a write of no task is what langgraph itself applies to a checkpoint's state and next run."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        return False
    saver = configurable.get(CONFIG_KEY_CHECKPOINTER)
    parent_ns = str(configurable.get("checkpoint_ns") or "").rpartition("|")[0]
    checkpoint_id = (configurable.get("checkpoint_map") or {}).get(parent_ns)
    if saver is None or not checkpoint_id or "thread_id" not in configurable:
        return False
    target = {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": parent_ns,
            "checkpoint_id": checkpoint_id,
        }
    }
    await saver.aput_writes(target, list(values.items()), _NO_TASK)
    return True


def _as_handed_over(message: AnyMessage, handed_over: Mapping[str, Any]) -> AnyMessage:
    if not isinstance(message, ToolMessage) or message.name != ToolName.TASK:
        return message
    work = handed_over.get(message.tool_call_id)
    if not isinstance(work, Mapping):
        return message
    findings = Findings.model_validate({key: work.get(key) for key in ("summary", "findings", "gaps")})
    return message.model_copy(update={"content": findings.to_json()})


def _with_update(result: ToolMessage | Command, extra: dict[str, Any]) -> Command:
    if isinstance(result, ToolMessage):
        return Command(update={"messages": [result], **extra})
    return Command(
        graph=result.graph, update={**dict(result.update or {}), **extra}, resume=result.resume, goto=result.goto
    )


def _replace_message(result: ToolMessage | Command, message: ToolMessage, content: str) -> ToolMessage | Command:
    if content == message.content:
        return result
    replacement = message.model_copy(update={"content": content})
    if isinstance(result, ToolMessage):
        return replacement
    update = dict(result.update or {})
    update["messages"] = [replacement if m is message else m for m in update.get("messages", [])]
    return Command(graph=result.graph, update=update, resume=result.resume, goto=result.goto)
