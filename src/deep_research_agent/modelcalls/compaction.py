"""Context compaction: an agent's older messages are summarized once its context grows too large.

Contract (one instance per agent role; ``name`` carries the role so stacks never collide):
- knobs (``CompactionLimits``): ``compaction_tokens``, the role model's ``context_window`` and the
  summarizer's; trigger: ``compaction_tokens``, or 80% of the context window when that is smaller; ``0``
  disables compaction;
- estimate: messages + system prompt + tool schemas at ~4 characters per token (langchain's approximate
  counter). The system prompt and tools are only visible on the model request, so every model call
  measures them and keeps the figure in private state for the next ``before_model`` check;
- compaction, right before a model step: everything before the recent tail is summarized on the tier's
  ``compaction`` model, its requests named ``compaction`` (sections Request, Findings, Offloaded files,
  Gaps, Next steps), and the transcript becomes [the user's request, recent tail]; the request is kept
  verbatim with its id, so the turn (and every per-turn counter) carries on. The tail never holds a tool
  result whose tool call was summarized away;
- the summary is kept in private state (``compaction_summary``), not in the messages (only the user's
  words are human messages), and every later model call of the agent gets it as a harness message in
  front of its messages; a later compaction summarizes it along with the messages it cuts;
- persistence: the state's messages are replaced (``RemoveMessage(REMOVE_ALL_MESSAGES)`` + new list);
- events: ``status: compacting`` (``tokens_estimate`` before), then ``status: compacted``
  (``messages_summarized``, ``messages_kept``, ``tokens_estimate`` after);
- budget: nothing is reset, compacted work stays spent. ``on_compacted(usage, summarized, kept)`` reports
  each compaction and ``on_model_response(usage, message)`` each summarizer response, to the run's usage meter;
- failure: a failed or empty summary compacts nothing, emits ``status: warning`` (reason
  ``compaction_failed``) and the run goes on; it is retried only once the context has grown by another
  tenth of the trigger, so a dead summarizer does not cost a call on every step.

Not the libraries' summarizers: langchain's counts messages only and raises on failure; deepagents' never shrinks state.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import (
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately, get_buffer_string
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from langgraph.types import Command

from .. import prompts
from ..domain.conversation import harness_message, last_user_index
from ..domain.knobs import KnobError, callable_knob, not_negative, positive
from ..domain.names import Role, WarningReason
from ..domain.per_role import PerRoleMiddleware
from ..domain.secrets import redact
from ..handover.progress import with_tool_texts
from ..protocol.events import CompactedStatus, CompactingStatus, WarningStatus, emit
from ..run import Run, UsageMeter, run_hook
from ..run.containment import contain_hook_failures
from ..settings import Slot

logger = logging.getLogger(__name__)

# Builds the model of one slot for one role (the graph binds it to the run's settings).
ModelFactory = Callable[[Slot, Role], BaseChatModel]

WINDOW_SHARE = 0.8
TAIL_SHARE = 0.25
RETRY_GROWTH_SHARE = 0.1
# The summarizer's own input must fit its window, with room left for the prompt and the summary.
_SUMMARIZER_INPUT_SHARE = 0.7
_CHARS_PER_TOKEN = 4
_SUMMARY_HEADER = "Summary of the earlier work in this conversation (older messages were compacted to save context):"


class CompactionState(AgentState):
    # Checkpointed, unlike the guards' per-run state: a thread's next run compacts on what this one measured.
    compaction_overhead_tokens: NotRequired[Annotated[int, PrivateStateAttr]]
    compaction_retry_above: NotRequired[Annotated[int, PrivateStateAttr]]
    compaction_summary: NotRequired[Annotated[str, PrivateStateAttr]]


@dataclass(frozen=True)
class CompactionLimits:
    """When one agent compacts: at ``compaction_tokens`` (0: never), capped by its model's ``context_window``;
    the summarizer's ``summarizer_context_window`` bounds the transcript it is shown. A negative setting, or
    a window that is not above 0, is refused."""

    compaction_tokens: int
    context_window: int
    summarizer_context_window: int

    def __post_init__(self) -> None:
        not_negative("CompactionLimits", "compaction_tokens", self.compaction_tokens)
        positive("CompactionLimits", "context_window", self.context_window)
        positive("CompactionLimits", "summarizer_context_window", self.summarizer_context_window)


@dataclass(frozen=True)
class CompactionPlan:
    """Which messages go into the summary and which stay verbatim (the request first, then the tail)."""

    summarized: list[AnyMessage]
    kept: list[AnyMessage]


def compaction_trigger(compaction_tokens: int, context_window: int) -> int:
    """Estimated tokens at which to compact: the setting, capped at 80% of the window; 0 means never."""
    if compaction_tokens <= 0:
        return 0
    return min(compaction_tokens, int(context_window * WINDOW_SHARE))


def request_overhead_tokens(system_message: SystemMessage | None, tools: Sequence[BaseTool | dict[str, Any]]) -> int:
    """Estimated tokens of what a model request carries besides the messages: system prompt and tool schemas."""
    return count_tokens_approximately([system_message] if system_message else [], tools=list(tools) or None)


def plan_compaction(messages: Sequence[AnyMessage], tail_tokens: int) -> CompactionPlan | None:
    """Split a transcript into what to summarize and what to keep; None when there is nothing to summarize.

    The newest model turn and its tool results always stay: the agent has not read those results yet, and
    the loop and runaway guards judge them at the next model call.
    """
    newest_turn = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), len(messages)
    )
    cut = safe_tail_start(messages, min(_tail_start_within(messages, tail_tokens), newest_turn))
    request_index = last_user_index(messages)
    keeps_request = request_index is not None and request_index < cut
    summarized = [message for index, message in enumerate(messages[:cut]) if index != request_index]
    if not summarized:
        return None
    request = [messages[request_index]] if keeps_request and request_index is not None else []
    return CompactionPlan(summarized=summarized, kept=[*request, *messages[cut:]])


def summary_message(summary: str) -> HumanMessage:
    """The compaction summary as the model is given it, in front of the agent's messages."""
    return harness_message(f"{_SUMMARY_HEADER}\n\n{summary}", carries_content=True)


