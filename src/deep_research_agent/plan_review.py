"""Plan review: with ``plan_review`` on, the user approves, edits or rejects the plan before its units start.

Contract (orchestrator only; in every graph, ``offered`` only with ``plan_review`` on):
- the middleware is in every orchestrator, so that a resume answers a pending ``propose_plan`` call whatever
  the resumed run's settings: deep-agents-ui resumes with ``Command(resume=...)`` and no config, so a run that
  switched plan review on only in its first run's ``configurable`` resumes on a graph built without it.
  The tool is registered in every graph (the resumed call runs there) but, with ``offered`` off, the model is
  never shown it, ``task`` is not held back, and the graph's roster leaves it out (``withheld``), so a run
  without plan review has the same tools and prompt as before; a ``propose_plan`` call there that no
  reviewed graph proposed (its reply carries no ``PROPOSED_AT_KEY``) is refused with a ``TOOL ERROR``, so
  it never pauses a run without plan review;
- offered, gives the orchestrator ``propose_plan(units)`` (each unit: the brief its sub-agent gets, the sub-agent,
  the expected sources) and tells it to call it once before any ``task``; a ``task`` called before the
  turn's plan was approved is refused with a ``TOOL ERROR`` that says to propose the plan first;
- ``propose_plan`` pauses the run with a LangGraph ``interrupt`` in langchain's human-in-the-loop format:
  one ``HITLRequest`` with exactly one action request (``name`` ``propose_plan``, ``args`` the units and
  the plan's ``cost_estimate``, ``description`` the plan as a reader reads it) and one review config
  allowing ``approve``, ``edit`` and ``reject``; it is resumed with ``{"decisions": [one decision]}``;
- ``approve`` starts the proposed units and ``edit`` the edited ones (``edited_action.args.units``): the
  next model call of the orchestrator is not made, and its reply is one ``task`` call per unit with the
  unit's brief verbatim, so what the reviewer approved is exactly what the sub-agents get; the approved
  plan's estimate is attached to the run, and its usage event says how far the actual cost ended from it;
- ``reject`` (its message, if any, quoted) tells the orchestrator to plan again from the message and
  propose again, which pauses again;
- the answer is read strictly before anything acts on it (``domain/plan_answer.py``): a resume that is not
  one valid decision (a malformed shape, an unknown type or key, an edit whose plan breaks the ``rules``)
  is not used: the run pauses again at once on the same plan, an interrupt whose action request's
  ``description`` starts with what was wrong (deep-agents-ui shows it on the approval, agent-chat-ui under
  Description), and a ``status: warning`` (``plan_review_answer``) says the same on the custom channel. So
  no unit starts and no model call is made until a valid approve or edit: the orchestrator never hears of
  a bad answer. (LangGraph replays a node's earlier answers to its earlier ``interrupt`` calls, in order, so
  each refused answer is refused again on the way to the newest one);
- a plan the orchestrator proposes that breaks the ``rules`` (more units than ``plan_max_units``, a sub-agent
  the run does not have, a blank brief) goes back to it as a ``TOOL ERROR`` and never reaches the user;
- a reply with more than one ``propose_plan`` call pauses once: the first call is reviewed, every further one
  is answered at once with a ``TOOL ERROR`` that says one plan is reviewed at a time;
- a plan answered more than ``timeout_s`` after it was proposed (0: no limit) is not started: the run ends
  ``error/plan_review_expired`` with a detail that says so, its last AI message that detail. A waiting plan
  costs nothing: a paused run holds no worker, only its checkpoint.

Why not langchain's ``HumanInTheLoopMiddleware`` (whose request and answer shapes this uses): its interrupt
is an ``after_model`` hook, a graph step on every orchestrator turn, raised outside the tool call, where the
run's lifecycle cannot tell the pause from the run's end and the plan's deadline and estimate have no place.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.human_in_the_loop import ActionRequest, HITLRequest, ReviewConfig
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.errors import GraphInterrupt
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, interrupt
from pydantic import BaseModel, Field

from . import prompts
from .domain.conversation import is_user_turn
from .domain.errors import tool_error_text
from .domain.knobs import KnobError, not_negative
from .domain.names import EndReason, Role, ToolErrorClass, ToolName, WarningReason
from .domain.plan import PlanEstimate, PlanUnit
from .domain.plan_answer import DECISIONS, PlanRules, ReviewAnswerError, ReviewDecision, read_review_answer
from .domain.stops import RunError
from .guards.budget import BudgetLimits
from .protocol.events import WarningStatus, emit
from .run import current_run
from .settings.tiers import ModelSpec, Tier

# When the plan was proposed, on the orchestrator's reply that proposed it (epoch seconds).
PROPOSED_AT_KEY = "dra_plan_proposed_at"

_TOOL_DESCRIPTION = (
    "Propose the research plan for the user's review before any unit starts: one entry per research unit. "
    "The units start once the user approves or edits the plan; a rejection says what to change."
)
_ONE_PLAN = tool_error_text(
    ToolName.PROPOSE_PLAN,
    ToolErrorClass.PERMANENT,
    f"only one plan is reviewed at a time: this reply called {ToolName.PROPOSE_PLAN} more than once, and only "
    "its first call went to the user. Put every unit in one plan.",
)
# A research turn mostly reads (search results, pages, the growing conversation): its output is a small part.
_OUTPUT_SHARE = 0.05


def plan_review_section(role: Role, *, enabled: bool) -> str:
    """The orchestrator's section on proposing the plan for review, with ``plan_review`` on; nothing otherwise."""
    return prompts.template(prompts.Prompt.PLAN_REVIEW) if role == Role.ORCHESTRATOR and enabled else ""


