"""Answer gate: the one base of the gates that bounce an answer back with what to fix, then let it through.

Four gates share it: the research and extract sub-agents' findings gate (``handover/gate.py``), the coding
sub-agent's script gate (``handover/script.py``), the orchestrator's report gate
(``delivery/report_gate.py``) and its completion gate (``delivery/completion.py``). Contract of
``AnswerGate`` (a subclass sets ``gate_key`` and, when a bounce is announced, ``reason``):
- the answer is the reply that would end the agent's work (``final_answer``: an AI message of the model's
  with no tool call) or, for the report gate, a ``submit_report`` draft; the subclass judges it by its
  own rule;
- a failing answer of a kind (one kind for most gates; completion tells its kinds apart) is bounced at most
  ``allowance(kind)`` times per scope: the agent run for a sub-agent's gate, the user turn for the
  orchestrator's (``per_turn``). The bounces spent live in the agent run's private state
  (``<gate_key>_bounces``, with ``<gate_key>_turn`` for a turn-scoped gate), never checkpointed, so
  parallel sub-agents never share them;
- a bounce sends ``status: revising`` (``reason``, the problems in ``detail``) unless the gate has no
  ``reason``, and gives the model what to fix (``bounce_text``) without persisting it as a human message
  (only the user's words are human messages): a harness message to the re-ask, or an error tool result;
- once the allowance is spent the answer is let through, as it is or repaired by the gate. A gate never
  fails a run (only completion may halt one that keeps announcing without acting).

``SubAgentAnswerGate`` is the sub-agents' rule on top: one bounce per agent run, within the same model step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage

from ..domain.conversation import harness_message, is_harness_message, respond, turn_key
from ..domain.names import RevisionReason
from ..domain.per_role import PerRoleMiddleware
from ..protocol.events import RevisingStatus, emit
from ..run import Run, run_hook

ANSWER = "answer"


class Verdict(Protocol):
    """What a gate's judge says of an answer: whether it passes, and what to fix when not."""

    @property
    def ok(self) -> bool: ...

    @property
    def problems(self) -> list[str]: ...


V = TypeVar("V", bound=Verdict)


def final_answer(response: ModelResponse) -> AIMessage | None:
    """The reply when it ends the agent's work: an AI message of the model's with no tool call."""
    reply = response.result[-1] if response.result else None
    if not isinstance(reply, AIMessage) or reply.tool_calls or is_harness_message(reply):
        return None
    return reply


class AnswerGate(AgentMiddleware):
    """Bounces a failing answer back with what to fix, a bounded number of times per scope, then lets it through."""

    gate_key: ClassVar[str]
    reason: ClassVar[RevisionReason | None] = None
    per_turn: ClassVar[bool] = False

    def allowance(self, kind: str) -> int:
        """How many times per scope an answer of ``kind`` may be bounced; once by default."""
        return 1

    def bounces_spent(self, state: Mapping[str, Any], messages: Sequence[AnyMessage]) -> dict[str, int]:
        """The bounces already spent in this scope, by kind (a turn-scoped gate starts afresh each user turn)."""
        if self.per_turn and state.get(f"{self.gate_key}_turn") != turn_key(list(messages)):
            return {}
        return dict(state.get(f"{self.gate_key}_bounces") or {})

    def may_bounce(self, spent: Mapping[str, int], kind: str = ANSWER) -> bool:
        return spent.get(kind, 0) < self.allowance(kind)

    def spend(self, spent: Mapping[str, int], kind: str, messages: Sequence[AnyMessage]) -> dict[str, Any]:
        """The private-state update that records one more bounce of ``kind`` in this scope."""
        update: dict[str, Any] = {f"{self.gate_key}_bounces": {**spent, kind: spent.get(kind, 0) + 1}}
        if self.per_turn:
            update[f"{self.gate_key}_turn"] = turn_key(list(messages))
        return update

    def spent_after(self, update: Mapping[str, Any]) -> dict[str, int]:
        """The bounces spent once ``update`` (from ``spend``) is applied, by kind."""
        return dict(update[f"{self.gate_key}_bounces"])

    def announce(self, problems: Sequence[str]) -> None:
        """The ``status: revising`` of a bounce, when the gate announces its bounces."""
        if self.reason is not None:
            emit(RevisingStatus(reason=self.reason, detail=self.detail(problems)))

    def detail(self, problems: Sequence[str]) -> str:
        """The problems as the ``revising`` status shows them; all of them by default."""
        return " ".join(problems)

    def bounce_text(self, problems: Sequence[str]) -> str:
        """What the answer is sent back with: what to fix, and how many chances are left."""
        raise NotImplementedError

    def bounce_message(self, problems: Sequence[str]) -> AnyMessage:
        """The bounce as the harness's words to the re-ask (never persisted)."""
        return harness_message(self.bounce_text(problems))


class SubAgentAnswerGate(PerRoleMiddleware, AnswerGate, Generic[V]):
    """A sub-agent's gate: its failing final answer is bounced once per agent run, then the next one let through.

    A subclass sets ``label``, ``state_schema``, ``gate_key``, ``reason`` and implements ``judge`` and
    ``bounce_text``. The answer is judged (``judge``, given the request it answers and what a bounce added
    to it); an answer whose verdict is ``ok`` is settled (``settle``) and passes as the model gave it. The
    first failing answer is bounced within the same model step: the model is asked again with the answer
    and the bounce, and the answer and the revision stay in the conversation. The revision, and any failing
    answer once the bounce is spent, is judged, settled and replaced by what can be handed over
    (``hand_over``; by default the answer as it is). It never asks a third time.
    """

    async def judge(self, run: Run, text: str, request: ModelRequest, added: Sequence[AnyMessage]) -> V:
        """The verdict on the answer ``text`` to ``request``; ``added`` is what the bounce put after its messages."""
        raise NotImplementedError

    def settle(self, run: Run, verdict: V) -> None:
        """What an answer that is let through leaves behind (staged findings, a shown script); none by default."""

    def hand_over(self, verdict: V, reply: AIMessage) -> AIMessage:
        """The answer as it is let through with ``verdict``; by default ``reply`` itself."""
        return reply

    def bounce_for(self, verdict: V) -> AnyMessage:
        """The bounce of a failing answer; by default its problems (``bounce_message``)."""
        return self.bounce_message(verdict.problems)

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        response = await handler(request)
        reply = final_answer(response)
        if reply is None:
            return response
        verdict = await self.judge(run, reply.text, request, ())
        spent = self.bounces_spent(request.state, request.messages)
        if verdict.ok or not self.may_bounce(spent):
            self.settle(run, verdict)
            handed_over = reply if verdict.ok else self.hand_over(verdict, reply)
            return response if handed_over is reply else respond([*response.result[:-1], handed_over])
        self.announce(verdict.problems)
        added: list[AnyMessage] = [*response.result, self.bounce_for(verdict)]
        retry = await handler(request.override(messages=[*request.messages, *added]))
        second = final_answer(retry)
        if second is not None:
            again = await self.judge(run, second.text, request, added)
            self.settle(run, again)
            handed_over = second if again.ok else self.hand_over(again, second)
            if handed_over is not second:
                retry = ModelResponse(
                    result=[*retry.result[:-1], handed_over], structured_response=retry.structured_response
                )
        update = self.spend(spent, ANSWER, request.messages)
        return respond(response.result, model_response=retry, update=update)