def safe_tail_start(messages: Sequence[AnyMessage], start: int) -> int:
    """The first index at or after ``start`` where the tail holds no tool result without its tool call."""
    while start < len(messages) and not _self_contained(messages[start:]):
        start += 1
    return start


def _self_contained(tail: Sequence[AnyMessage]) -> bool:
    calls: set[str] = set()
    for message in tail:
        if isinstance(message, AIMessage):
            calls.update(call["id"] for call in message.tool_calls if call.get("id"))
        elif isinstance(message, ToolMessage) and message.tool_call_id not in calls:
            return False
    return True


def _tail_start_within(messages: Sequence[AnyMessage], tail_tokens: int) -> int:
    """Smallest index whose suffix fits ``tail_tokens`` (``len(messages)`` when not even the last one fits)."""
    used = 0
    start = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        used += count_tokens_approximately([messages[index]])
        if used > tail_tokens:
            break
        start = index
    return start


def _fit(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters by dropping its middle: the start states the goal, the end is freshest."""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters cut ...]\n"
    head = limit // 5
    return text[:head] + marker + text[len(text) - (limit - head) :]


class ContextCompactionMiddleware(PerRoleMiddleware):
    """Replaces an agent's older messages with a structured summary when its context crosses the trigger."""

    label = "ContextCompaction"
    state_schema = CompactionState

    def __init__(
        self,
        *,
        role: str,
        limits: CompactionLimits,
        model_factory: ModelFactory,
        on_compacted: Callable[[UsageMeter, int, int], None] | None = None,
        on_model_response: Callable[[UsageMeter, AIMessage], None] | None = None,
    ) -> None:
        """``limits``: when to compact; ``model_factory(slot, role)``: builds the summarizer (on the
        ``compaction`` slot, for the ``compaction`` role) on first use."""
        if not isinstance(limits, CompactionLimits):
            raise KnobError(type(self).__name__, "limits", limits, "a CompactionLimits")
        callable_knob(type(self).__name__, "model_factory", model_factory)
        callable_knob(type(self).__name__, "on_compacted", on_compacted, optional=True)
        callable_knob(type(self).__name__, "on_model_response", on_model_response, optional=True)
        super().__init__(role=role)
        self.limits = limits
        self.model_factory = model_factory
        self.on_compacted = on_compacted
        self.on_model_response = on_model_response
        self.trigger_tokens = compaction_trigger(limits.compaction_tokens, limits.context_window)
        self.tail_tokens = int(self.trigger_tokens * TAIL_SHARE)
        self.summarizer_input_chars = int(limits.summarizer_context_window * _SUMMARIZER_INPUT_SHARE * _CHARS_PER_TOKEN)

    @cached_property
    def summarizer(self) -> BaseChatModel:
        # Built on first use: most runs never compact, and the graph factory must stay cheap.
        return self.model_factory("compaction", Role.COMPACTION)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | ExtendedModelResponse:
        summary = request.state.get("compaction_summary")
        if summary:
            request = request.override(messages=[summary_message(summary), *request.messages])
        response = await handler(request)
        if not self.trigger_tokens:
            return response
        overhead = request_overhead_tokens(request.system_message, request.tools)
        if overhead == request.state.get("compaction_overhead_tokens"):
            return response
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"compaction_overhead_tokens": overhead})
        )

    @hook_config(can_jump_to=["end"])
    @contain_hook_failures
    @run_hook
    async def abefore_model(self, state: CompactionState, runtime: Runtime, *, run: Run) -> dict[str, Any] | None:
        if not self.trigger_tokens:
            return None
        previous = state.get("compaction_summary")
        # A research unit's state holds progress lines where its model reads the full tool results
        # (handover/progress.py): measure and summarize what the model reads, keep the state's own messages.
        read = with_tool_texts(state["messages"], state.get("tool_texts"))
        in_state = {id(full): stored for full, stored in zip(read, state["messages"], strict=True)}
        messages = [summary_message(previous), *read] if previous else read
        overhead = state.get("compaction_overhead_tokens", 0)
        estimate = count_tokens_approximately(messages) + overhead
        if estimate < max(self.trigger_tokens, state.get("compaction_retry_above", 0)):
            return None
        plan = plan_compaction(messages, self.tail_tokens)
        if plan is None:
            return None
        growth = int(self.trigger_tokens * RETRY_GROWTH_SHARE)
        emit(CompactingStatus(tokens_estimate=estimate))
        summary = await self._summarize(run.usage, plan.summarized)
        if summary is None:
            return {"compaction_retry_above": estimate + growth}
        after = count_tokens_approximately([summary_message(summary), *plan.kept]) + overhead
        emit(
            CompactedStatus(
                messages_summarized=len(plan.summarized), messages_kept=len(plan.kept), tokens_estimate=after
            )
        )
        if self.on_compacted is not None:
            self.on_compacted(run.usage, len(plan.summarized), len(plan.kept))
        return {
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *(in_state.get(id(m), m) for m in plan.kept)],
            "compaction_summary": summary,
            # A compaction that could not get under the trigger (huge request or tail) waits for growth too.
            "compaction_retry_above": after + growth,
        }

    async def _summarize(self, usage: UsageMeter, messages: list[AnyMessage]) -> str | None:
        """The summary of ``messages``, or None (after a warning) when the summarizer fails."""
        transcript = _fit(get_buffer_string(messages, format="xml"), self.summarizer_input_chars)
        prompt = [
            SystemMessage(prompts.template(prompts.Prompt.COMPACTION)),
            HumanMessage(f"<transcript>\n{transcript}\n</transcript>"),
        ]
        try:
            response = await self.summarizer.ainvoke(
                prompt, config={"tags": [TAG_NOSTREAM], "metadata": {"lc_source": "compaction"}}
            )
        except Exception as exc:  # any failure of the side call must leave the run untouched
            return self._failed(f"the compaction model call failed ({type(exc).__name__}: {redact(str(exc))[:300]})")
        if self.on_model_response is not None and isinstance(response, AIMessage):
            self.on_model_response(usage, response)
        summary = response.text.strip()
        if not summary:
            return self._failed("the compaction model returned an empty summary")
        return summary

    def _failed(self, why: str) -> None:
        detail = redact(f"Context compaction skipped: {why}. The run continues with the full context.")
        logger.warning("%s (%s)", detail, self.role)
        emit(WarningStatus(reason=WarningReason.COMPACTION_FAILED, detail=detail))
