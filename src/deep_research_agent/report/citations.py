"""Evidence checks per source: a citation leaves the run only if the run retrieved the text it points to.

The run's evidence store keeps every text the run retrieved (``EvidenceRecord``: a fetched ``page`` in full,
an MCP result, or a ``search_result`` snippet), prepared once in an ``EvidenceLibrary``. Against it:

- ``check_citations`` maps each ``[n]`` to its Sources entry and judges that source. A URL the run never
  retrieved is to be removed. A URL seen only as a search result was never read: it is unverified
  (``search_snippet_only``) unless each finding's quote for it is in the snippet. For a URL with
  findings, every finding's ``evidence`` quote must be in the retrieved text and every figure of the
  finding in its quote (``figures.py``). An entry with no URL (a source label such as "MCP: pricing-db")
  is matched on the url or title of non-web evidence; a record of any kind other than ``search_result``
  counts as text read in full. The report's own sentences are judged by ``claims.py``.
- ``one_entry_per_work`` merges Sources entries that are one work (the evidence store's ``source`` of
  their URLs is the same: an arXiv page and its DOI): the first keeps its number, the others' citations
  point at it and their lines go. Run on every draft before it is checked.
- ``repair_report`` is the delivery-time repair, after the one revision: removed citations disappear
  (inline and from Sources) and the rest are renumbered by first use with the Sources list kept in its
  order. Marking what is still unverified is ``claims.mark_unverified``'s job, sentence by sentence.

URLs match after ``urls.normalise_url`` (scheme and host case, trailing slash, fragment).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..domain.claims import CITATION_ACTIONS, Action, CitationRecord, CitationSummary, Reason
from ..domain.findings import Finding, Findings
from ..evidence.figures import figures_in, unsupported
from ..evidence.text import EvidenceLibrary, EvidenceLike, EvidenceText, quote_fragments, source_key
from .charts import renumber_chart_cites
from .markdown import SourceEntry, citation_groups, first_use_order, source_entries, split_sources


class CitationReport(BaseModel):
    citations: list[CitationRecord]
    summary: CitationSummary

    def indices(self, action: Action) -> set[int]:
        return {c.index for c in self.citations if c.action == action}

    def problems(self) -> list[str]:
        """Each citation that does not check out, as an instruction to the report's writer.

        Structural defects (a number with no Sources entry, an empty entry) are left to
        ``CitationLint.problems`` so the writer is not told the same thing twice."""
        return [text for c in self.citations if (text := _problem(c))]


def unsupported_numbers(finding: str, quote: str) -> list[str]:
    """The figures a finding states that its quote does not hold, as the finding writes them."""
    return [figure.text for figure in unsupported(figures_in(finding), figures_in(quote))]


# --- citation check -------------------------------------------------------------------------------


def check_citations(
    markdown: str,
    evidence: EvidenceLibrary | Sequence[EvidenceLike | Mapping[str, Any]],
    findings: Sequence[Findings],
    *,
    previous: CitationReport | None = None,
) -> CitationReport:
    """Judge every citation of ``markdown`` against the retrieved ``evidence`` and the sub-agents' ``findings``.

    ``previous`` is the report of the draft the report gate sent back, if any: its failing citations
    that no longer fail here are counted as ``repaired``."""
    library = evidence if isinstance(evidence, EvidenceLibrary) else EvidenceLibrary(evidence)
    parts = split_sources(markdown)
    entries = {entry.index: entry for entry in source_entries(parts.sources)}
    cited = first_use_order(parts.before + parts.after)
    claims: defaultdict[str, list[Finding]] = defaultdict(list)
    for finding in (finding for group in findings for finding in group.findings):
        claims[library.canonical(source_key(finding.source))].append(finding)
    citations = [_judge(index, entries.get(index), library, claims) for index in sorted(set(cited) | set(entries))]
    return CitationReport(citations=citations, summary=_summarise(citations, previous))


def _judge(
    index: int, entry: SourceEntry | None, library: EvidenceLibrary, claims: Mapping[str, list[Finding]]
) -> CitationRecord:
    if entry is None:
        return CitationRecord(index=index, verified=False, reason="no_source_entry")
    if entry.is_empty:
        return CitationRecord(index=index, verified=False, reason="empty_entry")
    base = {"index": index, "url": entry.url, "title": entry.title}
    source = entry.url or entry.title
    texts = library.for_source(source)
    if not texts:
        return CitationRecord(**base, verified=False, reason="not_retrieved" if entry.url else "no_url")
    reason, evidence_id, detail = _weigh(texts, claims.get(library.canonical(source_key(source)), []))
    return CitationRecord(
        **base, evidence_id=evidence_id, verified=CITATION_ACTIONS[reason] == "keep", reason=reason, detail=detail
    )


def _weigh(held: list[EvidenceText], claims: list[Finding]) -> tuple[Reason, str, str]:
    """The verdict on one retrieved source: every claim drawn from it must hold, or the first failure is given."""
    read = any(text.read for text in held)
    default_id = held[0].id
    if not claims:
        return ("page_retrieved" if read else "search_snippet_only"), default_id, ""
    holders: list[str] = []
    for claim in claims:
        about = f"finding “{_excerpt(claim.finding)}”"
        if not claim.evidence.strip():
            return "quote_missing", default_id, about
        fragments = quote_fragments(claim.evidence)
        holder = next((text for text in held if text.contains_quote(fragments)), None)
        if holder is None:
            return ("quote_not_found" if read else "search_snippet_only"), default_id, about
        missing = unsupported_numbers(claim.finding, claim.evidence)
        if missing:
            return "number_not_in_quote", holder.id, f"{about}: {', '.join(missing)} not in its quote"
        holders.append(holder.id)
    return ("quote_verified" if read else "snippet_quote_verified"), holders[0], ""


def _summarise(citations: list[CitationRecord], previous: CitationReport | None) -> CitationSummary:
    failing_now = {_key(c) for c in citations if c.action != "keep"}
    failing_before = {_key(c) for c in previous.citations if c.action != "keep"} if previous else set()
    return CitationSummary(
        valid=sum(c.action == "keep" for c in citations),
        flagged=sum(c.action == "flag" for c in citations),
        removed=sum(c.action == "remove" for c in citations),
        repaired=len(failing_before - failing_now),
    )


def _key(citation: CitationRecord) -> str:
    # Numbers change between drafts; a URL (or a label) names the same source in both.
    return source_key(citation.url or citation.title) or f"[{citation.index}]"


def _excerpt(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_PROBLEMS: dict[str, str] = {
    "not_retrieved": (
        "[{i}] cites {where}, which this run never retrieved: cite a source that was searched or read, or drop the claim."
    ),
    "search_snippet_only": (
        "[{i}] rests on a search-result snippet of {where}; the page itself was never read{about}: "
        "have a research unit read it, or cite a page that was read."
    ),
    "quote_not_found": (
        "[{i}]: the quote behind the {detail} is not in the text retrieved from {where}: "
        "state only what that source says, or drop the claim."
    ),
    "quote_missing": (
        "[{i}]: the {detail} from {where} came without a supporting quote, so it cannot be checked: "
        "state only what the source's quoted text supports, or drop the claim."
    ),
    "number_not_in_quote": "[{i}]: {detail} (from {where}): use the figures the source gives, or drop them.",
    "no_url": (
        "[{i}] names no URL, and no retrieved source is called “{title}”: "
        "give the URL the claim was read at, or drop the claim."
    ),
}


def _problem(citation: CitationRecord) -> str | None:
    template = _PROBLEMS.get(citation.reason)
    if template is None:
        return None
    return template.format(
        i=citation.index,
        where=citation.url or citation.title,
        title=citation.title,
        detail=citation.detail,
        about=f" ({citation.detail})" if citation.detail else "",
    )


# --- repair ---------------------------------------------------------------------------------------


def one_entry_per_work(markdown: str, source_of: Callable[[str], str | None]) -> str:
    """``markdown`` with every Sources entry whose URL ``source_of`` maps to the same source as an earlier
    entry's merged into that one; unchanged when no two entries are one work."""
    parts = split_sources(markdown)
    entries = source_entries(parts.sources)
    first: dict[str, int] = {}
    merged: dict[int, int] = {}
    for entry in entries:
        work = source_of(entry.url) if entry.url else None
        if work is None:
            continue
        if work in first and first[work] != entry.index:
            merged[entry.index] = first[work]
        else:
            first.setdefault(work, entry.index)
    if not merged:
        return markdown
    numbering = {entry.index: merged.get(entry.index, entry.index) for entry in entries}
    before = _renumber_inline(parts.before, numbering)
    after = _renumber_inline(parts.after, numbering)
    kept = {index: index for index in numbering if index not in merged}
    return before + _renumber_sources(parts.sources, entries, kept, set(merged)) + after


