"""A report segmented into claims: the sentences, list items and table cells that carry citations or figures.

Contract:
- ``split_claims(markdown)`` returns the claims of a report in order: a claim is a sentence, a list item's
  sentence or a table cell that carries one or more ``[n]`` (a cell with none takes its row's citations).
  Headings, table header rows, the Sources section, code and uncited text are not claims, except that an
  uncited sentence or cell stating a figure is one (it came from nowhere the run can show); an uncited
  blockquote (a note, the incomplete report notice) is not. A table cell that only names what its row's
  cited cells state (no citation, figure or quote of its own) is not one either.
- Sentences end at ``.``, ``!`` or ``?`` (after closing quotes, citations and an ``[unverified]`` mark),
  never after an abbreviation ("e.g.", "approx.", "vs."), a single letter or before a lowercase word.
- Each ``Claim`` holds where it is (``start``, ``end``, and ``mark_at``: where an ``[unverified]`` mark
  goes, after its last citation or before its closing punctuation), what it cites, its figures
  (``figures.py``: "Finding 1" states none), its quoted phrases, and per figure the sources of the
  citation marker that follows it (``cited_for``); ``key`` knows it again in a revised draft.

Checking the claims against what they cite is ``claims.py``'s. markdown-it-py's tokens were not used: they
give blocks but no sentence offsets inside them, and the offsets are what the marks are placed by.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..evidence.figures import Figure, figures_in, masked_for_figures
from .entities import Name
from .markdown import CITATION_RE, CitationGroup, citation_groups, mask_code, split_sources

UNVERIFIED_MARK = "[unverified]"


@dataclass(frozen=True)
class Claim:
    """One claim of a report: where it is, what it cites and what it states."""

    start: int
    end: int
    text: str
    indexes: tuple[int, ...]
    mark_at: int
    figures: tuple[Figure, ...]
    quotes: tuple[str, ...]
    # Per figure, the sources of the citation marker that follows it (or the sentence's last one): what the
    # sentence says that figure rests on. Adjacent markers ("[1][2]") count as one.
    cited_for: tuple[tuple[int, ...], ...] = ()
    # The named entities it states (``entities.names_in``), set by ``check_claims``.
    names: tuple[Name, ...] = ()

    @property
    def key(self) -> str:
        """The claim's words without its citations or marks, to know it again in a revised draft."""
        return " ".join(CITATION_RE.sub(" ", self.text.replace(UNVERIFIED_MARK, " ")).casefold().split())


_HEADING_RE = re.compile(r"[ \t]*#{1,6}(?:[ \t]|$)")
_RULE_RE = re.compile(r"[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_ITEM_RE = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+")
_QUOTE_RE = re.compile(r"[ \t]*(?:>[ \t]?)+")
_TABLE_SEPARATOR_RE = re.compile(r"[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
_CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
_SENTENCE_END_RE = re.compile(r"[.!?]+[\"'”’)]*(?:[ \t]*\[\d[\d,\s–-]*\])*(?:[ \t]*\[unverified\])?(?=\s+\S)")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs approx ca cf no nos fig figs dr mr mrs ms prof st inc ltd co corp jr sr al est avg vol "
    "u.s u.k u.n e.u p pp mt".split()
)
_QUOTED_RE = re.compile(r"\"([^\"\n]{3,}?)\"|“([^”\n]{3,}?)”|«([^»\n]{3,}?)»")
_CLOSING_RE = re.compile(r"[.!?:;,]+[\"'”’)]*\s*$")
_HAS_TEXT_RE = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    kind: str  # "text", "quote" or "cell"
    row_indexes: tuple[int, ...] = ()


def split_claims(markdown: str) -> list[Claim]:
    """The claims of ``markdown``, in order (see the module's contract)."""
    parts = split_sources(markdown)
    masked = mask_code(markdown)
    regions = [(0, len(parts.before)), (len(parts.before) + len(parts.sources), len(markdown))]
    claims: list[Claim] = []
    for start, end in regions:
        for block in _blocks(masked, start, end):
            spans = [(block.start, block.end)] if block.kind == "cell" else _sentences(masked, block.start, block.end)
            for sentence_start, sentence_end in spans:
                claim = _claim(markdown, masked, sentence_start, sentence_end, block)
                if claim is not None:
                    claims.append(claim)
    return claims


