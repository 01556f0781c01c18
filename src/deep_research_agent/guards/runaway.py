"""Runaway-output guard: a reply that degenerates into repetition, or hits the output cap, is cut back.

Contract (one instance per agent graph, orchestrator and every sub-agent):
- a reply is a runaway when it repeats itself (``detect_repetition``) or ends with ``finish_reason``
  ``length``; replies under 2,000 characters are never judged for repetition;
- a runaway reply is replaced by its useful head; its tool calls are dropped unless they are complete
  (the reply was not cut by the cap, or its calls were read from its text, each a whole JSON object), in
  which case the agent simply carries on with them;
- the first runaway of a user turn sends ``status: runaway_output`` and, within the same model step, one
  nudge to continue: the model is asked again with the trimmed reply and the nudge; the trimmed reply and
  the next one are kept in the conversation, the nudge is given to the re-ask only (only the user's words
  are human messages). The second runaway of the turn sends ``status: runaway_halt`` and stops the
  agent (a sub-agent hands back what it has; the orchestrator's run ends with a salvaged report).

Repetition is judged on fragments: the text split at newlines and punctuation (runs without any are
split into words), lower-cased, digits replaced by ``#`` so "BTC2026, BTC2027" are one fragment, and
only fragments with a letter in them. A reply repeats itself when one fragment fills half of the last 30,
or when its fragments are very few distinct ones.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, NotRequired

from langchain.agents.middleware import AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.channels import UntrackedValue

from ..domain.conversation import harness_message, respond, turn_key
from ..domain.names import RunawayKind
from ..domain.per_role import PerRoleMiddleware
from ..domain.stops import StopCause
from ..modelcalls.text_tool_calls import TEXT_TOOL_CALLS_KEY
from ..protocol.events import RunawayHaltStatus, RunawayOutputStatus, emit
from ..run import Halt, Run, run_hook
from .halting import stop_agent

MIN_JUDGED_CHARS = 2000
MIN_FRAGMENTS = 20
TAIL_FRAGMENTS = 30
TAIL_DOMINANCE = 0.5
MIN_DIVERSITY = 0.2
NOVELTY_RUN = 10
_LONG_FRAGMENT_CHARS = 200

_FRAGMENT = re.compile(r"[^\n.,;:!?]+")
_WORD = re.compile(r"\S+")
_DIGITS = re.compile(r"\d+")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Fragment:
    start: int
    key: str


@dataclass(frozen=True)
class Runaway:
    kind: RunawayKind
    head: str


def fragments(text: str) -> list[Fragment]:
    """The judged fragments of ``text`` with their spans; see the module docstring."""
    found: list[Fragment] = []
    for match in _FRAGMENT.finditer(text):
        if len(match.group()) <= _LONG_FRAGMENT_CHARS:
            spans = [match.span()]
        else:
            spans = [(match.start() + w.start(), match.start() + w.end()) for w in _WORD.finditer(match.group())]
        for start, end in spans:
            raw = text[start:end]
            key = _DIGITS.sub("#", raw.strip().lower())
            if key and _LETTER.search(key):
                found.append(Fragment(start + len(raw) - len(raw.lstrip()), key))
    return found


def detect_repetition(text: str) -> str | None:
    """The useful head of ``text`` when it degenerated into repetition, else None."""
    if len(text) < MIN_JUDGED_CHARS:
        return None
    frags = fragments(text)
    if len(frags) < MIN_FRAGMENTS:
        return None
    tail = frags[-TAIL_FRAGMENTS:]
    dominant_count = Counter(f.key for f in tail).most_common(1)[0][1]
    diversity = len({f.key for f in frags}) / len(frags)
    if dominant_count / len(tail) < TAIL_DOMINANCE and diversity > MIN_DIVERSITY:
        return None
    return _head_before_repetition(text, frags)


def judge(text: str, finish_reason: str | None) -> Runaway | None:
    head = detect_repetition(text)
    if head is not None:
        return Runaway(RunawayKind.REPETITION, head)
    if finish_reason == "length":
        return Runaway(RunawayKind.LENGTH, _head_at_boundary(text))
    return None


def _head_before_repetition(text: str, frags: list[Fragment]) -> str:
    """Text up to where novelty stops: the first run of NOVELTY_RUN fragments that were all seen before."""
    seen: set[str] = set()
    run_start, run = 0, 0
    for index, fragment in enumerate(frags):
        if fragment.key in seen:
            run_start = index if run == 0 else run_start
            run += 1
            if run >= NOVELTY_RUN:
                return _clean_cut(text[: frags[run_start].start])
        else:
            run = 0
            seen.add(fragment.key)
    return _clean_cut(text[: frags[-TAIL_FRAGMENTS].start])


def _head_at_boundary(text: str) -> str:
    """A reply cut by the output cap, back to its last paragraph or sentence end."""
    for boundary in ("\n\n", ". ", "\n"):
        cut = text.rfind(boundary)
        if cut >= len(text) // 2:
            return _clean_cut(text[: cut + 1])
    return _clean_cut(text)


def _clean_cut(head: str) -> str:
    return head.rstrip().rstrip(",;:").rstrip()


class RunawayState(AgentState):
    runaway_turn: NotRequired[Annotated[str | None, PrivateStateAttr, UntrackedValue]]
    runaway_count: NotRequired[Annotated[int, PrivateStateAttr, UntrackedValue]]


class RunawayOutputMiddleware(PerRoleMiddleware):
    """Trims degenerate or capped replies; nudges once per turn, stops the agent on the second."""

    label = "RunawayOutput"
    state_schema = RunawayState

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        turn = turn_key(request.messages)
        count = request.state.get("runaway_count", 0) if request.state.get("runaway_turn") == turn else 0
        added: list[AnyMessage] = []
        kept: list[AnyMessage] = []
        attempt = request
        while True:
            response = await handler(attempt)
            reply = response.result[-1] if response.result else None
            verdict = (
                judge(reply.text, reply.response_metadata.get("finish_reason"))
                if isinstance(reply, AIMessage)
                else None
            )
            if verdict is None:
                counted = {"runaway_turn": turn, "runaway_count": count} if added else None
                return respond(kept, model_response=response, update=counted)
            finish_reason = reply.response_metadata.get("finish_reason")
            text = reply.text
            count += 1
            whole_calls = finish_reason != "length" or bool(reply.response_metadata.get(TEXT_TOOL_CALLS_KEY))
            keeps_tool_calls = bool(reply.tool_calls) and whole_calls and count == 1
            trimmed = reply.model_copy(
                update={
                    "content": verdict.head,
                    "tool_calls": reply.tool_calls if keeps_tool_calls else [],
                    "invalid_tool_calls": reply.invalid_tool_calls if keeps_tool_calls else [],
                }
            )
            update = {"runaway_turn": turn, "runaway_count": count}
            chars, kept_chars = len(text), len(verdict.head)
            if count >= 2:
                detail = f"a second runaway reply ({verdict.kind}) in the same turn"
                emit(RunawayHaltStatus(reason=verdict.kind, detail=detail, chars=chars, kept_chars=kept_chars))
                halt = Halt(cause=StopCause.RUNAWAY, detail=detail)
                conversation = [*request.messages, *added, trimmed]
                stop = stop_agent(run, self.role, conversation, halt=halt)
                return respond([*kept, *response.result[:-1], trimmed, stop], update=update)
            emit(
                RunawayOutputStatus(
                    reason=verdict.kind, detail=f"reply trimmed ({verdict.kind})", chars=chars, kept_chars=kept_chars
                )
            )
            if keeps_tool_calls:
                return respond([*kept, *response.result[:-1], trimmed], update=update)
            kept += [*response.result[:-1], trimmed]
            added += [*response.result[:-1], trimmed, harness_message(_nudge(verdict))]
            attempt = request.override(messages=[*request.messages, *added])


def _nudge(verdict: Runaway) -> str:
    if verdict.kind == RunawayKind.REPETITION:
        what = f"degenerated into repetition and was cut after {len(verdict.head):,} characters"
    else:
        what = "hit the output limit and was cut"
    return (
        f"RUNAWAY OUTPUT: your last reply {what}. Continue from where its useful part ends, without repeating "
        "yourself and more concisely. If it was your final answer, write that answer again in full, shorter."
    )
