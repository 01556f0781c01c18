"""A delivered report as any Markdown renderer shows it: a Sources list with linked titles, linked markers.

``final_report`` keeps the report format the checks read (``[n] Title — URL`` lines); what a client renders
(the turn's last AI message, an export) is ``readable_report`` of it.

Contract:
- ``source_entry(number, record)`` is the one format of a Sources entry, from the source's record:
  ``- [n] [Title](URL)``, or ``- [n] Title`` for a source without a URL (an MCP server's label). A list
  item per source, so a CommonMark renderer never runs two entries into one paragraph; the number is text,
  not an ordered-list marker, so a renderer that hides list numbers (deep-agents-ui) still shows it;
- ``listed_sources(markdown, evidence)`` rewrites every entry of the report's Sources section with
  ``source_entry``: the title is the record's (the page the run retrieved) or, for a URL the run never
  retrieved (or without ``evidence``: a client that holds only the report), the one written in the entry. Text between entries is kept; the entries stay readable by
  ``report/markdown.py`` (``source_entries``). Idempotent;
- ``linked_citations(markdown)`` links each inline ``[n]`` to the URL of entry ``n`` (``[[n]](URL)``), for
  the message a generic client renders; a marker without an entry, or one whose entry has no URL, is left
  as written. Code and the Sources section are left alone;
- ``readable_report(markdown, evidence)`` is both: the report as a client renders it;
- ``findings_markdown(findings, evidence)`` is a research unit's hand-over as a client shows the ``task``
  result: its summary line, each finding with its source linked (``source_link``), its gaps.

Written here rather than on markdown-it-py's token stream: that parser drops the source text between
tokens, and the report must come back byte for byte except for the entries and markers it rewrites.
"""

from __future__ import annotations

from ..domain.findings import Findings
from ..domain.urls import domain_of
from ..evidence.store import EvidenceStore, SourceRecord
from .markdown import SourceEntry, citation_groups, mask_code, source_entries, split_sources

_LINKABLE = ("http://", "https://", "corpus://")


def readable_report(markdown: str, evidence: EvidenceStore) -> str:
    return linked_citations(listed_sources(markdown, evidence))


def source_entry(number: int, record: SourceRecord) -> str:
    """One Sources entry: ``- [n] [Title](URL)``; a source without a URL is its title alone."""
    return f"- [{number}] {source_link(record)}"


def source_link(record: SourceRecord) -> str:
    """A source as a reader sees it: its title linked to its URL, or its title alone without a URL."""
    title = " ".join((record.title or record.domain or record.url).split())
    return f"[{_link_text(title)}]({record.url})" if record.url else title


def findings_markdown(findings: Findings, evidence: EvidenceStore) -> str:
    lines = [f"**Summary:** {' '.join(findings.summary.split()) or 'no summary given.'}"]
    if findings.findings:
        lines.append("")
        for finding in findings.findings:
            source = finding.source.strip()
            record = evidence.source(source) if source.startswith(_LINKABLE) else None
            if record is None:
                record = SourceRecord(
                    index=0, url=source if source.startswith(_LINKABLE) else "", title=source, domain=""
                )
            unfound = " (its quote is in no text read from this source)" if finding.check == "quote_not_found" else ""
            lines.append(f"- {' '.join(finding.finding.split())} ({source_link(record)}){unfound}")
    if findings.gaps:
        lines += ["", "**Gaps:** " + "; ".join(" ".join(gap.split()) for gap in findings.gaps)]
    return "\n".join(lines)


def listed_sources(markdown: str, evidence: EvidenceStore | None = None) -> str:
    parts = split_sources(markdown)
    entries = source_entries(parts.sources)
    if not entries:
        return markdown
    pieces: list[str] = []
    position = 0
    for entry in entries:
        if entry.is_empty:
            continue
        line = parts.sources[entry.start : entry.end]
        ending = line[len(line.rstrip("\r\n")) :] or "\n"
        pieces.append(
            parts.sources[position : entry.start] + source_entry(entry.index, _record(entry, evidence)) + ending
        )
        position = entry.end
    pieces.append(parts.sources[position:])
    return parts.before + "".join(pieces) + parts.after


def linked_citations(markdown: str) -> str:
    parts = split_sources(markdown)
    urls = {entry.index: entry.url for entry in source_entries(parts.sources) if entry.url}
    if not urls:
        return markdown
    body = parts.before
    out: list[str] = []
    position = 0
    for group in citation_groups(mask_code(body), code_masked=True):
        if not all(n in urls for n in group.numbers):
            continue
        out.append(body[position : group.start] + "".join(f"[[{n}]]({urls[n]})" for n in group.numbers))
        position = group.end
    out.append(body[position:])
    return "".join(out) + parts.sources + parts.after


def _record(entry: SourceEntry, evidence: EvidenceStore | None) -> SourceRecord:
    """The run's record of the entry's source, or one made from what the entry says."""
    url = entry.url or ""
    record = evidence.source(url) if url and evidence is not None else None
    if record is not None and record.title:
        return record
    return SourceRecord(index=entry.index, url=url, title=entry.title, domain=domain_of(url) if url else "")


def _link_text(title: str) -> str:
    # Parentheses rather than escaped brackets: every reader of an entry (source_entries, the web UI's) keeps them.
    return title.replace("[", "(").replace("]", ")")
