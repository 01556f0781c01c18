"""The snippet of a hit (the stretch of its text with the most query terms, the terms marked) and how much
of the query a passage covers.

Why not FTS5's ``snippet()``: SQLite computes a selected column for every matching row before ``ORDER BY
… LIMIT`` keeps ten, so asking for snippets in the ranking query made it twice as slow; here they are cut
for the hits only. Terms are matched by their Porter stems, as the index matched them: a word counts when
it starts with a stem and is at most a few letters longer (``called`` for ``call``); one regular expression
of every stem finds them all in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .backend import StoredPassage

SNIPPET_WORDS = 36
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_MAX_SUFFIX = 4


def stem_pattern(stems: Sequence[str]) -> re.Pattern[str] | None:
    """One regex finding every word that a stem matches, for ``coverage``."""
    if not stems:
        return None
    alternatives = "|".join(re.escape(stem) for stem in sorted(set(stems), key=len, reverse=True))
    return re.compile(rf"(?<!\w)({alternatives})\w{{0,{_MAX_SUFFIX}}}(?!\w)", re.IGNORECASE | re.UNICODE)


def coverage(passage: StoredPassage, stems: Sequence[str], pattern: re.Pattern[str] | None) -> float:
    """The share of ``stems`` found among the passage's words (its text and title path), 0 to 1."""
    if not stems or pattern is None:
        return 0.0
    text = passage.text + " " + " ".join(passage.title_path)
    found = {match.group(1).lower() for match in pattern.finditer(text)}
    return len(found & set(stems)) / len(set(stems))


def make_snippet(
    text: str,
    stems: Sequence[str],
    *,
    pattern: re.Pattern[str] | None = None,
    words: int = SNIPPET_WORDS,
    mark: tuple[str, str] = ("**", "**"),
) -> str:
    """About ``words`` words of ``text`` around its densest run of query terms, each term wrapped in ``mark``."""
    flat = " ".join(text.split())
    spans = [(m.start(), m.end()) for m in _WORD_RE.finditer(flat)]
    if not spans:
        return flat[:240]
    pattern = pattern if pattern is not None else stem_pattern(stems)
    matched = {m.start(): m.group(0).lower() for m in pattern.finditer(flat)} if pattern is not None else {}
    hits = [i for i, (start, _) in enumerate(spans) if start in matched]
    start = 0
    if hits:
        # The window of ``words`` words holding the most distinct matches, starting a little before the first.
        best, best_count = 0, -1
        for first in hits:
            window_start = max(0, first - 4)
            count = len({matched[spans[i][0]] for i in hits if window_start <= i < window_start + words})
            if count > best_count:
                best, best_count = window_start, count
        start = best
    end = min(len(spans), start + words)
    begin_char, end_char = spans[start][0], spans[end - 1][1]
    pieces: list[str] = []
    position = begin_char
    for index in hits:
        if not start <= index < end:
            continue
        word_start, word_end = spans[index]
        pieces.append(flat[position:word_start] + mark[0] + flat[word_start:word_end] + mark[1])
        position = word_end
    pieces.append(flat[position:end_char])
    body = "".join(pieces)
    return ("…" if begin_char > 0 else "") + body + ("…" if end_char < len(flat) else "")
