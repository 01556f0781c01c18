"""Vetting a report against what the run retrieved: the one place a report is judged before it leaves.

Contract:
- ``vet_report(markdown, evidence, previous=...)`` scrubs the draft (``scrub_report``), gives corpus
  passages their readable Sources lines (``corpora.citing``), lints its
  numbering (``lint_citations``) and checks every citation against the run's evidence and findings
  (``check_citations``). ``problems`` lists what the writer should fix; ``previous`` is the verdict on
  the draft the report gate sent back, so fixed citations count as ``repaired``;
- ``finalise(vetted, evidence)`` is the delivery: never-retrieved citations are removed and unverifiable
  ones flagged (``repair_report``), and the evidence store keeps the delivered report's citations (numbered as
  delivered) and the summary of what was done to them, for the run's state and ``usage`` event;
- ``draft_report(evidence, reason=...)`` is the report the findings make so far, repaired the same way,
  recording nothing: the running draft a cut-short run leaves behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..corpora.citing import readable_corpus_sources
from .citations import CitationReport, check_citations, repair_report
from .hygiene import lint_citations, scrub_report
from .salvage import salvage_report

if TYPE_CHECKING:  # the run's stores import the report's citation models
    from ..run.evidence import EvidenceStore


@dataclass(frozen=True)
class VettedReport:
    markdown: str
    check: CitationReport
    problems: list[str]


def vet_report(markdown: str, evidence: EvidenceStore, *, previous: CitationReport | None = None) -> VettedReport:
    """The scrubbed draft, the verdict on its citations, and what its writer should fix."""
    scrubbed = readable_corpus_sources(scrub_report(markdown), evidence)
    check = check_citations(scrubbed, evidence.records(), evidence.all_findings(), previous=previous)
    return VettedReport(markdown=scrubbed, check=check, problems=[*lint_citations(scrubbed).problems(), *check.problems()])


def draft_report(evidence: EvidenceStore, *, reason: str) -> str:
    """The report the run's findings make so far, vetted and repaired like a delivered one, recording nothing."""
    vetted = vet_report(salvage_report(evidence, reason=reason), evidence)
    return repair_report(vetted.markdown, vetted.check)


def finalise(vetted: VettedReport, evidence: EvidenceStore) -> str:
    """The report as delivered, with its citations recorded in the run's evidence store."""
    delivered = repair_report(vetted.markdown, vetted.check)
    # Re-checked so the recorded citations carry the numbers the reader sees.
    final = check_citations(delivered, evidence.records(), evidence.all_findings())
    evidence.deliver_citations(final.citations, vetted.check.summary)
    return delivered
