"""Holding a report to the length its reader asked for (``report_style``): a brief one is not an essay, a
detailed one is not a summary.

Contract: ``report_words(markdown)`` counts the words of a report's prose: its Sources section, fenced code,
citation markers, URLs and Markdown marks left out; in scripts written without spaces (Chinese, Japanese,
Thai, ...) a word is counted per ``CHARS_PER_UNSPACED_WORD`` letters, so a Japanese report is measured on the
scale of an English one. ``length_gap(markdown, style)`` is the ``LengthGap`` of a report far outside its
style's range (``domain/reader.STYLE_TARGETS``): over ``TOO_LONG_FACTOR`` × the top of a brief report's
range, under ``TOO_SHORT_FACTOR`` × the bottom of a detailed one's; a ``standard`` report, which asks for
no length, never has one. ``length_problem`` words it for the writer; the report gate sends it back once
with the other problems, and a report still off after its revision is delivered as it is, with a warning.

Why so loose: the range is what the model is asked to write, and a report a little outside it is still
what the reader asked for; only one of another kind (a brief of three pages, a "detailed" paragraph) is
worth a revision, which costs a model call and the report's tokens again.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ..domain.reader import STYLE_TARGETS, ReportStyle
from .markdown import CITATION_RE, mask_code, split_sources

TOO_LONG_FACTOR = 1.5
TOO_SHORT_FACTOR = 0.5
CHARS_PER_UNSPACED_WORD = 2.5
_URL = re.compile(r"(?:https?|corpus)://\S+")
_WORD = re.compile(r"\w+")
# Scripts written without spaces between words: their letters are counted, not their space-separated runs.
_UNSPACED_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN")


@dataclass(frozen=True)
class LengthGap:
    """A report's words, and the range its style asks for."""

    style: ReportStyle
    words: int
    low: int
    high: int

    @property
    def too_long(self) -> bool:
        return self.words > self.high


def _unspaced(char: str) -> bool:
    return unicodedata.name(char, "").startswith(_UNSPACED_SCRIPTS)


def report_words(markdown: str) -> int:
    """The words of the report's prose (see the module contract)."""
    prose = mask_code(split_sources(markdown).before)
    prose = CITATION_RE.sub(" ", _URL.sub(" ", prose))
    words = 0
    unspaced = 0
    for token in _WORD.findall(prose):
        letters = sum(1 for char in token if _unspaced(char))
        unspaced += letters
        if letters < len(token):
            words += 1
    return words + round(unspaced / CHARS_PER_UNSPACED_WORD)


def length_gap(markdown: str, style: str) -> LengthGap | None:
    """How far ``markdown`` is outside the length ``style`` asks for, or None when it is near enough."""
    preset = ReportStyle(style)
    if preset is ReportStyle.STANDARD:
        return None
    low, high = STYLE_TARGETS[preset].words
    words = report_words(markdown)
    if preset is ReportStyle.BRIEF and words > TOO_LONG_FACTOR * high:
        return LengthGap(preset, words, low, high)
    if preset is ReportStyle.DETAILED and words < TOO_SHORT_FACTOR * low:
        return LengthGap(preset, words, low, high)
    return None


def length_problem(gap: LengthGap) -> str:
    """What the writer must change for the report to have the length its reader asked for."""
    asked = f"the reader asked for a {gap.style.value} report of {gap.low:,}-{gap.high:,} words"
    if gap.too_long:
        return (
            f"The report is about {gap.words:,} words; {asked}: keep what answers the question, cut background "
            "and repetition, and keep every citation of what stays."
        )
    return (
        f"The report is about {gap.words:,} words; {asked}: cover each angle the research found with its "
        "evidence, where sources disagree and what remains open, citing the sources the units read."
    )


def length_warning(gap: LengthGap) -> str:
    """The warning of a report delivered still outside its length, after its one revision."""
    return f"The report is about {gap.words:,} words; a {gap.style.value} report is {gap.low:,}-{gap.high:,} words."
