"""The opening of a run: the protocol's handshake, the run's admission, and the takeover of a resumed run.

Contract (orchestrator only; its ``before_agent`` is the run's first node hook):
- ``run_start`` is the first event of every run, with the tools each role is offered (``offer.py`` decides
  the run's offer first, over the graph's ``roster``) and whether each agent's model gets the assist
  (``assist``, decided by the graph: ``assist/switch.py``); the config ``warnings`` and what loading the graph's
  skills and custom tools found wrong follow it as ``status: warning``, then the statuses the graph factory
  found for the run (``mcp_ready``/``mcp_error``); the run's stop-request watcher starts
  (``delivery/stop.py``);
- a config problem (``problems``: a refused ``base_url``, a missing key) ends the run before any model call;
- so does a turn whose question (its new human message) is empty, blank or longer than
  ``max_question_chars`` (``domain/questions.py``): ``error/invalid_question``, its detail also the turn's AI
  message, whatever client sent it (the SDK, the web UI, a generic UI, the CLI, the MCP tools);
- with a per-user limit (``max_runs_per_user``), the run takes a slot among its user's runs in progress
  (``run/admission.py``); past the limit it ends at once with ``error/too_many_runs``, its detail (how many
  runs are in progress, the limit, what to do) also the turn's AI message for clients that show only
  ``messages``; an admitted run holds its slot until it ends; a store that cannot answer admits the run
  (the limit is fairness, not safety);
- the run's named task is opened (``tasks/middleware.py``), and a follow-up turn (the thread already holds
  an answer) adopts the evidence of the thread's earlier runs (``delivery/follow_up.py``);
- a turn on a thread whose last run was stopped mid-way opens with that run's draft
  (``delivery/stopped.py``), which every model call sees before the user's message it answers;
- a turn on a thread whose earlier run left tool calls unanswered (stopped or cancelled mid-step) first
  answers each with an error result (deepagents' ``PatchToolCallsMiddleware``, run inside this hook: as a
  node of its own it would cost every run a graph step, so a checkpoint and an ``updates`` event more);
- a run resumed by another process (its worker died; Aegra's lease reaper hands it on from the last
  checkpoint) never runs this hook again: at its first model or tool call in the new process it is taken
  over once, its ledger restored (``run/ledger.py``) or, for a run resuming a pause for the user, the
  paused run's usage adopted; it gets its offer again (as a follow-up: without the ledger it cannot tell),
  its stop watcher and, under a per-user limit, its slot back.

An unexpected exception in the opening hook ends the run with ``internal_error`` (``run/containment.py``).

Example:
    ```python
    opening = RunOpeningMiddleware(max_runs_per_user=3, warnings=("DRA_MAX_TOOL_CALLS is above 500",))
    agent = create_agent(model, middleware=[contained, opening, ledger, closing, ...])
    ```

Raises:
    KnobError: from the constructor, for a negative or non-whole ``max_runs_per_user`` or
        ``max_question_chars``, ``warnings`` or
        ``problems`` that are not a sequence of strings, or a ``roster`` that is not a ``Roster``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deepagents.middleware.patch_tool_calls import PatchToolCallsMiddleware
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, hook_config
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Command

from ..delivery.follow_up import adopt_thread_evidence
from ..delivery.stop import start_watching
from ..delivery.stopped import model_view as stopped_run_view
from ..delivery.stopped import stopped_run_opening
from ..domain.assist import AssistDecision
from ..domain.conversation import deliverable_message, is_user_turn
from ..domain.knobs import KnobError
from ..domain.names import EndReason, WarningReason
from ..domain.questions import question_problem
from ..domain.stops import RunError
from ..knowledge import DEFAULT_DATASET
from ..mcp.listing import OpeningStatuses
from ..protocol.events import RunStart, WarningStatus, emit
from ..run import Run, RunSlot, admit, adopt_paused_usage, owner_key, restore_ledger, run_owner, start_keeping
from ..run.containment import contain_hook_failures
from ..tasks.middleware import open_task
from .offer import Roster, RunOffer, decide_offer
from .run_call import LifecycleState, RunCall, hook_call, this_call, thread_of

logger = logging.getLogger(__name__)

_DANGLING_CALLS = PatchToolCallsMiddleware()


@dataclass
class Attached:
    """A run's attachment: this process has opened the run, or taken it over from another (its ledger
    restored, its stop watcher and slot started); the lock makes a takeover happen once."""

    done: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class RunOpeningMiddleware(AgentMiddleware):
    """Opens every run: its handshake, its admission, its task and thread; takes over a resumed run."""

    state_schema = LifecycleState

    def __init__(
        self,
        *,
        max_runs_per_user: int = 0,
        max_question_chars: int = 0,
        warnings: Sequence[str] = (),
        problems: Sequence[str] = (),
        knowledge_base: bool = False,
        remember_findings: bool = False,
        knowledge_dataset: str = DEFAULT_DATASET,
        roster: Roster | None = None,
        assist: Mapping[str, AssistDecision] | None = None,
    ) -> None:
        """``max_runs_per_user``: runs one user may have in progress (0: no limit); ``max_question_chars``: the
        longest question a run takes (0: no limit); ``warnings``: reported by
        every run after ``run_start`` (the settings', then what loading the graph's skills, custom tools and
        corpora found wrong); ``problems``: settings that end every run before its first model call;
        ``knowledge_base``, ``remember_findings``, ``knowledge_dataset``: whether the knowledge-base tools may
        be offered, and from which dataset (``offer.py``); ``roster``: every agent's registered tools, whose
        offered part ``run_start`` lists; ``assist``: each agent role's assist decision, which ``run_start`` says."""
        owner = type(self).__name__
        for name, count in (("max_runs_per_user", max_runs_per_user), ("max_question_chars", max_question_chars)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise KnobError(owner, name, count, "a whole number of 0 or more (0: no limit)")
        if roster is not None and not isinstance(roster, Roster):
            raise KnobError(owner, "roster", roster, "a Roster")
        for name, texts in (("warnings", warnings), ("problems", problems)):
            if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
                raise KnobError(owner, name, texts, "a sequence of strings")
        super().__init__()
        self.max_runs_per_user = max_runs_per_user
        self.max_question_chars = max_question_chars
        self.warnings = tuple(warnings)
        self.problems = tuple(problems)
        self.knowledge_base = bool(knowledge_base)
        self.remember_findings = remember_findings
        self.knowledge_dataset = knowledge_dataset
        self.roster = roster or Roster()
        self.assist = dict(assist or {})

    @hook_config(can_jump_to=["end"])
    @contain_hook_failures
    async def abefore_agent(self, state: LifecycleState, runtime: Runtime) -> dict[str, Any] | None:
        run, config = hook_call()
        owner = run_owner(config)
        start_watching(runtime.store, run, owner=owner)
        run.attachments.setdefault(Attached, Attached).done = True
        configurable = config.get("configurable") or {}
        # A turn on a thread that already holds an answer is a follow-up.
        follow_up = any(isinstance(message, AIMessage) for message in state.get("messages") or ())
        offer = await self._offer(runtime.store, run, config, follow_up=follow_up)
        emit(
            RunStart(
                started_at=run.started_at,
                thread_id=configurable.get("thread_id"),
                run_id=configurable.get("run_id"),
                tools=self.roster.offered(offer),
                assist=self.assist,
            )
        )
        for warning in self.warnings:
            emit(WarningStatus(reason=WarningReason.CONFIG, detail=warning))
        for status in (run.attachments.get(OpeningStatuses) or OpeningStatuses()).statuses:
            emit(status)
        if self.problems:
            problems = " ".join(self.problems)
            return {"run_error": RunError(reason=EndReason.CONFIG_ERROR.value, detail=problems), "jump_to": "end"}
        if refusal := _question_refusal(state.get("messages") or [], self.max_question_chars):
            return {
                "run_error": RunError(reason=EndReason.INVALID_QUESTION.value, detail=refusal),
                "messages": [deliverable_message(refusal)],
                "jump_to": "end",
            }
        if refusal := await self._admit(runtime.store, run, owner):
            return {
                "run_error": RunError(reason=EndReason.TOO_MANY_RUNS.value, detail=refusal),
                "messages": [deliverable_message(refusal)],
                "jump_to": "end",
            }
        await open_task(runtime.store, run, config)
        if follow_up:
            await adopt_thread_evidence(runtime.store, run, configurable.get("thread_id"))
        if (opening := stopped_run_opening(state, run.evidence)) is not None:
            return _answering_dangling_calls(state, runtime, {"run_error": None, "messages": [opening]})
        return _answering_dangling_calls(state, runtime, {"run_error": None})

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        await self._take_over(getattr(request.runtime, "store", None), this_call())
        if (opened := stopped_run_view(request.messages)) is not None:
            request = request.override(messages=opened)
        return await handler(request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        await self._take_over(getattr(request.runtime, "store", None), this_call())
        return await handler(request)

    async def _offer(self, store: BaseStore | None, run: Run, config: dict[str, Any], *, follow_up: bool) -> RunOffer:
        return await decide_offer(
            store,
            run,
            config,
            knowledge_base=self.knowledge_base,
            remember_findings=self.remember_findings,
            dataset=self.knowledge_dataset,
            follow_up=follow_up,
        )

    async def _admit(self, store: BaseStore | None, run: Run, owner: str | None) -> str | None:
        """Take the run's slot under the per-user limit; the refusal's text past it, else None."""
        limit = self.max_runs_per_user
        if not limit or store is None:
            return None
        try:
            admission = await admit(store, owner=owner, run_id=run.key, limit=limit)
        except Exception:  # noqa: BLE001 - the limit is fairness, not safety: a store failure admits the run
            logger.warning("could not check the runs in progress of run %s; admitting it", run.key, exc_info=True)
            return None
        if admission.admitted:
            start_keeping(store, run, admission.slot)
            return None
        runs = f"{admission.ahead} research run{'s' if admission.ahead != 1 else ''}"
        return (
            f"You already have {runs} in progress, and this server runs at most {limit} per user at once. "
            "This run was not started: ask again once one of them has finished, or stop one."
        )

    async def _take_over(self, store: BaseStore | None, call: RunCall | None) -> None:
        """Take over a run another process started (its ledger, stop watcher, slot); a no-op once done."""
        if call is None:  # outside a graph run (a unit test): nothing to take over
            return
        run, config = call
        attached = run.attachments.setdefault(Attached, Attached)
        if attached.done:
            return
        async with attached.lock:
            if attached.done:
                return
            owner = run_owner(config)
            thread_id = thread_of(config)
            if await restore_ledger(store, run, thread_id=thread_id):
                logger.info("run %s resumed in this process from its last checkpoint and ledger", run.key)
            elif await adopt_paused_usage(store, run, thread_id=thread_id):
                logger.info("run %s resumed a run paused for the user, and counts what it spent", run.key)
            # A run resumed without its ledger cannot tell a follow-up apart: it keeps the follow-up guidance.
            await self._offer(store, run, config, follow_up=True)
            start_watching(store, run, owner=owner)
            if self.max_runs_per_user and run.attachments.get(RunSlot) is None and store is not None:
                start_keeping(store, run, RunSlot(owner_key=owner_key(owner), run_id=run.key, queued_at=time.time()))
            attached.done = True


def _question_refusal(messages: Sequence[AnyMessage], max_chars: int) -> str:
    """Why the turn's question cannot be researched; ``""`` when it can, or when the run brings no new human
    message (it goes on with the thread as it is)."""
    if messages and not is_user_turn(messages[-1]):
        return ""
    return question_problem(messages[-1].text if messages else "", max_chars=max_chars)


def _answering_dangling_calls(state: LifecycleState, runtime: Runtime, update: dict[str, Any]) -> dict[str, Any]:
    """``update``, which may append messages, with the thread's unanswered tool calls answered first: the
    thread's messages rewritten with an error result after each such call, then ``update``'s."""
    patch = _DANGLING_CALLS.before_agent(state, runtime)
    if patch is None:
        return update
    return {**update, "messages": [*patch["messages"], *update.get("messages", ())]}
