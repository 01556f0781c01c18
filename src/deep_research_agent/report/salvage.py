"""A report assembled from what a run found, for runs that stop before the orchestrator writes one.

Contract: ``salvage_report(evidence, reason=...)`` is deterministic and calls no model. It opens with an
"Incomplete" notice that says why the run stopped and what is missing, then one section per research
unit that returned findings (its summary, cited with every source of the unit's findings; each finding
with its ``[n]``; its gaps, as a note), and ends with a ``## Sources`` list numbered in order of first
citation: a URL or corpus:// passage as ``[n] Title — URL``, a label source (an MCP server) as ``[n] label``. Its
notices are blockquotes, so the claim check never reads them as uncited claims. With ``in_flight`` (a run
cancelled while units were still running), the findings those units had staged get a section each, and the
pages the run read that no section cites are listed, linked, under "Pages read, not yet summarised", each
with the opening of its text as a quoted note. ``incomplete_banner``
marks the top of a report the orchestrator wrote but never delivered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..domain.findings import Findings
from ..domain.names import EvidenceKind
from ..domain.urls import domain_of

if TYPE_CHECKING:  # the run's stores import the report's citation models
    from ..evidence.store import EvidenceStore

_UNIT_TITLE_CHARS = 120
_EXCERPT_CHARS = 240
IN_FLIGHT_UNIT = "Research unit still in progress"
PAGES_READ_HEADING = "## Pages read, not yet summarised"


def salvage_report(evidence: EvidenceStore, *, reason: str, in_flight: bool = False) -> str:
    """The run's findings as a cited Markdown report, marked incomplete because of ``reason``; ``in_flight``: with
    what the units still running had staged and read."""
    citations: dict[str, int] = {}
    sections: list[str] = []
    gap_count = 0
    units = [(handover.unit, handover.findings) for handover in evidence.handovers()]
    if in_flight:
        units += [(IN_FLIGHT_UNIT, findings) for findings in evidence.staged()]
    for unit, findings in units:
        sections.append(_section(unit, findings, citations))
        gap_count += len(findings.gaps)
    if in_flight and (pages := _pages_read(evidence, cited=citations)):
        sections.append(pages)
    units_with_findings = sum(bool(findings.findings) for _, findings in units)

    lines = ["# Research findings (incomplete)", "", _notice(reason, units=units_with_findings, gaps=gap_count), ""]
    if sections:
        lines += sections
    else:
        lines += ["No research unit returned findings before the run stopped.", ""]
    lines += ["## Sources"]
    lines += [_entry(source, n, evidence) for source, n in citations.items()] or ["None."]
    return "\n".join(lines).strip() + "\n"


def _notice(reason: str, *, units: int, gaps: int) -> str:
    missing = ["a synthesis across the units"]
    if units == 0:
        missing = ["every finding: no research unit handed any over"]
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
    items = []
    for finding in findings.findings:
        claim = finding.finding.rstrip()
        stop = claim[-1] if claim[-1:] in ".!?" else ""
        items.append(f"- {claim.removesuffix(stop)}{_cite([finding.source], citations)}{stop}")
    if findings.summary:
        # The summary restates the findings: it is checked against all of their sources.
        summary = findings.summary.rstrip()
        stop = summary[-1] if summary[-1:] in ".!?" else ""
        lines += [f"{summary.removesuffix(stop)}{_cite([f.source for f in findings.findings], citations)}{stop}", ""]
    lines += items
    if items:
        lines.append("")
    if findings.gaps:
        lines += ["> Not established: " + "; ".join(" ".join(gap.split()) for gap in findings.gaps), ""]
    return "\n".join(lines)


def _pages_read(evidence: EvidenceStore, *, cited: dict[str, int]) -> str:
    """The pages the run read that no section cites, linked, each with the opening of its text quoted."""
    seen = set(cited)
    lines: list[str] = []
    for record in evidence.records():
        if record.kind != EvidenceKind.PAGE or record.url in seen:
            continue
        seen.add(record.url)
        title = " ".join((record.title or domain_of(record.url)).split()).replace("[", "(").replace("]", ")")
        excerpt = " ".join(record.text.split())
        if len(excerpt) > _EXCERPT_CHARS:
            excerpt = excerpt[: _EXCERPT_CHARS - 1].rstrip() + "…"
        lines += [f"> - [{title}]({record.url})", *([f">   {excerpt}"] if excerpt else [])]
    if not lines:
        return ""
    return "\n".join([PAGES_READ_HEADING, "", "> Read by a unit that had not handed over yet:", *lines, ""])


def _cite(sources: list[str], citations: dict[str, int]) -> str:
    numbers = [
        citations.setdefault(source, len(citations) + 1) for source in dict.fromkeys(s for s in sources if s.strip())
    ]
    return f" [{', '.join(map(str, numbers))}]" if numbers else ""


def _entry(source: str, number: int, evidence: EvidenceStore) -> str:
    if not source.startswith(("http://", "https://", "corpus://")):
        return f"[{number}] {' '.join(source.split())}"
    record = evidence.source(source)
    title = record.title if record and record.title else domain_of(source)
    return f"[{number}] {title} — {source}"


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
