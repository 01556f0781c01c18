"""The claim judge's model call: one small, tool-less, non-streamed request on the tier's utility model.

Contract: ``claim_judge(enabled=..., utility=..., model_factory=...)`` is the report gate's judge
(``report/judge.py`` builds the prompt and reads the answer) when ``enabled`` (the graph passes
``ResearchConfig.judges_claims``), else None; the gate binds it to the run's usage meter with
``for_run(usage)``. Each call sends the system and user prompt to the ``utility`` slot's model as role
``claim-judge`` (named in every request's ``X-DRA-Agent`` header), tagged so nothing of it reaches the client's message stream, and meters
it as a side call of that role (``modelcalls.metering.side_call_meter``): its tokens and cost are in the
run's usage, its ``per_role`` and the budgets. It raises what the model raises: the report gate's judge
runner turns any failure into a warning and keeps the deterministic verdicts.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM

from ..domain.knobs import callable_knob, not_negative
from ..domain.names import Role
from ..modelcalls.metering import side_call_meter
from ..report.judge import JudgeCall
from ..run import UsageMeter
from ..settings import ModelSpec, Slot

ModelFactory = Callable[[Slot, Role], BaseChatModel]

# About 60 tokens a verdict, for the most claims a batch holds.
JUDGE_MAX_TOKENS = 2000
JUDGE_TIMEOUT_S = 90.0


class ModelClaimJudge:
    """Asks the utility model for verdicts; one instance per graph, its model built on first use."""

    def __init__(
        self,
        *,
        model_factory: ModelFactory,
        on_model_response: Callable[[UsageMeter, AIMessage], None] | None = None,
    ) -> None:
        callable_knob("ModelClaimJudge", "model_factory", model_factory)
        callable_knob("ModelClaimJudge", "on_model_response", on_model_response, optional=True)
        self.model_factory = model_factory
        self.on_model_response = on_model_response

    @cached_property
    def model(self) -> BaseChatModel:
        return self.model_factory("utility", Role.CLAIM_JUDGE)

    def for_run(self, usage: UsageMeter) -> JudgeCall:
        """The judge call of one run, metered on that run's usage."""

        async def call(system: str, user: str) -> str:
            return await self.ask(usage, system, user)

        return call

    async def ask(self, usage: UsageMeter, system: str, user: str) -> str:
        reply = await self.model.ainvoke(
            [SystemMessage(system), HumanMessage(user)],
            config={"tags": [TAG_NOSTREAM], "metadata": {"lc_source": "claim_judge"}},
            max_tokens=JUDGE_MAX_TOKENS,
        )
        if not isinstance(reply, AIMessage):
            raise TypeError(f"the judge model returned {type(reply).__name__}, not a message")
        if self.on_model_response is not None:
            self.on_model_response(usage, reply)
        return reply.text


def claim_judge(*, enabled: bool, utility: ModelSpec, model_factory: ModelFactory) -> ModelClaimJudge | None:
    """The report gate's judge, metered at the prices of the tier's ``utility`` model; None when not ``enabled``."""
    if not enabled:
        return None
    return ModelClaimJudge(model_factory=model_factory, on_model_response=side_call_meter(Role.CLAIM_JUDGE, utility))


def judge_timeout(request_timeout: float) -> float:
    """Seconds one judge call may take: the model ``request_timeout`` (0: none), at most ``JUDGE_TIMEOUT_S``; a
    negative or non-finite one is refused with a ``KnobError``."""
    not_negative("judge_timeout", "request_timeout", request_timeout)
    return min(request_timeout or JUDGE_TIMEOUT_S, JUDGE_TIMEOUT_S)