class ProposePlanArgs(BaseModel):
    units: list[PlanUnit] = Field(min_length=1, description="The research units, each with its brief.")


def estimate_plan(units: int, *, tier: Tier, unit_tokens: int, limits: BudgetLimits) -> PlanEstimate:
    """The plan's expected cost: ``unit_tokens`` per unit on the sub-agent's model, and as much again on the
    orchestrator's (planning, reading the findings, writing the report), at the tier's prices; cut to the
    run's token and dollar budgets, which bound any run whatever its plan."""
    tokens = unit_tokens * (units + 1)
    cost = units * _price(tier.subagent, unit_tokens) + _price(tier.research, unit_tokens)
    ceiling: float | None = None
    if limits.max_cost_usd > 0:
        ceiling = limits.max_cost_usd
    elif limits.max_total_tokens > 0:
        ceiling = max(_price(tier.subagent, limits.max_total_tokens), _price(tier.research, limits.max_total_tokens))
    capped = tokens > limits.max_total_tokens > 0 or (ceiling is not None and cost > ceiling)
    if tokens > limits.max_total_tokens > 0:
        cost *= limits.max_total_tokens / tokens
        tokens = limits.max_total_tokens
    if ceiling is not None:
        cost = min(cost, ceiling)
    return PlanEstimate(
        units=units,
        tokens=tokens,
        cost_usd=round(cost, 6),
        ceiling_usd=round(ceiling, 6) if ceiling is not None else None,
        capped=capped,
    )


def _price(spec: ModelSpec, tokens: int) -> float:
    output = round(tokens * _OUTPUT_SHARE)
    return spec.cost_usd(tokens - output, output)


def plan_text(units: Sequence[PlanUnit], estimate: PlanEstimate) -> str:
    """The plan as the reviewer reads it: the units with their briefs and expected sources, then the estimate."""
    lines = [f"Research plan: {len(units)} unit{'s' if len(units) != 1 else ''}."]
    for number, unit in enumerate(units, 1):
        sources = f" (expected sources: {', '.join(unit.expected_sources)})" if unit.expected_sources else ""
        lines.append(f"{number}. {unit.brief}{sources}")
    capped = ", cut to the run's budgets" if estimate.capped else ""
    ceiling = (
        f"the run's budgets allow at most ${estimate.ceiling_usd:.4f}"
        if estimate.ceiling_usd is not None
        else "the run has no token or dollar cap"
    )
    lines.append(f"Estimated cost: ${estimate.cost_usd:.4f} for about {estimate.tokens:,} tokens{capped}; {ceiling}.")
    return "\n".join(lines)


