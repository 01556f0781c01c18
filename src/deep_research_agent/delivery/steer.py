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
- a message that drops a topic ("drop Y", "skip Y", "forget about Y", "no need for Y", ``DROP_PHRASES``)
  stops the research units running now whose brief is about Y (``units_to_drop``, the one place that
  decides it): each is stopped at its next model call (``guards/budget.py``, as a wrap-up reaches units) and
  hands over what it found so far, marked ``halted: user`` with a gap naming the message; the ack lists the
  units it stops (``dropped_units``), or says that no running unit matches (the orchestrator still reads the
  message). Units not about Y, and every other message, leave the running units to finish as briefed (their
  findings are kept); the orchestrator's next step decides which units to start, drop or deepen.

Why not LangGraph's ``multitask_strategy="interrupt"`` with a new message: it cancels the running run, and
the units in flight with it; steering must keep them.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping

from langchain.agents.middleware import ModelRequest, ModelResponse

from ..domain.conversation import harness_message
from ..domain.per_role import PerRoleMiddleware
from ..protocol.events import MAX_STEER_CHARS, SteerReceivedStatus, emit
from ..run import Run, run_hook

__all__ = [
    "DROP_PHRASES",
    "FINISH_PHRASES",
    "SteeringMiddleware",
    "asks_to_finish",
    "dropped_topics",
    "serve_steering",
    "steering_text",
    "units_to_drop",
]

# A steering message starting with one of these (case and punctuation aside) asks the run to finish now.
FINISH_PHRASES = ("finish now", "finish up", "wrap up", "stop and report", "deliver now", "that is enough")
# A steering message with one of these (apostrophes aside) drops the topic that follows it.
DROP_PHRASES = (
    "drop",
    "skip",
    "forget about",
    "forget",
    "no need for",
    "no need to cover",
    "no need to research",
    "leave out",
    "dont cover",
    "do not cover",
    "stop researching",
    "never mind",
    "ignore",
)
_DROP = re.compile(
    r"\b(?:" + "|".join(sorted((re.escape(p) for p in DROP_PHRASES), key=len, reverse=True)) + r")\b(?P<topic>[^.;!?]*)"
)
# Where a dropped topic ends, and where one holds several ("drop Norway and Scotland").
_TOPIC_END = re.compile(r"\b(?:but|instead|then|also|because|since|keep|focus|cover|go deeper)\b")
_TOPIC_SPLIT = re.compile(r",|\band\b|\bor\b|&")
# A drop phrase counts where a request starts: at the message's start, after punctuation, or after one of these
# ("please skip Y", "and drop Y"), so "the price drop in 2024" or "don't skip Y" drops nothing.
_LEADS = frozenset("and but please also then just actually ok okay so now lets".split())
# Words that say nothing about which unit a topic is: articles, fillers, the words for a unit itself.
_FILLER = frozenset(
    "a an the of on about in into for to with from at by as its their this that these those it them any all "
    "more now anymore entirely completely altogether too please part parts bit bits topic topics unit units "
    "section sections angle angles question questions stuff thing things one ones research researching "
    "look looking side aspect aspects".split()
)


def dropped_topics(message: str) -> tuple[str, ...]:
    """The topics a steering message drops ("drop the Scotland part and skip prices": Scotland, prices), as
    their content words; empty for a message that drops nothing, or whose drop names no topic ("drop it")."""
    text = message.lower().replace("’", "'").replace("'", "")
    topics: list[str] = []
    for found in _DROP.finditer(text):
        before = text[: found.start()].rstrip()
        if before and before[-1] not in ",.;:!?-" and before.split()[-1] not in _LEADS:
            continue
        clause = _TOPIC_END.split(found["topic"], maxsplit=1)[0]
        for part in _TOPIC_SPLIT.split(clause):
            words = _content_words(part)
            if words:
                topics.append(" ".join(words))
    return tuple(dict.fromkeys(topics))


def units_to_drop(message: str, running: Mapping[str, str]) -> list[str]:
    """The running units (``task`` call id to brief) a steering message drops: those whose brief holds every
        content word of one dropped topic, each word compared by a crude stem (case, plural ``s``/``ies`` and
        punctuation aside).

        What it cannot match: synonyms and paraphrases ("drop the Nordic one" for a brief on Norway, "skip the
        costs" for one on prices), pronouns and references ("drop that", "skip the second unit"), other word forms
        than plurals ("economic" for "economy"), and a topic worded with more than the brief holds ("drop Scottish
        kelp farms" for "kelp output in Scotland"), and a drop inside a sentence rather than at a request's start
    ("we can drop Y"). A negated drop ("don't drop Y") drops nothing."""
    topics = [set(topic.split()) for topic in dropped_topics(message)]
    if not topics:
        return []
    return [
        task_id
        for task_id, brief in running.items()
        if any(topic <= set(_content_words(brief, keep_fillers=True)) for topic in topics)
    ]


def _content_words(text: str, *, keep_fillers: bool = False) -> list[str]:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))
    return [_stem(word) for word in words if keep_fillers or word not in _FILLER]


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


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
    topics = () if finish else dropped_topics(text)
    running = run.control.running_units
    dropped = run.control.drop_units(units_to_drop(text, running), text) if topics else []
    if finish:
        then = "every agent delivers what it has and the report is written"
    elif dropped:
        briefs = "; ".join(f'"{running[task_id][:80]}"' for task_id in dropped)
        units = f"{len(dropped)} running unit{'s' if len(dropped) != 1 else ''}"
        then = (
            f"it stops {units} it drops ({briefs}), each handing over what it found so far; the orchestrator "
            "reads it at its next step and other units finish"
        )
    elif topics:
        named = ", ".join(f'"{topic}"' for topic in topics)
        then = (
            f"no running research unit matches {named}, so none is stopped; the orchestrator reads it at its next step"
        )
    else:
        then = "the orchestrator reads it at its next step; units already running finish"
    emit(SteerReceivedStatus(message=text, detail=f"Steering message {count} received: {then}.", dropped_units=dropped))
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
