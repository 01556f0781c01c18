"""A report assembled from what a run found, for runs that stop before the orchestrator writes one.

Contract: ``salvage_report(evidence, reason=...)`` is deterministic and calls no model. It opens with an
"Incomplete" notice that says why the run stopped and what is missing, then one section per research
unit that returned findings (its summary, each finding with ``[n]`` citations, its gaps), and ends with a
``## Sources`` list numbered in order of first citation. ``incomplete_banner`` marks the top of a report
the orchestrator wrote but never delivered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..handover.contract import Findings
from ..urls import domain_of

if TYPE_CHECKING:  # the run's stores import the report's citation models
    from ..run.evidence import EvidenceStore

_UNIT_TITLE_CHARS = 120


def salvage_report(evidence: EvidenceStore, *, reason: str) -> str:
    """The run's findings as a cited Markdown report, marked incomplete because of ``reason``."""
    citations: dict[str, int] = {}
    sections: list[str] = []
    gap_count = 0
    for handover in evidence.handovers():
        sections.append(_section(handover.unit, handover.findings, citations))
        gap_count += len(handover.findings.gaps)

    lines = ["# Research findings (incomplete)", "", _notice(reason, units=len(sections), gaps=gap_count), ""]
    if sections:
        lines += sections
    else:
        lines += ["No research unit returned findings before the run stopped.", ""]
    lines += ["## Sources"]
    lines += [f"[{n}] {_title(url, evidence)} — {url}" for url, n in citations.items()] or ["None."]
    return "\n".join(lines).strip() + "\n"


def _notice(reason: str, *, units: int, gaps: int) -> str:
    missing = ["a synthesis across the units"]
    if units == 0:
        missing = ["every finding: no research unit finished"]
    elif gaps:
        missing.append(f"{gaps} gap{'s' if gaps != 1 else ''} named under the units below")
    return (
        f"> **Incomplete.** This run stopped before its report was written: {reason.rstrip('.')}. "
        f"What follows is assembled from the findings gathered so far. Missing: {'; '.join(missing)}."
    )


def _section(unit: str, findings: Findings, citations: dict[str, int]) -> str:
    title = " ".join(unit.split()) or "Research unit"
    if len(title) > _UNIT_TITLE_CHARS:
        title = title[: _UNIT_TITLE_CHARS - 1].rstrip() + "…"
    lines = [f"## {title}", ""]
    if findings.summary:
        lines += [findings.summary, ""]
    for finding in findings.findings:
        claim = finding.finding.rstrip()
        stop = claim[-1] if claim[-1:] in ".!?" else ""
        lines.append(f"- {claim.removesuffix(stop)}{_cite(finding.source, citations)}{stop}")
    if findings.findings:
        lines.append("")
    if findings.gaps:
        lines += ["Not established: " + "; ".join(findings.gaps), ""]
    return "\n".join(lines)


def _cite(source: str, citations: dict[str, int]) -> str:
    if not source.startswith(("http://", "https://", "corpus://")):
        return f" (source: {source})" if source else ""
    number = citations.setdefault(source, len(citations) + 1)
    return f" [{number}]"


def _title(url: str, evidence: EvidenceStore) -> str:
    record = evidence.source(url)
    return record.title if record and record.title else domain_of(url)


def incomplete_banner(missing: list[str], reason: str) -> str:
    """A Markdown blockquote for the top of a salvaged report: why it is incomplete and what it lacks."""
    why = " ".join(reason.split()).rstrip(".") or "the run ended early"
    lines = [f"> **Incomplete report.** This report was assembled from partial results because {why}."]
    items = [" ".join(item.split()) for item in missing if item.strip()]
    if items:
        lines.append("> Missing:")
        lines.extend(f"> - {item}" for item in items)
    lines.append("> Treat its conclusions as provisional.")
    return "\n".join(lines) + "\n\n"
