"""Answer gate: the one base of the sub-agents' gates that bounce a bad final answer once, then let it through.

Contract of ``AnswerGate`` (a ``PerRoleMiddleware`` wrapping the model call; a subclass sets ``label``,
``state_schema``, ``bounced_key``, ``reason`` and implements ``judge`` and ``bounce_text``):
- a reply with no tool call (and not the harness's) is the agent's final answer (``final_answer``); any
  other reply passes untouched;
- the answer is judged (``judge``, given the request it answers and what a bounce added to it); an answer
  whose verdict is ``ok`` is settled (``settle``) and passes as the model gave it;
- the first failing answer of the agent run is bounced once, within the same model step: a
  ``status: revising`` (``reason``, the verdict's problems in ``detail``) is sent, the model is asked again
  with the answer and a harness message (``bounce_text``); the answer and the revision stay in the
  conversation, the bounce is given to the re-ask only (only the user's words are human messages). The
  bounce is remembered in the agent run's private state under ``bounced_key``, so parallel sub-agents
  never share it and a sub-agent run bounces at most once;
- the revision, and any failing answer once the bounce is spent, is let through: judged, settled, and
  replaced by what can be handed over (``hand_over``; by default the answer as it is). A gate never asks a
  third time and never fails a run.

The orchestrator's gates share the idea, not this code: the report gate (``delivery/report_gate.py``) judges
a ``submit_report`` tool call, not a model reply, answers a bounce with an error tool result, and keeps the
bounced draft per user turn to judge the revision against; completion (``delivery/completion.py``) nudges
per kind of reply and per user turn, several times for an intent stub, and may halt the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar, Generic, Protocol, TypeVar

from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage

from ..domain.conversation import harness_message, is_harness_message, respond
from ..domain.names import RevisionReason
from ..domain.per_role import PerRoleMiddleware
from ..protocol.events import RevisingStatus, emit
from ..run import Run, run_hook


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


class AnswerGate(PerRoleMiddleware, Generic[V]):
    """Bounces an agent's failing final answer once per agent run, then lets the next one through."""

    bounced_key: ClassVar[str]
    reason: ClassVar[RevisionReason]

    async def judge(self, run: Run, text: str, request: ModelRequest, added: Sequence[AnyMessage]) -> V:
        """The verdict on the answer ``text`` to ``request``; ``added`` is what the bounce put after its messages."""
        raise NotImplementedError

    def bounce_text(self, problems: Sequence[str]) -> str:
        """The harness message that sends the answer back: what to fix, and that this is the one chance."""
        raise NotImplementedError

    def settle(self, run: Run, verdict: V) -> None:
        """What an answer that is let through leaves behind (staged findings, a shown script); none by default."""

    def hand_over(self, verdict: V, reply: AIMessage) -> AIMessage:
        """The answer as it is let through with ``verdict``; by default ``reply`` itself."""
        return reply

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        response = await handler(request)
        reply = final_answer(response)
        if reply is None:
            return response
        verdict = await self.judge(run, reply.text, request, ())
        if verdict.ok or request.state.get(self.bounced_key):
            self.settle(run, verdict)
            handed_over = reply if verdict.ok else self.hand_over(verdict, reply)
            return response if handed_over is reply else respond([*response.result[:-1], handed_over])
        emit(RevisingStatus(reason=self.reason, detail=" ".join(verdict.problems)))
        added: list[AnyMessage] = [*response.result, harness_message(self.bounce_text(verdict.problems))]
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
        return respond(response.result, model_response=retry, update={self.bounced_key: True})
