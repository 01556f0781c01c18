"""Steering: the user redirects a running run ("also cover X", "drop Y", "go deeper on Z", "finish now").

Contract:
- a client steers by putting an item in the LangGraph store at ``steer_namespace(run_id)`` (under
  ``STOP_REQUESTS_NAMESPACE``, the stop requests' channel) with any key and ``{"message": text}``; one item
  per message, so two messages sent within one poll both arrive. ``POST /steer/{thread_id}`` and
  ``./run.sh steer`` put it for the caller (``service/steering.py``);
- the stop-request poller (``stop.py``) reads them at its next tick (every ``POLL_S``), oldest first,
  deletes each, and ``serve_steering`` takes it: the run keeps the message (``RunControl.steering``, saved
  with its ledger) and emits ``status: steer_received`` with the message as typed, so the feed shows it
  within a second of its sending;
- a message that asks to finish (``asks_to_finish``: it starts with one of ``FINISH_PHRASES``) is also a
  wrap-up request: every agent delivers what it has and the report is written (``stop.py``);
- ``SteeringMiddleware`` (orchestrator only) adds every steering message so far to each of the
  orchestrator's model calls from then on, as harness text (``harness_message``), so the orchestrator reads
  it at its next step and keeps reading it after a compaction. It is never persisted as a human message:
  a human message in state opens a new turn (``turn_key``), which would end the run's turn mid-research.
  The user's words reach the feed through the status event instead;
- units already running finish as they were briefed (their findings are kept); the orchestrator's next step
  decides which units to start, drop or deepen.

Why not LangGraph's ``multitask_strategy="interrupt"`` with a new message: it cancels the running run, and
the units in flight with it; steering must keep them.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from langchain.agents.middleware import ModelRequest, ModelResponse

from ..domain.conversation import harness_message
from ..domain.per_role import PerRoleMiddleware
from ..protocol.events import MAX_STEER_CHARS, SteerReceivedStatus, emit
from ..run import Run, run_hook

__all__ = ["FINISH_PHRASES", "SteeringMiddleware", "asks_to_finish", "serve_steering", "steering_text"]

# A steering message starting with one of these (case and punctuation aside) asks the run to finish now.
FINISH_PHRASES = ("finish now", "finish up", "wrap up", "stop and report", "deliver now", "that is enough")


def asks_to_finish(message: str) -> bool:
    """True for a steering message that asks the run to deliver what it has now."""
    words = " ".join(re.sub(r"[^\w\s]", " ", message.lower().replace("'", "")).split())
    words = words.replace("thats enough", "that is enough")
    return any(words == phrase or words.startswith(phrase + " ") for phrase in FINISH_PHRASES)


def serve_steering(run: Run, message: object) -> bool:
    """Take one steering message for ``run``; False (and nothing sent) for one with no text. True when the
    message also asks the run to finish, which the caller serves as a wrap-up request."""
    if not isinstance(message, str) or not message.strip():
        return False
    text = message.strip()[:MAX_STEER_CHARS]
    count = run.control.add_steering(text)
    finish = asks_to_finish(text)
    then = (
        "every agent delivers what it has and the report is written"
        if finish
        else "the orchestrator reads it at its next step; units already running finish"
    )
    emit(SteerReceivedStatus(message=text, detail=f"Steering message {count} received: {then}."))
    return finish


def steering_text(messages: tuple[str, ...]) -> str:
    """The harness text that gives the orchestrator the user's steering messages."""
    listed = "\n".join(f'{number}. "{message}"' for number, message in enumerate(messages, start=1))
    return (
        "STEERING FROM THE USER: while this run was under way, the user sent these messages (oldest first; "
        f"a later one wins where they conflict):\n{listed}\n"
        "Adjust the rest of the run to them: start units for what they add or want covered more deeply, start "
        "none for what they drop and leave it out of the report, and keep the findings already handed back. "
        "Say in the report how you followed them."
    )


class SteeringMiddleware(PerRoleMiddleware):
    """Gives the orchestrator the user's steering messages at each of its model calls once there are any."""

    label = "Steering"

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse:
        if not run.control.steering:
            return await handler(request)
        steering = harness_message(steering_text(run.control.steering))
        return await handler(request.override(messages=[*request.messages, steering]))
