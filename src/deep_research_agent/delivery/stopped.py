"""The turn after a stopped run opens with what that run had found.

Contract (orchestrator only; called as a turn opens): a thread whose state still holds a ``draft_report`` had
its last run cut short, since every run that reaches its end clears it (``RunClosingMiddleware``) and a run
cancelled mid-unit writes one (``handover/publish.py``). The new turn then opens with one AI message: a short
note that the previous run was stopped, that draft with its Sources linked (``readable_report``), and an offer
to continue (named ``STOPPED_RUN_NAME``). The orchestrator reads it as its own answer before the user's message
(``model_view``): a chat that ends on an assistant message is a prefill to some servers (llama.cpp continues it),
and "continue" then reads as the reply to the offer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage

from ..domain.conversation import last_user_index
from ..evidence.store import EvidenceStore
from ..report.rendering import readable_report

STOPPED_NOTE = "The previous run was stopped before it finished; here is what it had found so far."
CONTINUE_OFFER = 'Say "continue" to pick the research up from here, or ask something else.'
STOPPED_RUN_NAME = "dra_stopped_run"


def stopped_run_opening(state: Mapping[str, Any], evidence: EvidenceStore) -> AIMessage | None:
    """The opening message of a turn on a thread whose last run was stopped, or None when it was not."""
    draft = state.get("draft_report")
    if not isinstance(draft, str) or not draft.strip():
        return None
    text = f"{STOPPED_NOTE}\n\n{readable_report(draft.strip(), evidence)}\n\n{CONTINUE_OFFER}"
    return AIMessage(content=text, name=STOPPED_RUN_NAME)


def model_view(messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
    """``messages`` with a turn's opening note moved before the user's message it follows; None without one."""
    user = last_user_index(messages)
    if user is None or user + 1 >= len(messages):
        return None
    opening = messages[user + 1]
    if not isinstance(opening, AIMessage) or opening.name != STOPPED_RUN_NAME:
        return None
    return [*messages[:user], opening, messages[user], *messages[user + 2 :]]
