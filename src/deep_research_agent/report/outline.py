"""Holding a report to the outline its reader gave: every section there, in the order given.

Contract: ``outline_gaps(markdown, outline)`` lists what the report lacks: each heading of ``outline`` with
no ``##`` (or deeper) heading of the report matching it, and each one found out of order. Headings match
case, punctuation, spacing and a leading number aside ("2. Costs" matches "Costs"), or when one holds the
other whole ("Costs" matches "Costs and prices"). ``gap_problems`` words them for the writer, ``outline_note``
for the reader of a report delivered without them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

_HEADING = re.compile(r"^\s{0,3}#{2,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_NUMBERING = re.compile(r"^(?:\d+[.)]?|[ivxlc]+[.)])\s+")


@dataclass(frozen=True)
class OutlineGaps:
    missing: tuple[str, ...] = ()
    out_of_order: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.missing or self.out_of_order)


def _key(heading: str) -> str:
    text = unicodedata.normalize("NFKC", heading).casefold().replace("*", "").replace("`", "")
    text = _NUMBERING.sub("", text.strip())
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def _matches(wanted: str, found: str) -> bool:
    return wanted == found or (len(wanted) >= 4 and f" {wanted} " in f" {found} ")


def outline_gaps(markdown: str, outline: Sequence[str]) -> OutlineGaps:
    """The outline's sections the report lacks, and those it has out of the given order."""
    found = [_key(heading) for heading in _HEADING.findall(markdown)]
    positions: list[tuple[str, int]] = []
    missing: list[str] = []
    for section in outline:
        wanted = _key(section)
        at = next((i for i, heading in enumerate(found) if _matches(wanted, heading)), None)
        if at is None:
            missing.append(section)
        else:
            positions.append((section, at))
    out_of_order = [
        section for (section, at), (_, before) in zip(positions[1:], positions, strict=False) if at < before
    ]
    return OutlineGaps(missing=tuple(missing), out_of_order=tuple(out_of_order))


def gap_problems(gaps: OutlineGaps) -> list[str]:
    """What the writer must fix to follow the outline."""
    problems = [f'The outline\'s section "{section}" is missing: add it as a ## heading.' for section in gaps.missing]
    problems += [
        f'The outline\'s section "{section}" comes before a section the outline puts ahead of it: '
        "put the sections in the outline's order."
        for section in gaps.out_of_order
    ]
    return problems


def with_outline_note(markdown: str, gaps: OutlineGaps) -> str:
    """``markdown`` with the note on the outline it does not follow, before its Sources (at its end without)."""
    note = outline_note(gaps)
    sources = re.search(r"^##\s+Sources\s*$", markdown, flags=re.MULTILINE)
    if sources is None:
        return f"{markdown.rstrip()}\n\n{note}\n"
    return f"{markdown[: sources.start()].rstrip()}\n\n{note}\n\n{markdown[sources.start() :]}"


def outline_note(gaps: OutlineGaps) -> str:
    """The note a report delivered without following its outline carries."""
    parts = []
    if gaps.missing:
        parts.append("it has no section " + ", ".join(f'"{s}"' for s in gaps.missing))
    if gaps.out_of_order:
        parts.append("it has " + ", ".join(f'"{s}"' for s in gaps.out_of_order) + " out of the outline's order")
    return f"> **Note:** this report does not follow the outline you gave: {'; '.join(parts)}."
