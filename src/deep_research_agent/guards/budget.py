"""Run budgets: ceilings on tool calls, tokens, wall-clock time and dollars, binding every role at once.

``BudgetMiddleware`` contract (one instance per agent graph, orchestrator and every sub-agent):
- usage is read from the run run, which counts every role's calls as they happen, so sub-agents and
  work that compaction later summarizes away count too; a ceiling of 0 means no cap;
- at 75% of any ceiling, one ``status: budget_soft`` per run (``reason`` = the binding ceiling) and one
  wrap-up nudge to every agent at each of its model calls from then on (added to the call only, never
  persisted: only the user's words are human messages): sub-agents return their findings, the
  orchestrator submits its report;
- when the user asks the run to wrap up (``stop_request.py``), the same nudge goes to every agent, and no
  tool call starts any more except ``submit_report``;
- a research unit a steering message dropped (``delivery/steer.py``) is stopped at its next model call,
  which is not made: it hands back what it found so far, marked ``halted: user``, its gap naming the message;
- at 100%, one ``status: budget_halt`` per run and the run is halted: no model call and no tool call
  starts afterwards in any role. A refused tool call returns an error result; a refused model call ends
  its agent (a sub-agent hands back what it has). ``submit_report`` is exempt: delivering a report that
  is already written costs nothing and beats a salvaged one;
- every halt binds every role, whatever stopped the run (a ceiling, a guard that stopped the
  orchestrator, the user's stop request);
- the wall clock and the user's stop request are enforced while calls run: every model call, and every
  tool call except ``task`` (whose sub-agent enforces them itself), is cut off when the run's time is up
  or the user asks it to stop;
- overshoot is bounded by the calls already in flight when a ceiling was crossed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.conversation import harness_message, respond
from ..domain.errors import tool_error_text
from ..domain.knobs import KnobError, not_negative
from ..domain.names import Ceiling, Role, ToolErrorClass, ToolName
from ..domain.per_role import PerRoleMiddleware
from ..domain.stops import StopCause
from ..protocol.events import BudgetHaltStatus, BudgetSoftStatus, emit
from ..protocol.sender import current_sender
from ..run import Halt, Run, run_hook
from .halting import stop_agent

SOFT_FRACTION = 0.75
# Below this, not even one model call and the exit path fit in the graph's steps: no run could end cleanly.
MIN_RECURSION_LIMIT = 12

T = TypeVar("T")
# Stand for "the run's wall-clock ceiling passed" and "the user stopped the run" before the call finished.
_OUT_OF_TIME = object()
_STOPPED = object()
# Not a halt (model calls go on, so every agent can write up), but the reason a tool call is refused.
_WRAPPING_UP = "the user asked the run to wrap up and deliver what it has"
# What stops one unit a steering message dropped: the user's, for that unit alone (the run goes on).
_DROPPED = Halt(cause=StopCause.USER, detail="the user dropped this unit's topic")


def effective_recursion_limit(recursion_limit: int) -> int:
    """The graph's step limit for a configured ``recursion_limit``: never below ``MIN_RECURSION_LIMIT``."""
    return max(recursion_limit, MIN_RECURSION_LIMIT)


@dataclass(frozen=True)
class BudgetLimits:
    """The run's four ceilings, shared by every role; 0 means no cap. A negative or non-finite one is refused."""

    max_tool_calls: int = 0
    max_total_tokens: int = 0
    max_run_seconds: float = 0.0
    max_cost_usd: float = 0.0

    def __post_init__(self) -> None:
        for name in ("max_tool_calls", "max_total_tokens", "max_run_seconds", "max_cost_usd"):
            not_negative("BudgetLimits", name, getattr(self, name))
        for name in ("max_tool_calls", "max_total_tokens"):
            if not isinstance(getattr(self, name), int):
                raise KnobError("BudgetLimits", name, getattr(self, name), "a whole number of 0 or more")


