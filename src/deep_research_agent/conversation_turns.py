"""Turn scoping: which messages belong to the user's current turn, for guards and the triage router.

Contract:
- a *real* user message is a ``HumanMessage`` that the harness did not inject (nudges, compaction
  summaries and other ``harness_message``s are not turns);
- the current turn starts at the last real user message, so harness messages never open a turn;
- a turn is identified by ``harness.turn_key`` (that message's id). Compaction keeps the request message,
  id included, verbatim, so compacting never starts a new turn and never resets per-turn counters;
- ``TurnCounters`` are per-turn counters that a middleware keeps in its own state: read them with
  ``counters_for_turn`` and write back what ``bump_counter`` returns; they read as zero once a new real
  user turn has begun.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from langchain_core.messages import AIMessage, AnyMessage

# The harness owns what a real user message is; guards import every turn helper from here.
from .conversation import is_user_turn as is_real_user_turn
from .conversation import turn_key


class TurnCounters(TypedDict):
    """Counters that belong to one user turn, named by ``turn`` (a ``turn_key``)."""

    turn: str
    counts: dict[str, int]


def last_real_user_index(messages: Sequence[AnyMessage]) -> int | None:
    """Index of the last real user message, or None when the transcript has none."""
    for index in range(len(messages) - 1, -1, -1):
        if is_real_user_turn(messages[index]):
            return index
    return None


def current_turn_start(messages: Sequence[AnyMessage]) -> int:
    """Index where the current turn starts: the last real user message (0 when there is none)."""
    index = last_real_user_index(messages)
    return 0 if index is None else index


def turn_messages(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The current turn: the last real user message and everything after it."""
    return list(messages[current_turn_start(messages) :])


def is_fresh_turn(messages: Sequence[AnyMessage]) -> bool:
    """True before the first model step of a turn: a real user message that no AI message has followed yet."""
    index = last_real_user_index(messages)
    if index is None:
        return False
    return not any(isinstance(message, AIMessage) for message in messages[index + 1 :])


def previous_turns(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Everything before the current turn: earlier turns and anything compaction left in front."""
    index = last_real_user_index(messages)
    return [] if index is None else list(messages[:index])


def counters_for_turn(stored: TurnCounters | None, messages: Sequence[AnyMessage]) -> TurnCounters:
    """The stored counters if they belong to the current turn, otherwise zeroed counters for it."""
    current = turn_key(messages)
    if stored is not None and stored["turn"] == current:
        return stored
    return TurnCounters(turn=current, counts={})


def bump_counter(
    stored: TurnCounters | None, messages: Sequence[AnyMessage], key: str, by: int = 1
) -> TurnCounters:
    """A new ``TurnCounters`` with ``key`` raised by ``by`` in the current turn (zeroed on a new turn)."""
    counters = counters_for_turn(stored, messages)
    counts = dict(counters["counts"])
    counts[key] = counts.get(key, 0) + by
    return TurnCounters(turn=counters["turn"], counts=counts)
