"""From what a person or a model types to an FTS5 query that cannot fail.

Contract: ``match_expression(text)`` returns an FTS5 MATCH string, or None when the text holds nothing to
search for. Every term is double-quoted, so FTS5 operators, column filters, lone quotes or minus signs in
the text are searched as words and never raise a syntax error. Terms are OR-ed (bm25 then ranks passages
by how many and how rare the terms they hold are):

- words, lower-cased, without English function words (an all-caps word such as ``NOT`` or ``IN`` is kept:
  in documentation it is usually a keyword);
- identifiers stay whole: ``work_mem`` and ``SQLITE_MAX_COLUMN`` are single tokens in the index (``_`` is
  a token character), a dotted or hyphenated name (``functools.lru_cache``, ``read-only``) is searched as
  the phrase of its parts and, rarer, as each part;
- a version or dotted number (``3.11``, ``3.24.0``) is the phrase of its parts, never its bare digits;
- a trailing ``()`` of a call is dropped.

``Fts5Index.search`` then leaves out words so common in the corpus that they rank nothing (see there).
"""

from __future__ import annotations

import re

# Versions, then identifiers with dots, ``::`` or hyphens between word parts, else single words; ``_`` is
# part of a word.
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)+|[A-Za-z_][\w]*(?:(?:\.|::|->|-)[A-Za-z_0-9]\w*)+|\w+", re.UNICODE)
_PART_RE = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
    herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more
    most mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same
    shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which
    while who who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself
    yourselves s t d ll m o re ve y also use used using get gets got way ways tell told give
    """.split()
)


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def query_terms(text: str) -> list[str]:
    """The FTS5 terms of ``text`` (each already quoted), rarest-looking shapes first, without repeats."""
    terms: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        token = match.group(0)
        parts = _PART_RE.findall(token)
        if len(parts) > 1:
            terms.append(_quoted(" ".join(parts).lower()))
            if not token[0].isdigit():
                terms.extend(_quoted(part.lower()) for part in parts if part.lower() not in STOPWORDS)
            continue
        lowered = token.lower()
        keyword = token.isupper() and len(token) > 1
        if lowered in STOPWORDS and not keyword:
            continue
        terms.append(_quoted(lowered))
    return list(dict.fromkeys(terms))


def match_expression(text: str) -> str | None:
    terms = query_terms(text)
    return " OR ".join(terms) if terms else None


def plain_words(text: str) -> list[str]:
    """Every word of ``text``, lower-cased and quoted: the plain query of the benchmark's baseline."""
    return list(dict.fromkeys(_quoted(word.lower()) for word in _PART_RE.findall(text)))