class PlanReviewMiddleware(AgentMiddleware):
    """``propose_plan`` and its review for the orchestrator; the approved units start without a model call."""

    def __init__(
        self,
        *,
        timeout_s: float,
        estimate: Callable[[int], PlanEstimate],
        rules: PlanRules,
        offered: bool = True,
    ) -> None:
        """``rules``: what a plan must be to start, proposed or edited (its size, the run's sub-agents);
        ``offered``: the model is shown ``propose_plan`` and no unit starts before a review (``plan_review``);
        off, the middleware only answers a resume of a plan another run's settings proposed."""
        super().__init__()
        not_negative("PlanReviewMiddleware", "timeout_s", timeout_s)
        if not isinstance(rules, PlanRules):
            raise KnobError("PlanReviewMiddleware", "rules", rules, "a PlanRules")
        self.timeout_s = timeout_s
        self.estimate = estimate
        self.rules = rules
        self.offered = offered
        self.tools: list[BaseTool] = [self._propose_plan_tool()]
        # Registered for a resume, never shown: the roster (what a run is offered) leaves these out.
        self.withheld: frozenset[str] = frozenset() if offered else frozenset({ToolName.PROPOSE_PLAN.value})

    def _propose_plan_tool(self) -> BaseTool:
        @tool(ToolName.PROPOSE_PLAN, args_schema=ProposePlanArgs, description=_TOOL_DESCRIPTION)
        async def propose_plan(units: list[PlanUnit], runtime: ToolRuntime) -> ToolMessage | Command:
            return self._review(list(units), runtime)

        return propose_plan

    def _review(self, units: list[PlanUnit], runtime: ToolRuntime) -> ToolMessage | Command:
        call_id = runtime.tool_call_id or ""
        units = [PlanUnit.model_validate(unit) for unit in units]
        if problem := self.rules.problem(units):
            text = f"the plan was not shown to the user: {problem}. Propose it again."
            return _result(call_id, tool_error_text(ToolName.PROPOSE_PLAN, ToolErrorClass.PERMANENT, text), error=True)
        estimate = self.estimate(len(units))
        answer = interrupt(_review_request(units, estimate))
        while True:
            if (expired := self._expired(runtime, call_id)) is not None:
                return expired
            try:
                decision = self._decision(answer, units)
                break
            except ReviewAnswerError as refused:
                answer = _ask_again(units, estimate, str(refused))
        if decision.type == "reject":
            said = f' They said: "{decision.message}".' if decision.message else ""
            return _result(
                call_id,
                f"The user rejected the plan; no unit has started.{said} Plan again from what they said and call "
                f"{ToolName.PROPOSE_PLAN} with the new plan.",
                error=True,
            )
        edited = decision.type == "edit"
        if edited:
            units = list(decision.units)
            estimate = self.estimate(len(units))
        current_run().attachments.attach(estimate)
        how = "approved the plan as they edited it" if edited else "approved the plan"
        text = f"The user {how}; its {len(units)} unit{'s' if len(units) != 1 else ''} start now."
        return ToolMessage(
            text,
            tool_call_id=call_id,
            name=ToolName.PROPOSE_PLAN,
            artifact={"units": [unit.model_dump() for unit in units], "cost_estimate": estimate.model_dump()},
        )

    def _decision(self, answer: Any, units: Sequence[PlanUnit]) -> ReviewDecision:
        """The answer's one valid decision on ``units``; an approval of a plan this graph's rules refuse (a
        resume on a graph built with other settings) can only be edited or rejected."""
        decision = read_review_answer(answer, self.rules)
        if decision.type == "approve" and (problem := self.rules.problem(units)):
            raise ReviewAnswerError(f"the plan cannot start as proposed, since {problem}; edit or reject it")
        return decision

    def _expired(self, runtime: ToolRuntime, call_id: str) -> Command | None:
        """The run's end when the plan is answered past ``timeout_s`` after it was proposed; None in time."""
        proposed_at = _proposed_at(runtime.state.get("messages") or [], call_id)
        if not self.timeout_s or proposed_at is None or time.time() - proposed_at <= self.timeout_s:
            return None
        detail = (
            f"The plan waited for its review longer than plan_review_timeout ({self.timeout_s:g} s), so it was "
            "not started. Ask again to get a new plan."
        )
        return Command(
            update={
                "messages": [_result(call_id, detail, error=True)],
                "run_error": RunError(reason=EndReason.PLAN_REVIEW_EXPIRED.value, detail=detail),
            }
        )

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        messages = request.state.get("messages") or []
        approved = _just_approved(messages)
        if approved is not None:
            calls = [
                {
                    "name": ToolName.TASK.value,
                    "args": {"description": unit.brief, "subagent_type": unit.subagent_type},
                    "id": f"call_{uuid.uuid4().hex[:24]}",
                    "type": "tool_call",
                }
                for unit in approved
            ]
            return ModelResponse(result=[AIMessage(content="", tool_calls=calls, name=Role.ORCHESTRATOR.value)])  # type: ignore[arg-type]
        if not self.offered:
            tools = [t for t in request.tools if getattr(t, "name", None) != ToolName.PROPOSE_PLAN]
            return await handler(request.override(tools=tools))
        response = await handler(request)
        refused: list[ToolMessage] = []
        for reply in response.result:
            if not isinstance(reply, AIMessage):
                continue
            proposals = [c for c in reply.tool_calls if c["name"] == ToolName.PROPOSE_PLAN]
            if proposals:
                reply.response_metadata[PROPOSED_AT_KEY] = time.time()
            # An answered call is not run: one interrupt, for the first proposal.
            refused += [_result(c["id"] or "", _ONE_PLAN, error=True) for c in proposals[1:]]
        if refused:
            return ModelResponse(result=[*response.result, *refused], structured_response=response.structured_response)
        return response

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
    ) -> ToolMessage | Command:
        call = request.tool_call
        messages = request.state.get("messages") or []
        if not self.offered and call["name"] == ToolName.PROPOSE_PLAN and _proposed_at(messages, call["id"]) is None:
            # Proposed on this graph, where the tool is not offered: no review pauses a run without plan review.
            text = tool_error_text(
                ToolName.PROPOSE_PLAN,
                ToolErrorClass.PERMANENT,
                f"this run has no plan review, so there is no plan to propose: start the units with {ToolName.TASK}.",
            )
            return _result(call["id"] or "", text, error=True)
        if self.offered and call["name"] == ToolName.TASK and not _approved_this_turn(messages):
            text = tool_error_text(
                ToolName.TASK,
                ToolErrorClass.PERMANENT,
                f"no unit starts before the user has reviewed the plan: call {ToolName.PROPOSE_PLAN} with every unit first.",
            )
            return ToolMessage(text, tool_call_id=call["id"], name=ToolName.TASK, status="error")
        return await handler(request)