def repair_report(markdown: str, report: CitationReport) -> str:
    """``markdown`` with removed citations gone and the rest renumbered by first use.

    ``report`` must come from ``check_citations`` on this same ``markdown``. Checking and repairing the
    repaired text again changes nothing: nothing is left to remove.
    """
    removed = report.indices("remove")
    parts = split_sources(markdown)
    entries = source_entries(parts.sources)
    kept_cited = [n for n in first_use_order(parts.before + parts.after) if n not in removed]
    kept_listed = [e.index for e in entries if e.index not in removed and e.index not in kept_cited]
    numbering = {old: new for new, old in enumerate(dict.fromkeys(kept_cited + kept_listed), start=1)}
    before = renumber_chart_cites(_renumber_inline(parts.before, numbering), numbering)
    after = renumber_chart_cites(_renumber_inline(parts.after, numbering), numbering)
    sources = _renumber_sources(parts.sources, entries, numbering, removed)
    if parts.sources and not sources:
        before = before.rstrip() + "\n"
    return before + sources + after


def _renumber_inline(text: str, numbering: dict[int, int]) -> str:
    pieces: list[str] = []
    position = 0
    for group in citation_groups(text):
        new = list(dict.fromkeys(numbering[n] for n in group.numbers if n in numbering))
        if not new:
            pieces.append(text[position : group.start].rstrip(" \t"))
        else:
            # An unchanged marker keeps its written form (a range stays a range).
            marker = text[group.start : group.end] if new == list(group.numbers) else f"[{', '.join(map(str, new))}]"
            pieces.append(text[position : group.start] + marker)
        position = group.end
    pieces.append(text[position:])
    return "".join(pieces)


def _renumber_sources(sources: str, entries: list[SourceEntry], numbering: dict[int, int], removed: set[int]) -> str:
    # A Sources section with every entry removed is dropped, heading and all.
    if entries and all(entry.index in removed for entry in entries):
        return ""
    pieces: list[str] = []
    position = 0
    for entry in entries:
        pieces.append(sources[position : entry.start])
        if entry.index not in removed:
            line = sources[entry.start : entry.end]
            number_at = entry.number_start - entry.start
            pieces.append(line[:number_at] + str(numbering[entry.index]) + line[entry.number_end - entry.start :])
        position = entry.end
    pieces.append(sources[position:])
    return "".join(pieces)
