"""Pre-triage router: a simple question is answered in two tiny calls, without the orchestrator's harness.

Contract (orchestrator only):
- runs once per turn, in the orchestrator's first model call after a real user message (outside its guard
  chain, so the router's calls are metered as ``triage`` side calls, not as orchestrator steps);
- a message of up to 1,500 characters gets one small, tool-less, non-streamed call on the tier's
  ``research`` model (``prompts/triage.md``, requests named ``triage``) that answers SIMPLE or RESEARCH;
- SIMPLE (greetings, definitions, general knowledge) is answered by one more small call
  (``prompts/direct_answer.md``, requests named ``direct-answer``), which stands in for the orchestrator's
  reply: it calls no tool, so the turn ends, and the orchestrator's model, prompt and tools are never
  loaded: at most 2 model calls in all;
- a message that asks for sources, citations or research (``asks_for_research``) is RESEARCH without asking
  the router; a definition question that merely names sources, a table or two things compared ("TCP vs
  UDP?") goes to the router. ``research_request`` may widen that rule: the assist's also sends tables and
  comparisons to research, because small routers call every question SIMPLE;
- RESEARCH, longer messages, answers to clarifying questions, and any router failure (an exception, an
  unparseable verdict, an empty answer) fall through to the full agent. A follow-up on a thread that
  already holds a ``final_report`` is RESEARCH unless plainly SIMPLE: the full agent has the report in
  context;
- with a ``reader`` shape whose language is told (``report_language``: a code, or ``auto`` and a question not in
  English), the direct answer is asked for in that language (``prompts/answer_language.md``); the run's told
  language is the one the orchestrator's report would be in (``delivery/reader.run_language``);
- emits one ``status: triage`` per turn with ``detail`` ``simple`` or ``research`` and a ``reason``;
- state: ``triage_verdict`` is ``"simple"`` or ``"research"``, set in the first model call of every turn,
  so the end-of-run hook can tell a direct answer apart.

Not langchain's ModelRouterMiddleware: it only picks the model for the full agent and cannot end the turn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from functools import cached_property
from typing import Annotated, Literal, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.channels import UntrackedValue
from langgraph.constants import TAG_NOSTREAM
from langgraph.types import Command

from .. import prompts
from ..delivery.clarification import prose_questions
from ..delivery.reader import ReaderShape, run_language
from ..domain.conversation import is_fresh_turn, previous_turns, turn_messages
from ..domain.knobs import KnobError, callable_knob
from ..domain.names import Role, ToolName, TriageReason
from ..domain.reader import language_name
from ..protocol.events import TriageStatus, emit
from ..run import Run, UsageMeter, run_hook
from ..settings import Slot

logger = logging.getLogger(__name__)

# Builds the model of one slot for one role (the graph binds it to the run's settings).
ModelFactory = Callable[[Slot, Role], BaseChatModel]
Verdict = Literal["simple", "research"]

MAX_TRIAGE_CHARS = 1500
VERDICT_MAX_TOKENS = 64
ANSWER_MAX_TOKENS = 400
_REPORT_TITLE_CHARS = 120
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
# Asking for sources: citing, "with sources", "give references", "sources please", "any sources?".
_SOURCES_REQUEST = re.compile(
    r"\b(?:cite|cited|citing|sourced)\b"
    r"|\b(?:with|include|including|add|give|list|provide|show)\b\W+(?:\w+\W+){0,3}?(?:sources|citations|references|links)\b"
    r"|\b(?:sources|citations|references)\s*(?:please\b|pls\b|\?)",
    re.IGNORECASE,
)
# Asking for research: "Research X", "do some research on", "research into", "can you look into", "investigate".
_RESEARCH_ASKED = re.compile(
    r"^\W*(?:please\s+)?(?:research|investigate)\b"
    r"|\b(?:do|run|conduct|some|deep|thorough|more|need|want)\s+research\b"
    r"|\bresearch\s+(?:on|into|about|how|why|what|whether|this|these|it)\b"
    r"|\b(?:investigate|look\s+into|dig\s+into|deep[-\s]dive)\b",
    re.IGNORECASE,
)


class TriageState(AgentState):
    triage_verdict: NotRequired[Annotated[Verdict | None, PrivateStateAttr, UntrackedValue]]


def parse_verdict(text: str) -> Verdict | None:
    """SIMPLE or RESEARCH from the router's reply, ignoring case, punctuation, markup and a "Verdict:" label.

    Anything else (prose, both words, nothing) is None, which the caller treats as RESEARCH.
    """
    words = re.sub(r"[^A-Za-z]+", " ", _THINKING.sub(" ", text)).upper().split()
    if words[:1] == ["VERDICT"]:
        words = words[1:]
    if words == ["SIMPLE"]:
        return "simple"
    if words == ["RESEARCH"]:
        return "research"
    return None


def asks_for_research(question: str) -> bool:
    """True when the message asks for sources, citations or research: work only research does. Naming sources,
    a table or a comparison is not asking ("What are the main sources of iron?", "TCP vs UDP?")."""
    return bool(_SOURCES_REQUEST.search(question) or _RESEARCH_ASKED.search(question))


def awaits_answers(previous: Sequence[AnyMessage]) -> bool:
    """True when the previous turn ended asking the user clarifying questions (tool call or prose)."""
    last_turn = turn_messages(previous)
    ai_messages = [message for message in last_turn if isinstance(message, AIMessage)]
    if any(call["name"] == ToolName.REQUEST_CLARIFICATION for message in ai_messages for call in message.tool_calls):
        return True
    return bool(ai_messages) and not ai_messages[-1].tool_calls and bool(prose_questions(ai_messages[-1].text))


def report_title(report: str) -> str:
    """The first line of a Markdown report, without heading marks, short enough for a tiny prompt."""
    first = next((line for line in report.splitlines() if line.strip()), "")
    return first.strip().lstrip("#").strip()[:_REPORT_TITLE_CHARS]


class TriageRouterMiddleware(AgentMiddleware):
    """Routes each fresh user turn: SIMPLE is answered directly, everything else runs the full agent."""

    state_schema = TriageState

    def __init__(
        self,
        *,
        model_factory: ModelFactory,
        on_model_response: Callable[[UsageMeter, AIMessage], None] | None = None,
        research_request: Callable[[str], bool] = asks_for_research,
        reader: ReaderShape | None = None,
    ) -> None:
        """``model_factory(slot, role)``: builds the router's two models (the ``research`` slot, for the
        ``triage`` and ``direct-answer`` roles) on first use; ``on_model_response``: sees each of their replies;
        ``research_request``: whether a message asks for research, so the router is not asked; ``reader``: the
        report's shape, whose language a direct answer is written in."""
        callable_knob(type(self).__name__, "model_factory", model_factory)
        callable_knob(type(self).__name__, "on_model_response", on_model_response, optional=True)
        callable_knob(type(self).__name__, "research_request", research_request)
        if reader is not None and not isinstance(reader, ReaderShape):
            raise KnobError(type(self).__name__, "reader", reader, "a ReaderShape or None")
        super().__init__()
        self.reader = reader
        self.model_factory = model_factory
        self.on_model_response = on_model_response
        self.research_request = research_request

    @cached_property
    def verdict_model(self) -> BaseChatModel:
        # Built on first use and bound to no tools: the router must not carry the orchestrator's harness.
        return self.model_factory("research", Role.TRIAGE)

    @cached_property
    def answer_model(self) -> BaseChatModel:
        # The same slot as the verdict's, built for a role of its own so its requests name it.
        return self.model_factory("research", Role.DIRECT_ANSWER)

    # Inside the orchestrator's first model call of a turn, not a hook: a hook is a graph step of its own.
    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        if not is_fresh_turn(request.messages):
            return await handler(request)
        answer = await self._route(run, request.messages, request.state.get("final_report") or "")
        if answer is None:
            verdict, response = "research", await handler(request)
        else:
            verdict, response = "simple", ModelResponse(result=[answer])
        return ExtendedModelResponse(model_response=response, command=Command(update={"triage_verdict": verdict}))

    async def _route(self, run: Run, messages: Sequence[AnyMessage], report: str) -> AIMessage | None:
        """The direct answer of a SIMPLE turn, or None when the full agent should run."""
        question = turn_messages(messages)[0].text
        if len(question) > MAX_TRIAGE_CHARS:
            return _research(TriageReason.LONG_MESSAGE)
        if awaits_answers(previous_turns(messages)):
            return _research(TriageReason.CLARIFICATION_ANSWER)
        if self.research_request(question):
            return _research(TriageReason.RESEARCH_REQUEST)
        verdict = await self._classify(run.usage, question, report)
        if verdict is None:
            return _research(TriageReason.ROUTER_FAILED)
        if verdict == "research":
            return _research(TriageReason.CLASSIFIED)
        language = await run_language(run, self.reader, messages) if self.reader is not None else None
        answer = await self._answer(run.usage, question, language)
        if answer is None:
            return _research(TriageReason.ANSWER_FAILED)
        emit(TriageStatus(detail="simple", reason=TriageReason.CLASSIFIED))
        return answer

    async def _classify(self, usage: UsageMeter, question: str, report: str) -> Verdict | None:
        content = question
        if report:
            content = (
                f'Context: this thread already holds a research report, "{report_title(report)}". '
                f"Questions about it are RESEARCH.\n\nMessage:\n{question}"
            )
        reply = await self._call(
            usage,
            self.verdict_model,
            [SystemMessage(prompts.template(prompts.Prompt.TRIAGE)), HumanMessage(content)],
            max_tokens=VERDICT_MAX_TOKENS,
            # The verdict is plumbing, not thinking: it must never reach the client's message stream.
            tags=[TAG_NOSTREAM],
        )
        return None if reply is None else parse_verdict(reply.text)

    async def _answer(self, usage: UsageMeter, question: str, language: str | None) -> AIMessage | None:
        system = prompts.render(prompts.Prompt.DIRECT_ANSWER)
        if language is not None:
            system += "\n\n" + prompts.fill(prompts.Prompt.ANSWER_LANGUAGE, language=language_name(language))
        reply = await self._call(
            usage,
            self.answer_model,
            [SystemMessage(system), HumanMessage(question)],
            max_tokens=ANSWER_MAX_TOKENS,
            tags=[],
        )
        if reply is None or not reply.text.strip() or reply.tool_calls:
            return None
        return reply

    async def _call(
        self, usage: UsageMeter, model: BaseChatModel, prompt: list[AnyMessage], *, max_tokens: int, tags: list[str]
    ) -> AIMessage | None:
        """One small router call, metered in ``usage``; None when it fails, because a failed router must never
        fail the turn."""
        try:
            reply = await model.ainvoke(
                prompt, config={"tags": tags, "metadata": {"lc_source": "triage"}}, max_tokens=max_tokens
            )
        except Exception as exc:  # any failure means: run the full agent
            logger.warning("triage call failed, running the full agent: %s: %s", type(exc).__name__, exc)
            return None
        if not isinstance(reply, AIMessage):
            return None
        if self.on_model_response is not None:
            self.on_model_response(usage, reply)
        return reply


def _research(reason: TriageReason) -> None:
    emit(TriageStatus(detail="research", reason=reason))
