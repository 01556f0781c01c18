"""Loop guard: an agent that keeps making the same tool call and getting the same answer is stopped.

Contract (one instance per agent graph, orchestrator and every sub-agent):
- a call's fingerprint is its tool name, its arguments in canonical form and the first 1,000 characters
  of its result; the same tool with other arguments (paging, a new query) is a different call;
- each agent keeps its own window of its last 10 fingerprints in private state, so parallel sub-agents
  never share counts; the window and the nudge count reset when the user starts a new turn;
- at the model call after each batch of tool results, the most repeated fingerprint of the batch is
  counted in the window: at 3 repeats the call gets a break-the-loop nudge (kept in the conversation)
  and ``status: loop_detected`` is sent (at most 2 nudges per turn); at 6, ``status: loop_halt``, the
  call does not start and the agent stops. A halted sub-agent hands back what
  it has, marked as halted by the loop guard, and the run goes on; a halted orchestrator ends the run
  with a salvaged report.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.channels import UntrackedValue

from ..domain.conversation import harness_message, respond, turn_key
from ..domain.per_role import PerRoleMiddleware
from ..domain.stops import StopCause
from ..protocol.events import LoopDetectedStatus, LoopHaltStatus, emit
from ..run import Halt, Run, run_hook
from .halting import stop_agent

WINDOW = 10
NUDGE_AT = 3
HALT_AT = 6
MAX_NUDGES_PER_TURN = 2
RESULT_CHARS = 1000


def fingerprint(tool: str, args: Any, result: str) -> str:
    """Identity of one call: tool, canonical arguments and the head of the result."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(f"{tool}\x00{canonical}\x00{result[:RESULT_CHARS]}".encode()).hexdigest()


def advance(window: Sequence[str], fingerprints: Sequence[str]) -> tuple[list[str], int]:
    """The window after these calls, and how often the most repeated of them now appears in it."""
    updated = [*window, *fingerprints][-WINDOW:]
    repeats = max((updated.count(fp) for fp in fingerprints), default=0)
    return updated, repeats


def latest_tool_batch(messages: Sequence[AnyMessage]) -> tuple[str, list[tuple[str, Any, str]]] | None:
    """The newest model turn's tool calls with their results, in call order, keyed by the first call id."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            if not message.tool_calls:
                return None
            results = {m.tool_call_id: m.text for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
            calls = [
                (c["name"], c.get("args") or {}, results[c["id"]]) for c in message.tool_calls if c["id"] in results
            ]
            return (message.tool_calls[0]["id"] or f"index-{index}", calls) if calls else None
    return None


class LoopGuardState(AgentState):
    loop_window: NotRequired[Annotated[list[str], PrivateStateAttr, UntrackedValue]]
    loop_batch: NotRequired[Annotated[str | None, PrivateStateAttr, UntrackedValue]]
    loop_turn: NotRequired[Annotated[str | None, PrivateStateAttr, UntrackedValue]]
    loop_nudges: NotRequired[Annotated[int, PrivateStateAttr, UntrackedValue]]


class LoopGuardMiddleware(PerRoleMiddleware):
    """Nudges at 3 identical calls in the last 10 and stops the agent at 6."""

    label = "LoopGuard"
    state_schema = LoopGuardState

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse | ExtendedModelResponse:
        messages = request.messages
        state = request.state
        batch = latest_tool_batch(messages)
        if batch is None or batch[0] == state.get("loop_batch"):
            return await handler(request)
        batch_id, calls = batch
        turn = turn_key(messages)
        same_turn = state.get("loop_turn") == turn
        window = state.get("loop_window", []) if same_turn else []
        nudges = state.get("loop_nudges", 0) if same_turn else 0

        window, repeats = advance(window, [fingerprint(*call) for call in calls])
        update: dict[str, Any] = {
            "loop_window": window,
            "loop_batch": batch_id,
            "loop_turn": turn,
            "loop_nudges": nudges,
        }
        if repeats >= HALT_AT:
            tool = _most_repeated_tool(calls, window)
            detail = (
                f"{tool} returned the same result for the same arguments {repeats} times in the last {WINDOW} calls"
            )
            emit(LoopHaltStatus(repeats=repeats, detail=detail))
            halt = Halt(cause=StopCause.LOOP, detail=detail)
            return respond([stop_agent(run, self.role, messages, halt=halt)], update=update)
        if repeats >= NUDGE_AT and nudges < MAX_NUDGES_PER_TURN:
            tool = _most_repeated_tool(calls, window)
            emit(LoopDetectedStatus(repeats=repeats, detail=f"{tool} repeated with the same arguments and result"))
            update["loop_nudges"] = nudges + 1
            # Given to this call only: only the user's words are human messages in the thread.
            request = request.override(messages=[*messages, harness_message(_nudge(tool, repeats))])
        return respond([], model_response=await handler(request), update=update)


def _most_repeated_tool(calls: list[tuple[str, Any, str]], window: list[str]) -> str:
    return max(calls, key=lambda call: window.count(fingerprint(*call)))[0]


def _nudge(tool: str, repeats: int) -> str:
    return (
        f"LOOP DETECTED: you called {tool} {repeats} times with the same arguments and got the same result each "
        "time. Repeating it will not give you anything new. Change approach (a different query, page or source), "
        f"or finish now with what you have. After {HALT_AT} identical calls you will be stopped."
    )