@dataclass(frozen=True)
class CeilingUse:
    """How much of one ceiling the run has spent."""

    name: Ceiling
    used: float
    limit: float

    @property
    def fraction(self) -> float:
        return self.used / self.limit

    def describe(self) -> str:
        if self.name == "tool_calls":
            return f"{self.used:.0f} of {self.limit:.0f} tool calls"
        if self.name == Ceiling.TOKENS:
            return f"{self.used:,.0f} of {self.limit:,.0f} tokens"
        if self.name == Ceiling.TIME:
            return f"{self.used:.0f} of {self.limit:.0f} seconds"
        return f"${self.used:.4f} of ${self.limit:.4f}"


def ceiling_uses(run: Run, limits: BudgetLimits) -> list[CeilingUse]:
    """Every capped ceiling with the run's spend against it."""
    totals = run.usage.totals()
    candidates = (
        (Ceiling.TOOL_CALLS, totals.tool_calls, limits.max_tool_calls),
        (Ceiling.TOKENS, totals.budget_tokens, limits.max_total_tokens),
        (Ceiling.TIME, run.elapsed_s, limits.max_run_seconds),
        (Ceiling.COST, totals.cost_usd, limits.max_cost_usd),
    )
    return [CeilingUse(name, float(used), float(limit)) for name, used, limit in candidates if limit > 0]


def binding_ceiling(uses: list[CeilingUse]) -> CeilingUse | None:
    return max(uses, key=lambda use: use.fraction, default=None)


