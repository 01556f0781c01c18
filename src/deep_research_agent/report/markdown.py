"""The citation anatomy of a report: its Sources section, its entries and its inline ``[n]`` markers.

The report format (orchestrator prompt): inline ``[n]`` numbered by first use, and a closing
``## Sources`` section with one ``[n] Title — URL`` line per source; a local corpus passage's URL is its
``corpus://`` URL, numbered in the same sequence as web pages. The lint, the citation check and
the repair all read a report through these functions, so they agree on what counts as a citation:

- ``[1]``, ``[1, 2]``, ``[1][2]`` and ``[1-3]`` (a range) are citations; ``[1](url)`` is a link and
  ``[1]:`` a reference definition, neither is a citation;
- nothing inside inline code or a fenced block counts, and the Sources section is never scanned for
  inline citations (its own ``[n]`` are entry labels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SOURCES_HEADING_RE = re.compile(
    r"^(#{1,6})[ \t]*(?:sources|references|bibliography)[ \t]*:?[ \t]*$", re.IGNORECASE | re.MULTILINE
)
_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+\S", re.MULTILINE)
_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
# Inline code stays on one line here: a stray backtick must not blank out the rest of the report.
_INLINE_CODE_RE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")
CITATION_RE = re.compile(r"\[(\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*)\](?![(:])")
_ENTRY_RE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?\[(?P<index>\d+)\]:?(?P<rest>.*)$|^[ \t]*(?P<nindex>\d+)[.)](?P<nrest>(?:[ \t].*)?)$"
)
# Web pages, and passages of the local corpora (``corpus://<name>/<path>#<anchor>``).
_URL_RE = re.compile(r"(?:https?|corpus)://[^\s<>\]\"'`]+", re.IGNORECASE)
_URL_TRAILING = ".,;:>"
_EMPTY_LINK_RE = re.compile(r"\[([^\]]*)\]\(\s*\)")
_EMPTY_BRACKETS_RE = re.compile(r"\(\s*\)|<\s*>")
_ENTRY_FILLER = " \t-–—:|*_·"
_MAX_RANGE = 50


@dataclass(frozen=True)
class Sections:
    """A report cut around its Sources section: ``before + sources + after == markdown``."""

    before: str
    sources: str
    after: str

    @property
    def has_sources(self) -> bool:
        return bool(self.sources)


@dataclass(frozen=True)
class CitationGroup:
    """One bracketed marker in the text and the source numbers it cites, in written order."""

    start: int
    end: int
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class SourceEntry:
    """One line of the Sources section; ``start``/``end`` are offsets within the Sources text."""

    index: int
    text: str
    url: str | None
    start: int
    end: int
    number_start: int
    number_end: int

    @property
    def is_empty(self) -> bool:
        return not self.text.strip(_ENTRY_FILLER)

    @property
    def title(self) -> str:
        without_url = self.text.replace(self.url, "") if self.url else self.text
        without_url = _EMPTY_BRACKETS_RE.sub("", _EMPTY_LINK_RE.sub(r"\1", without_url))
        return without_url.strip(_ENTRY_FILLER + ".,")


def mask_code(text: str) -> str:
    """``text`` with fenced blocks and inline code blanked out, same length, so offsets stay valid."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    return _INLINE_CODE_RE.sub(blank, _FENCE_RE.sub(blank, text))


def split_sources(markdown: str) -> Sections:
    """Cut at the last Sources heading outside code; the section ends at the next heading of its level or above."""
    masked = mask_code(markdown)
    headings = list(_SOURCES_HEADING_RE.finditer(masked))
    if not headings:
        return Sections(before=markdown, sources="", after="")
    heading = headings[-1]
    level = len(heading.group(1))
    end = len(markdown)
    for following in _HEADING_RE.finditer(masked, heading.end()):
        if len(following.group(1)) <= level:
            end = following.start()
            break
    return Sections(before=markdown[: heading.start()], sources=markdown[heading.start() : end], after=markdown[end:])


def citation_groups(text: str, *, code_masked: bool = False) -> list[CitationGroup]:
    """Inline citation markers outside code, in order of appearance (``code_masked``: ``text`` is already
    ``mask_code``'s output)."""
    return [
        CitationGroup(start=match.start(), end=match.end(), numbers=_expand(match.group(1)))
        for match in CITATION_RE.finditer(text if code_masked else mask_code(text))
    ]


def first_use_order(text: str) -> list[int]:
    """Distinct cited numbers in the order they are first cited."""
    return list(dict.fromkeys(n for group in citation_groups(text) for n in group.numbers))


def source_entries(sources: str) -> list[SourceEntry]:
    """Numbered entries of a Sources section (``[n] …``, ``- [n] …``, ``[n]: …`` or ``n. …``)."""
    entries: list[SourceEntry] = []
    offset = 0
    for line in sources.splitlines(keepends=True):
        match = _ENTRY_RE.match(line.rstrip("\r\n"))
        if match:
            group = "index" if match.group("index") else "nindex"
            rest = match.group("rest") if group == "index" else match.group("nrest")
            url = _URL_RE.search(rest or "")
            entries.append(
                SourceEntry(
                    index=int(match.group(group)),
                    text=(rest or "").strip(),
                    url=_clean_url(url.group(0)) if url else None,
                    start=offset,
                    end=offset + len(line),
                    number_start=offset + match.start(group),
                    number_end=offset + match.end(group),
                )
            )
        offset += len(line)
    return entries


def _clean_url(url: str) -> str:
    """Sentence punctuation after a URL is not part of it; a closing parenthesis is, when the URL opened one."""
    url = url.rstrip(_URL_TRAILING)
    while url.endswith(")") and url.count(")") > url.count("("):
        url = url[:-1].rstrip(_URL_TRAILING)
    return url


def _expand(inner: str) -> tuple[int, ...]:
    numbers: list[int] = []
    for part in inner.split(","):
        bounds = [int(b) for b in re.split(r"\s*[-–]\s*", part.strip())]
        if len(bounds) == 2 and bounds[0] <= bounds[1] <= bounds[0] + _MAX_RANGE:
            numbers.extend(range(bounds[0], bounds[1] + 1))
        else:
            numbers.extend(bounds)
    return tuple(numbers)