def _result(call_id: str, text: str, *, error: bool = False) -> ToolMessage:
    return ToolMessage(text, tool_call_id=call_id, name=ToolName.PROPOSE_PLAN, status="error" if error else "success")


def _review_request(units: Sequence[PlanUnit], estimate: PlanEstimate, *, refused: str = "") -> HITLRequest:
    """The plan as one human-in-the-loop action request; ``refused``, the problem of the answer just refused,
    comes first in its description."""
    description = plan_text(units, estimate)
    action = ActionRequest(
        name=ToolName.PROPOSE_PLAN,
        args={"units": [unit.model_dump() for unit in units], "cost_estimate": estimate.model_dump()},
        description=f"{refused}\n\n{description}" if refused else description,
    )
    review = ReviewConfig(action_name=ToolName.PROPOSE_PLAN, allowed_decisions=list(DECISIONS))  # type: ignore[arg-type]
    return HITLRequest(action_requests=[action], review_configs=[review])


def _ask_again(units: Sequence[PlanUnit], estimate: PlanEstimate, problem: str) -> Any:
    """The next answer to the same plan, its description opening with why the last one was not used. Only
    the pause for the newest answer tells the client (a replayed refusal returns its answer, not raising)."""
    refused = (
        f"Your answer was not used: {problem}. The plan is still waiting for your review: approve, edit or reject it."
    )
    try:
        return interrupt(_review_request(units, estimate, refused=refused))
    except GraphInterrupt:
        emit(WarningStatus(reason=WarningReason.PLAN_REVIEW_ANSWER, detail=refused))
        raise


def _proposed_at(messages: Sequence[AnyMessage], call_id: str) -> float | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c.get("id") == call_id for c in message.tool_calls):
            stamp = message.response_metadata.get(PROPOSED_AT_KEY)
            return float(stamp) if isinstance(stamp, int | float) else None
    return None


def _approval(message: AnyMessage) -> list[PlanUnit] | None:
    if not (isinstance(message, ToolMessage) and message.name == ToolName.PROPOSE_PLAN and message.status != "error"):
        return None
    artifact = message.artifact if isinstance(message.artifact, dict) else {}
    return [PlanUnit.model_validate(unit) for unit in artifact.get("units") or ()] or None


def _just_approved(messages: Sequence[AnyMessage]) -> list[PlanUnit] | None:
    """The units of the plan the last message approved, which have not started yet."""
    return _approval(messages[-1]) if messages else None


def _approved_this_turn(messages: Sequence[AnyMessage]) -> bool:
    for message in reversed(messages):
        if is_user_turn(message):
            return False
        if _approval(message) is not None:
            return True
    return False
