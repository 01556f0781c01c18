"""Sources lines of corpus passages as a person would write them.

Contract: ``readable_corpus_sources(markdown, evidence)`` rewrites each ``## Sources`` entry whose URL is a
``corpus://`` URL the run retrieved to ``[n] <corpus title> — <title path> (<path>) — corpus://…``, the
title the passage was read under (``locator.title_of``), whatever the writer put there (a bare file name,
the id, nothing). The number, the URL and every other line are left as written; a corpus URL the run never
retrieved is left for the citation check to remove. An entry whose source is a paper a scholarly search
found (its record carries ``paper``) gets the same treatment with the paper's citation:
``[n] <title> — <authors> (<year>). <venue>. doi:<DOI> — <url>``. Idempotent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..corpora.locator import is_corpus_url
from .markdown import source_entries, split_sources

if TYPE_CHECKING:
    from ..evidence.store import EvidenceStore


def readable_corpus_sources(markdown: str, evidence: EvidenceStore) -> str:
    parts = split_sources(markdown)
    if not parts.sources:
        return markdown
    pieces: list[str] = []
    position = 0
    for entry in source_entries(parts.sources):
        if not entry.url:
            continue
        record = evidence.source(entry.url)
        if record is None or not record.title or (record.paper is None and not is_corpus_url(entry.url)):
            continue
        about = record.paper.citation() if record.paper else ""
        line = parts.sources[entry.start : entry.end]
        at = line.find(entry.text)
        if at < 0:
            continue
        pieces.append(
            parts.sources[position : entry.start]
            + line[:at]
            + f"{record.title} — {about + ' — ' if about else ''}{entry.url}"
            + line[at + len(entry.text) :]
        )
        position = entry.end
    if not pieces:
        return markdown
    pieces.append(parts.sources[position:])
    return parts.before + "".join(pieces) + parts.after
