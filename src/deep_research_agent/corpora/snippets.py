"""The snippet of a hit: the stretch of its text with the most query terms, the terms marked.

Why not FTS5's ``snippet()``: SQLite computes a selected column for every matching row before ``ORDER BY
… LIMIT`` keeps ten, so asking for snippets in the ranking query made it twice as slow; here they are cut
for the hits only. Terms are matched by their Porter stems, as the index matched them: a word counts when
it starts with a stem and is at most a few letters longer (``called`` for ``call``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SNIPPET_WORDS = 36
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_MAX_SUFFIX = 4


def _matches(word: str, stems: Sequence[str]) -> bool:
    lowered = word.lower()
    return any(lowered.startswith(stem) and len(lowered) - len(stem) <= _MAX_SUFFIX for stem in stems)


def make_snippet(text: str, stems: Sequence[str], *, words: int = SNIPPET_WORDS, mark: tuple[str, str] = ("**", "**")) -> str:
    """About ``words`` words of ``text`` around its densest run of query terms, each term wrapped in ``mark``."""
    flat = " ".join(text.split())
    spans = [(m.start(), m.end(), _matches(m.group(0), stems)) for m in _WORD_RE.finditer(flat)]
    if not spans:
        return flat[:240]
    hits = [i for i, (_, _, hit) in enumerate(spans) if hit]
    start = 0
    if hits:
        # The window of ``words`` words holding the most distinct matches, starting a little before the first.
        best, best_count = 0, -1
        for first in hits:
            window_start = max(0, first - 4)
            count = len({flat[spans[i][0] : spans[i][1]].lower() for i in hits if window_start <= i < window_start + words})
            if count > best_count:
                best, best_count = window_start, count
        start = best
    end = min(len(spans), start + words)
    begin_char = spans[start][0]
    end_char = spans[end - 1][1]
    pieces: list[str] = []
    position = begin_char
    for index in range(start, end):
        word_start, word_end, hit = spans[index]
        if hit:
            pieces.append(flat[position:word_start] + mark[0] + flat[word_start:word_end] + mark[1])
            position = word_end
    pieces.append(flat[position:end_char])
    body = "".join(pieces)
    return ("…" if begin_char > 0 else "") + body + ("…" if end_char < len(flat) else "")
