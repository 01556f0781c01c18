"""Optional (``remember_findings``, off by default): a delivered report's findings go into the knowledge base.

Contract: ``remember_findings(base, run, ...)`` stores one entry per finding the run's research units handed
over with a verbatim quote: the quote is the entry's text (what a later claim check reads) and the finding
its ``note``, under the finding's source. A finding without a quote is not stored: nothing could verify a
later citation of it. Writes are awaited; each failure is recorded in the run's ledger and announced, never
raised. Returns how many entries were stored.
"""

from __future__ import annotations

from ..domain.clock import utc_now_iso
from ..run import Run
from .base import MAX_ENTRY_CHARS, KnowledgeBase, KnowledgeEntry, entry_key
from .tools import store_entry


async def remember_findings(base: KnowledgeBase, run: Run, *, run_id: str, thread_id: str) -> int:
    stored = 0
    now = utc_now_iso()
    for findings in run.evidence.all_findings():
        for finding in findings.findings:
            quote = finding.evidence.strip()[:MAX_ENTRY_CHARS]
            if not quote or not finding.source.strip():
                continue
            entry = KnowledgeEntry(
                key=entry_key(quote, finding.source.strip()),
                text=quote,
                source=finding.source.strip(),
                remembered_at=now,
                run_id=run_id,
                thread_id=thread_id,
                note=finding.finding.strip(),
            )
            if await store_entry(base, entry, run) is None:
                stored += 1
    return stored