class BudgetMiddleware(PerRoleMiddleware):
    """Soft wrap-up nudge at 75% and hard halt at 100% of the run's ceilings, in every role."""

    label = "Budget"

    def __init__(self, limits: BudgetLimits, *, role: str) -> None:
        """``limits``: the run's ceilings (``BudgetLimits``, which refuses negative ones)."""
        if not isinstance(limits, BudgetLimits):
            raise KnobError("BudgetMiddleware", "limits", limits, "a BudgetLimits")
        super().__init__(role=role)
        self.limits = limits

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        halt = self._enforce(run)
        if halt is not None:
            return respond([self._stop(run, request.messages, halt)])
        if self.role != Role.ORCHESTRATOR and (dropped := run.control.dropped_by(current_sender.get().task_id or "")):
            why = f"the user's steering message \"{dropped}\", which dropped this unit's topic"
            return respond([stop_agent(run, self.role, request.messages, halt=_DROPPED, why=why)])
        if run.control.budget_soft is not None or run.control.wrap_up_requested:
            request = request.override(messages=[*request.messages, harness_message(self._wrap_up_nudge(run))])
        return await self._model_call_within_limits(request, handler, run)

    @run_hook
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
        *,
        run: Run,
    ) -> ToolMessage | Command:
        tool = request.tool_call["name"]
        if tool == ToolName.SUBMIT_REPORT:
            return await handler(request)
        # No await between this check and the metering middleware counting the call, so parallel
        # calls on the event loop cannot all pass the same last free slot.
        halt = self._enforce(run)
        if halt is not None:
            return _refusal(request, halt.detail)
        if run.control.wrap_up_requested:
            return _refusal(request, _WRAPPING_UP)
        if tool == ToolName.TASK:
            return await handler(request)
        result = await self._within_limits(handler(request), run)
        return _refusal(request, result.detail) if isinstance(result, Halt) else result

    async def _model_call_within_limits(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], run: Run
    ) -> ModelResponse:
        """The model's response, or the agent's stop when the run's time runs out or the user stops it first."""
        response = await self._within_limits(handler(request), run)
        if isinstance(response, Halt):
            return ModelResponse(result=[self._stop(run, request.messages, response)])
        return response

    async def _within_limits(self, call: Awaitable[T], run: Run) -> T | Halt:
        """``call``'s result, or the halt that came first: the run's wall-clock ceiling or the user's stop."""
        result = await _racing_stop_request(self._within_run_time(call, run), run)
        if result is _STOPPED:
            assert run.control.halt is not None, "request_stop halts the run before it wakes the racing calls"
            return run.control.halt
        if result is _OUT_OF_TIME:
            return self._halt_on_time(run)
        return result

    async def _within_run_time(self, call: Awaitable[T], run: Run) -> T | object:
        """``call``'s result, or ``_OUT_OF_TIME`` when the run's wall-clock ceiling passes first."""
        remaining = self._remaining_s(run)
        if remaining is None:
            return await call
        try:
            async with asyncio.timeout(remaining) as deadline:
                return await call
        except TimeoutError:
            if not deadline.expired():
                raise
        return _OUT_OF_TIME

    def _enforce(self, run: Run) -> Halt | None:
        """The run's halt, declaring it (and the soft stage) when a ceiling is crossed."""
        if run.control.halt is not None:
            return run.control.halt
        binding = binding_ceiling(ceiling_uses(run, self.limits))
        if binding is None:
            return None
        if binding.fraction >= 1:
            return self._halt(run, binding)
        if binding.fraction >= SOFT_FRACTION and run.control.enter_budget_soft_stage(binding.name):
            detail = f"{binding.describe()} used; every agent is asked to wrap up."
            emit(BudgetSoftStatus(reason=binding.name, used=round(binding.used, 4), limit=binding.limit, detail=detail))
        return None

    def _halt(self, run: Run, binding: CeilingUse) -> Halt:
        halt = Halt(
            cause=StopCause.BUDGET,
            ceiling=binding.name,
            detail=f"the run's {binding.name.replace('_', '-')} budget is used up ({binding.describe()})",
        )
        if run.control.halt_run(halt):
            detail = f"{binding.describe()}; no further model or tool calls start."
            emit(BudgetHaltStatus(reason=binding.name, used=round(binding.used, 4), limit=binding.limit, detail=detail))
        return run.control.halt or halt

    def _halt_on_time(self, run: Run) -> Halt:
        limit = self.limits.max_run_seconds
        return self._halt(run, CeilingUse(Ceiling.TIME, max(run.elapsed_s, limit), limit))

    def _remaining_s(self, run: Run) -> float | None:
        if self.limits.max_run_seconds <= 0:
            return None
        return max(self.limits.max_run_seconds - run.elapsed_s, 0.0)

    def _stop(self, run: Run, messages: list[AnyMessage], halt: Halt) -> AIMessage:
        return stop_agent(run, self.role, messages, halt=halt)

    def _wrap_up_nudge(self, run: Run) -> str:
        if run.control.wrap_up_requested:
            why = "the user asked this research run to finish now with what it has"
        else:
            ceiling = (run.control.budget_soft or "").replace("_", "-").replace("steps", "graph-step")
            why = f"this research run has used over {SOFT_FRACTION:.0%} of its {ceiling} budget"
        if self.role == Role.ORCHESTRATOR:
            action = (
                "Start no new research units. Call submit_report now with the findings you have, "
                "and say plainly what could not be covered."
            )
        else:
            action = (
                "Stop searching and reading. Return your findings now as the JSON object, "
                "with what you could not establish under gaps."
            )
        return f"WRAP UP NOW: {why}. {action}"


async def _racing_stop_request(call: Awaitable[T], run: Run) -> T | object:
    """``call``'s result, or ``_STOPPED`` (with the call cancelled) when the user stops the run first."""
    work = asyncio.ensure_future(call)
    stop = asyncio.ensure_future(run.control.stop_requested())
    try:
        await asyncio.wait((work, stop), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not work.done():
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
    if work.cancelled():
        return _STOPPED
    return work.result()


def _refusal(request: ToolCallRequest, why: str) -> ToolMessage:
    tool = request.tool_call["name"]
    return ToolMessage(
        content=tool_error_text(
            tool, ToolErrorClass.PERMANENT, f"not run, because {why}. Finish now with what you have."
        ),
        tool_call_id=request.tool_call["id"],
        name=tool,
        status="error",
    )
