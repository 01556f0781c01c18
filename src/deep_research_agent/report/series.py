"""Recognising a numeric series written out point by point, and stating it as one statistic.

A transcribed series ("2024-01-01: 42.1", line after line) is a data dump: the reader needs its count,
span, extremes and mean, not its rows. The findings gate uses ``inline_series`` to spot a series
inside a field; the report scrub uses ``parse_row`` to find runs of data rows and ``describe`` to
replace them; ``summarize`` computes the statistics both use, and the stub of an offloaded time series
(``tools/results.py``) states in full: span, first and last, min and max with when, mean, median, direction.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_MONTH_NUM = r"(?:0?[1-9]|1[0-2])"
# Longest forms first, so "2024-01-05" is not read as the month "2024-01" followed by "-05".
DATE = (
    rf"(?:\d{{4}}-{_MONTH_NUM}-\d{{1,2}}(?:[T ]\d{{2}}:\d{{2}}(?::\d{{2}})?(?:Z|[+-]\d{{2}}:?\d{{2}})?)?"
    rf"|\d{{4}}/{_MONTH_NUM}/\d{{1,2}}"
    rf"|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}"
    rf"|{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}"
    rf"|\d{{1,2}}\s+{_MONTH}\s+\d{{4}}"
    rf"|{_MONTH}\s+\d{{4}}"
    rf"|\d{{4}}-{_MONTH_NUM}(?![\d-])"
    rf"|Q[1-4]\s*'?\d{{2,4}}"
    rf"|(?:19|20)\d{{2}})"
)
NUMBER = r"[-−+]?[$€£¥]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"

_PAIR_RE = re.compile(
    rf"(?<![\w/])(?P<date>{DATE})\s*(?:[:=|,;→]|[-–—]+>?|\s)\s*(?P<value>{NUMBER})(?![\d/-])", re.IGNORECASE
)
_CITATION_RE = re.compile(r"\s*\[\d+(?:\s*[-–,]\s*\d+)*\]")
_MARKER_RE = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|>\s*)?\|?\s*")
_ROW_RE = re.compile(rf"^(?P<date>{DATE})\s*(?:[:=|,;\t→]|[-–—]+>?(?=\s)|\s)\s*(?P<rest>.+?)\s*\|?\s*$", re.IGNORECASE)
_NUMBER_RE = re.compile(rf"\(?(?P<number>{NUMBER})(?P<unit>%)?\)?")
_UNIT_RE = re.compile(r"[A-Za-z$€£/]{1,8}\)?")
# A comma followed by exactly three digits is a thousands separator, not a cell boundary.
_CELL_SPLIT_RE = re.compile(r"\s*[|;\t]\s*|,(?!\d{3}(?!\d))\s*|\s+")


@dataclass(frozen=True)
class Point:
    label: str
    value: float
    unit: str
    citations: tuple[str, ...] = ()


def to_float(number: str) -> float:
    return float(re.sub(r"[,+$€£¥]", "", number).replace("−", "-"))


def inline_series(text: str) -> tuple[str, list[Point]]:
    """The text before the first date/value pair, and every pair in ``text`` (a date directly followed by a number)."""
    matches = list(_PAIR_RE.finditer(text))
    lead = text[: matches[0].start()] if matches else text
    return lead, [Point(label=m["date"], value=to_float(m["value"]), unit="") for m in matches]


def parse_row(line: str) -> Point | None:
    """The point a line states when it is a data row (a date, then only numbers), else None."""
    citations = tuple(c.strip() for c in _CITATION_RE.findall(line))
    bare = _CITATION_RE.sub("", line)
    bare = _MARKER_RE.sub("", bare, count=1).rstrip()
    match = _ROW_RE.match(bare)
    if match is None:
        return None
    values = _numeric_cells(match["rest"].strip().strip("|"))
    if not values:
        return None
    number, unit = values[0]
    return Point(label=match["date"], value=to_float(number), unit=unit, citations=citations)


def _numeric_cells(rest: str) -> list[tuple[str, str]]:
    """``(number, unit)`` per cell when every cell is a number with an optional unit, else empty."""
    cells: list[tuple[str, str]] = []
    for token in filter(None, _CELL_SPLIT_RE.split(rest.strip())):
        number = _NUMBER_RE.fullmatch(token)
        if number:
            cells.append((number["number"], number["unit"] or ""))
        elif cells and not cells[-1][1] and _UNIT_RE.fullmatch(token):
            cells[-1] = (cells[-1][0], token.rstrip(")"))
        else:
            return []
    return cells


def _format_number(value: float) -> str:
    text = f"{value:,.2f}".rstrip("0").rstrip(".")
    return "0" if text in {"-0", ""} else text


# A change of less than this fraction of the first value, first to last, is "flat".
FLAT_CHANGE = 0.01


@dataclass(frozen=True)
class SeriesSummary:
    """The statistics that stand for a series of points in order: never list it row by row."""

    count: int
    first: Point
    last: Point
    low: Point
    high: Point
    mean: float
    median: float

    @property
    def change(self) -> float | None:
        """First to last, as a fraction of the first value; None when the first value is 0."""
        if self.first.value == 0:
            return None
        return (self.last.value - self.first.value) / abs(self.first.value)

    @property
    def direction(self) -> str:
        """up, down or flat, first to last."""
        delta = self.last.value - self.first.value
        change = self.change
        if delta == 0 or (change is not None and abs(change) < FLAT_CHANGE):
            return "flat"
        return "up" if delta > 0 else "down"

    def sentence(self, name: str = "") -> str:
        """The whole statistic in one line: ``name: first … → last … (up 12.5%); min … (when), max …; mean …, median ….``"""
        change = self.change
        trend = self.direction if change is None or self.direction == "flat" else f"{self.direction} {abs(change):.1%}"
        lead = f"{name}: " if name else ""
        return (
            f"{lead}first {_format_number(self.first.value)} ({self.first.label}) → last {_format_number(self.last.value)} "
            f"({self.last.label}), {trend}; min {_format_number(self.low.value)} ({self.low.label}), "
            f"max {_format_number(self.high.value)} ({self.high.label}); mean {_format_number(self.mean)}, "
            f"median {_format_number(self.median)}."
        )


def summarize(points: list[Point]) -> SeriesSummary:
    """The statistics of ``points``, taken in the order given (oldest first); at least one point."""
    return summarize_values([p.label for p in points], [p.value for p in points])


def summarize_values(labels: Sequence[str], values: Sequence[float]) -> SeriesSummary:
    """``summarize`` over parallel labels and values (oldest first), without a ``Point`` per row."""
    if not values or len(labels) != len(values):
        raise ValueError("a series needs at least one point, and one label per value")
    low = min(range(len(values)), key=values.__getitem__)
    high = max(range(len(values)), key=values.__getitem__)

    def point(index: int) -> Point:
        return Point(label=labels[index], value=values[index], unit="")

    return SeriesSummary(
        count=len(values),
        first=point(0),
        last=point(len(values) - 1),
        low=point(low),
        high=point(high),
        mean=statistics.fmean(values),
        median=statistics.median(values),
    )


def describe(points: list[Point], *, heading: str = "") -> str:
    """One line that stands for the series: count, span first → last, min and max with where, mean.

    ``heading`` replaces the default "Series of N values" opening (a table names its columns)."""
    unit = points[0].unit if len({p.unit for p in points}) == 1 else ""

    def amount(value: float) -> str:
        number = _format_number(value)
        if not unit:
            return number
        return f"{number}{unit}" if unit == "%" else f"{number} {unit}"

    summary = summarize(points)
    citations = "".join(dict.fromkeys(c for p in points for c in p.citations))
    text = (
        f"{heading or f'Series of {len(points)} values'}, {points[0].label} → {points[-1].label}: "
        f"min {amount(summary.low.value)} ({summary.low.label}), max {amount(summary.high.value)} ({summary.high.label}), "
        f"mean {amount(summary.mean)}."
    )
    return f"{text[:-1]} {citations}." if citations else text
