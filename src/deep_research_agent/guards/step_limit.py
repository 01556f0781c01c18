"""The step guard: an agent stops cleanly before LangGraph's recursion limit instead of failing on it.

LangGraph raises ``GraphRecursionError`` when a graph runs out of steps, which would end the run as a
stream error (or, inside ``task``, fail the sub-agent). ``StepLimitMiddleware`` contract (every agent):
at each model call it reads the steps the agent's graph has left in this invocation (LangGraph's
``RemainingSteps``) and lets the call start only if more are left than the agent needs to finish after
it: one more loop back to the model (its ``after_model`` hooks, the tools, its ``before_model`` hooks,
the model) and the exit path from there (the ``after_model`` and ``after_agent`` hooks). Otherwise the
call does not start and the agent stops cleanly with ``status: recursion_limit`` (the orchestrator's run
ends with a salvaged report, a sub-agent hands back). Past ``SOFT_FRACTION`` of the orchestrator's
steps (or at its last model call but one), the run enters its wrap-up stage like at any ceiling
(``budget_soft`` with reason ``steps``).

Those hooks are counted, at construction, on the agent's other middleware: langchain runs each
middleware's ``before_model``, ``after_model`` and ``after_agent`` as one graph step, and the guards
sharing the chain have none (``GuardChainMiddleware`` refuses them).

langchain's ``ModelCallLimitMiddleware`` counts model calls, not graph steps, so it cannot tell how close
the graph is to its recursion limit; hence this guard.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langgraph.config import get_config
from langgraph.managed.is_last_step import RemainingStepsManager

from ..domain.conversation import respond
from ..domain.names import Ceiling, Role
from ..domain.per_role import PerRoleMiddleware
from ..domain.stops import StopCause
from ..protocol.events import BudgetSoftStatus, RecursionLimitStatus, emit
from ..run import Halt, Run, run_hook
from .budget import SOFT_FRACTION
from .halting import stop_agent


class StepLimitState(AgentState):
    # LangGraph fills this managed value per step (the invocation's steps left); it is never stored. The
    # manager must come last in the annotation for LangGraph to see it.
    remaining_steps: NotRequired[Annotated[int, PrivateStateAttr, RemainingStepsManager]]


def steps_to_finish(middleware: Sequence[AgentMiddleware]) -> int:
    """Graph steps an agent with this middleware needs after a model call: one more loop back to the model
    and the exit path from there."""

    def nodes(hook: str) -> int:
        return sum(_implements(m, hook) or _implements(m, f"a{hook}") for m in middleware)

    before_model, after_model, after_agent = nodes("before_model"), nodes("after_model"), nodes("after_agent")
    one_more_loop = after_model + 1 + before_model + 1  # after_model hooks, tools, before_model hooks, model
    exit_path = after_model + after_agent
    return one_more_loop + exit_path


class StepLimitMiddleware(PerRoleMiddleware):
    """Stops an agent cleanly while it still has the steps to finish, instead of a GraphRecursionError."""

    label = "StepLimit"
    state_schema = StepLimitState

    def __init__(self, *, role: str, agent_middleware: Sequence[AgentMiddleware]) -> None:
        """``agent_middleware``: the agent's middleware besides its guard chain."""
        super().__init__(role=role)
        self.reserve_steps = steps_to_finish(agent_middleware)

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        remaining = request.state.get("remaining_steps")
        if not isinstance(remaining, int):
            return await handler(request)
        if remaining > self.reserve_steps:
            self._wind_down_near_the_limit(run, remaining)
            return await handler(request)
        limit = get_config()["recursion_limit"]
        used = limit - remaining
        emit(
            RecursionLimitStatus(
                used=used,
                limit=limit,
                detail=f"{used} of {limit} graph steps used; stopping before the recursion limit.",
            )
        )
        halt = Halt(cause=StopCause.STEP_LIMIT, detail=f"the run reached its recursion limit ({limit} graph steps)")
        return respond([stop_agent(run, self.role, request.messages, halt=halt)])

    def _wind_down_near_the_limit(self, run: Run, remaining: int) -> None:
        """Past ``SOFT_FRACTION`` of the orchestrator's steps, or when this is its last model call but one,
        the run enters its wrap-up stage, as at any ceiling: every agent is nudged to deliver
        (``BudgetMiddleware``), so a client's low recursion limit ends in a report rather than a cut. A
        sub-agent's steps are its own: they wind down nothing."""
        if self.role != Role.ORCHESTRATOR:
            return
        limit = get_config()["recursion_limit"]
        used = limit - remaining
        near = used >= SOFT_FRACTION * limit or remaining <= 2 * self.reserve_steps
        if near and run.control.enter_budget_soft_stage(Ceiling.STEPS):
            emit(
                BudgetSoftStatus(
                    reason=Ceiling.STEPS,
                    used=used,
                    limit=limit,
                    detail=f"{used} of {limit} graph steps used; every agent is asked to wrap up.",
                )
            )


def _implements(middleware: AgentMiddleware, hook: str) -> bool:
    return getattr(type(middleware), hook) is not getattr(AgentMiddleware, hook)
