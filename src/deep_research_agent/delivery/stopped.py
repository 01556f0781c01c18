"""The turn after a stopped run opens with what that run had found.

Contract (orchestrator only; called as a turn opens): a thread whose state still holds a ``draft_report`` had
its last run cut short, since every run that reaches its end clears it (``RunLifecycleMiddleware``) and a run
cancelled mid-unit writes one (``handover/publish.py``). The new turn then opens with one AI message: a short
note that the previous run was stopped, that draft with its Sources linked (``readable_report``), and an offer
to continue. The orchestrator reads it as its own earlier answer, so "continue" picks the research up from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage

from ..evidence.store import EvidenceStore
from ..report.rendering import readable_report

STOPPED_NOTE = "The previous run was stopped before it finished; here is what it had found so far."
CONTINUE_OFFER = 'Say "continue" to pick the research up from here, or ask something else.'


def stopped_run_opening(state: Mapping[str, Any], evidence: EvidenceStore) -> AIMessage | None:
    """The opening message of a turn on a thread whose last run was stopped, or None when it was not."""
    draft = state.get("draft_report")
    if not isinstance(draft, str) or not draft.strip():
        return None
    return AIMessage(content=f"{STOPPED_NOTE}\n\n{readable_report(draft.strip(), evidence)}\n\n{CONTINUE_OFFER}")