def _lines(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    position = start
    while position < end:
        newline = text.find("\n", position, end)
        line_end = end if newline == -1 else newline
        yield position, line_end
        position = line_end + 1


def _blocks(masked: str, start: int, end: int) -> Iterator[_Block]:
    current: list[int] | None = None  # [start, end, kind]
    kind = "text"
    lines = list(_lines(masked, start, end))
    i = 0
    while i < len(lines):
        line_start, line_end = lines[i]
        line = masked[line_start:line_end]
        if not line.strip() or _HEADING_RE.match(line) or _RULE_RE.match(line):
            if current:
                yield _Block(current[0], current[1], kind)
            current = None
            i += 1
            continue
        if line.lstrip().startswith("|"):
            if current:
                yield _Block(current[0], current[1], kind)
            current = None
            table = []
            while i < len(lines) and masked[lines[i][0] : lines[i][1]].lstrip().startswith("|"):
                table.append(lines[i])
                i += 1
            yield from _table_cells(masked, table)
            continue
        quote = _QUOTE_RE.match(line)
        item = _ITEM_RE.match(line)
        if quote:
            content = line_start + quote.end()
            if current and kind == "quote":
                current[1] = line_end
            else:
                if current:
                    yield _Block(current[0], current[1], kind)
                current, kind = [content, line_end], "quote"
        elif item:
            if current:
                yield _Block(current[0], current[1], kind)
            current, kind = [line_start + item.end(), line_end], "text"
        elif current and kind == "text":
            current[1] = line_end
        else:
            if current:
                yield _Block(current[0], current[1], kind)
            current, kind = [line_start, line_end], "text"
        i += 1
    if current:
        yield _Block(current[0], current[1], kind)


def _table_cells(masked: str, rows: list[tuple[int, int]]) -> Iterator[_Block]:
    header = len(rows) > 1 and bool(_TABLE_SEPARATOR_RE.match(masked[rows[1][0] : rows[1][1]]))
    for number, (row_start, row_end) in enumerate(rows):
        row = masked[row_start:row_end]
        if (header and number == 0) or _TABLE_SEPARATOR_RE.match(row):
            continue
        bounds = [row_start + m.start() for m in _CELL_SPLIT_RE.finditer(row)]
        cells = [(a + 1, b) for a, b in zip(bounds, bounds[1:], strict=False)]
        if bounds and not row.rstrip().endswith("|"):
            cells.append((bounds[-1] + 1, row_end))
        cited = tuple(dict.fromkeys(n for group in citation_groups(row, code_masked=True) for n in group.numbers))
        for cell_start, cell_end in cells:
            text = masked[cell_start:cell_end]
            lead = len(text) - len(text.lstrip())
            trail = len(text.rstrip())
            if trail > lead:
                yield _Block(cell_start + lead, cell_start + trail, "cell", cited)


def _sentences(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    sentence_start = start
    for match in _SENTENCE_END_RE.finditer(masked, start, end):
        before = masked[max(sentence_start, match.start() - 24) : match.start()].split()
        word = before[-1].rstrip(".").casefold() if before else ""
        following = masked[match.end() : match.end() + 16].lstrip()[:1]
        if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or following.islower():
            continue
        spans.append((sentence_start, match.end()))
        sentence_start = match.end()
        while sentence_start < end and masked[sentence_start].isspace():
            sentence_start += 1
    if sentence_start < end:
        spans.append((sentence_start, end))
    return spans


def _claim(markdown: str, masked: str, start: int, end: int, block: _Block) -> Claim | None:
    text = markdown[start:end]
    visible = masked[start:end]
    groups = citation_groups(visible, code_masked=True)
    own = tuple(dict.fromkeys(n for group in groups for n in group.numbers))
    indexes = own or block.row_indexes
    if not _HAS_TEXT_RE.search(CITATION_RE.sub(" ", visible.replace(UNVERIFIED_MARK, " "))):
        return None
    figures = tuple(figures_in(visible))
    quotes = tuple(
        q.strip() for m in _QUOTED_RE.finditer(masked_for_figures(visible)) if (q := next(g for g in m.groups() if g))
    )
    if not indexes and (not figures or block.kind == "quote"):
        return None
    if not own and not figures and not quotes:
        return None  # a table cell that only names what its row's cited cells state
    if groups:
        mark_at = start + groups[-1].end
    else:
        closing = _CLOSING_RE.search(text)
        mark_at = start + (closing.start() if closing else len(text.rstrip()))
    cited_for = tuple(_cited_for(figure, text, groups) or indexes for figure in figures)
    return Claim(
        start=start,
        end=end,
        text=text,
        indexes=indexes,
        mark_at=mark_at,
        figures=figures,
        quotes=quotes,
        cited_for=cited_for,
    )


def _cited_for(figure: Figure, text: str, groups: Sequence[CitationGroup]) -> tuple[int, ...]:
    merged: list[tuple[int, list[int]]] = []  # (end, numbers) of markers, adjacent ones joined
    for group in groups:
        if merged and not text[merged[-1][0] : group.start].strip():
            merged[-1] = (group.end, merged[-1][1] + list(group.numbers))
        else:
            merged.append((group.end, list(group.numbers)))
    starts = [group.start for group in groups]
    for end, numbers in merged:
        if end > figure.end and any(figure.end <= start < end for start in starts):
            return tuple(dict.fromkeys(numbers))
    return tuple(dict.fromkeys(merged[-1][1])) if merged else ()
