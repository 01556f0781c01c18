"""Follow-ups: a new message on a thread that holds a report is read against that report and the pages the
thread's earlier runs read first, answered from them when it can be, and researched only for what they lack.

Contract:
- ``follow_up_section``: the orchestrator's prompt section on follow-ups (every thread may hold an earlier
  report, so the orchestrator always has it); it asks the answer to say which parts come from the earlier
  research and which from new research;
- ``adopt_thread_evidence`` (called by the lifecycle as a follow-up run opens): every evidence text the
  thread's earlier runs stored (``run/archive.py``) is taken into the run's evidence with the time it was
  first retrieved (``EvidenceStore.adopt``, as a task's earlier sources are), so the report can cite an
  earlier source without fetching it again, and the report gate checks those claims against the same text;
  a thread with no store or no stored texts adopts nothing, and a store that cannot be read is logged and
  the run researches as a first run would.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from langgraph.store.base import BaseStore

from .. import prompts
from ..domain.names import Role
from ..run import Run, stored_evidence
from ..run.archive import evidence_record

__all__ = ["EARLIER_AGENT", "adopt_thread_evidence", "follow_up_section"]

logger = logging.getLogger(__name__)

# The agent an adopted earlier text is credited to: ``earlier:<run id>``, the run that read it.
EARLIER_AGENT = "earlier"


def follow_up_section(role: Role) -> str:
    """The orchestrator's section on follow-up questions; nothing for another role."""
    return prompts.template(prompts.Prompt.FOLLOW_UP) if role == Role.ORCHESTRATOR else ""


async def adopt_thread_evidence(store: BaseStore | None, run: Run, thread_id: str | None) -> int:
    """Take the texts the thread's earlier runs stored into ``run``'s evidence; returns how many."""
    if store is None or not thread_id:
        return 0
    try:
        stored = await stored_evidence(store, thread_id, adopted=False)
    except Exception:  # noqa: BLE001 - without the earlier texts the follow-up researches what it needs
        logger.warning("could not read the earlier evidence of thread %s", thread_id, exc_info=True)
        return 0
    for value in stored:
        run.evidence.adopt(replace(evidence_record(value), agent=f"{EARLIER_AGENT}:{value.get('run_id', '')}"))
    return len(stored)
