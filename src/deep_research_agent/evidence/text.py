"""The texts a run retrieved, prepared for every check that reads them: quotes, figures, sentences.

Contract:
- ``normalise_for_match`` reduces text to what a quote must share with its source (no case, typography,
  emphasis or spacing); ``quote_in_text`` finds a quote in a text, an ellipsis joining fragments in order;
- ``EvidenceText`` is one retrieved record (a page, an MCP result, a search snippet, a corpus passage),
  prepared lazily: nothing is scanned up front; a figure is looked up by the literal forms its value can be
  written in and each hit verified by parsing the sentence around it (``figures.py``), and every sentence
  parsed, every lookup, the normalised text and the lowered text are kept once computed. A record of any
  kind but ``search_result`` counts as read in full. It may be used from several threads at once;
- ``EvidenceLibrary`` holds a run's records by the key a citation names them by (``source_key``: a web
  page by its normalised URL, other evidence also by its title or label). Given a ``cache`` (the run's
  evidence store keeps one), a record is prepared once per run, not once per report or per claim.

Why lazily: a regular-expression pass over a 50 KB page costs milliseconds however simple the pattern,
while ``str.find`` of a literal costs microseconds; a report looks up a few figures per page.
Why not a search library (SQLite FTS5, rapidfuzz): a claim's check is exact (a figure's value, a quoted
phrase), over a few dozen texts held in memory; building an index per report would cost more than the
whole check.
"""

from __future__ import annotations

import bisect
import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from functools import cached_property
from typing import Any, NamedTuple, Protocol

from ..domain.names import EvidenceKind
from ..domain.urls import normalise_url
from .figures import IDENTIFIER, Figure, figures_in, form_ends_a_number, supports, written_forms

SNIPPET_KIND = EvidenceKind.SEARCH_RESULT
SENTENCE_CHARS = 300


class EvidenceLike(Protocol):
    """What a check needs of an evidence record (``run.EvidenceRecord`` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...


class _Record(NamedTuple):
    id: str
    url: str
    title: str
    kind: str
    text: str


def as_record(item: EvidenceLike | Mapping[str, Any]) -> _Record:
    if isinstance(item, Mapping):
        return _Record(*(str(item.get(field) or "") for field in _Record._fields))
    return _Record(*(str(getattr(item, field, "") or "") for field in _Record._fields))


# --- text matching -------------------------------------------------------------------------------

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)
_TYPOGRAPHY = str.maketrans(
    {
        **dict.fromkeys("‘’‚‛′´", "'"),
        **dict.fromkeys("“”„‟″«»", '"'),
        **dict.fromkeys("‐‑‒–—―−", "-"),
    }
)
_LINK_RE = re.compile(r"\[([^\]]*)\]\([^)]*\)")
# Markdown emphasis and code marks: a model's quote carries them, the page text does not.
_EMPHASIS_RE = re.compile(r"[*_~`]+")
_ELLIPSIS_RE = re.compile(r"\[\s*\.\.\.\s*\]|\(\s*\.\.\.\s*\)|(?:\.\s*){3,}")
_FRAGMENT_EDGES = " ,;:.-\"'"


def normalise_for_match(text: str) -> str:
    """Text reduced to what a quote must share with its source: no case, typography, emphasis or spacing."""
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)
    text = _EMPHASIS_RE.sub("", _LINK_RE.sub(r"\1", text).translate(_TYPOGRAPHY))
    return " ".join(text.casefold().split())


def quote_fragments(quote: str) -> list[str]:
    """A quote's normalised fragments: an ellipsis splits it, and each fragment must be found in order."""
    fragments = (
        fragment.strip(_FRAGMENT_EDGES)
        for fragment in _ELLIPSIS_RE.split(normalise_for_match(quote).strip(_FRAGMENT_EDGES))
    )
    return [fragment for fragment in fragments if fragment]


def fragments_in(fragments: Sequence[str], haystack: str) -> bool:
    """True when every fragment occurs in the normalised ``haystack``, in order."""
    if not fragments:
        return False
    position = 0
    for fragment in fragments:
        found = haystack.find(fragment, position)
        if found == -1:
            return False
        position = found + len(fragment)
    return True


def quote_in_text(quote: str, text: str) -> bool:
    """True when ``quote`` occurs in ``text`` after normalisation; an ellipsis may join fragments found in order."""
    return fragments_in(quote_fragments(quote), normalise_for_match(text))


def is_web(url: str) -> bool:
    return url.lower().startswith(("http://", "https://"))


def source_key(source: str) -> str:
    """The key a citation, a finding or an evidence record names one source by."""
    return normalise_url(source) if is_web(source) else source.strip().casefold()


# --- one record ------------------------------------------------------------------------------------

# Where a sentence of a retrieved text ends: . ! or ? before a space or line break, or a line break. A
# decimal point never ends one (no space follows it). Found with str.find/rfind from a position: a regex
# pass over a 50 KB page costs more than every lookup a report makes in it.
_ENDS = (". ", "! ", "? ", "\n")
_SENTENCE_WINDOW = 800
_WORD_RE = re.compile(r"[^\W\d_]{3,}")
STOPWORDS = frozenset(
    """about above after again against also among and another any are around because been before being below
    between both but can could did does doing down during each even from further had has have having her here
    hers him his how into its itself just more most much nor not now off once only other our out over own same
    she should some such than that the their theirs them then there these they this those through too under
    until very was were what when where which while who whom why will with would yet you your according per
    reported report says said stated states also nearly almost about roughly around approximately total
    new first last least most""".split()
)  # fmt: skip
_HEADER_RE = re.compile(r"(?:(?:Title|Author|Date): [^\n]*\n)+")
_MAX_HITS = 40
_RARE_WORDS = 6
_WORD_HITS = 12


def _initial(text: str, found: int) -> bool:
    """Whether the full stop at ``found`` follows a lone capital ("Franklin D. Roosevelt"): an initial, which
    ends no sentence."""
    return (
        text[found] == "."
        and found >= 1
        and text[found - 1].isupper()
        and (found == 1 or not text[found - 2].isalnum())
    )


def content_words(text: str) -> set[str]:
    """The words that name what a sentence is about: three letters or more, no stopwords, plurals folded."""
    return {_fold(word) for word in _WORD_RE.findall(text.casefold()) if word not in STOPWORDS}


def _fold(word: str) -> str:
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word


Span = tuple[int, int]


class EvidenceText:
    """One retrieved record, prepared lazily: a check looks up only the figures, quotes and words it needs.

    Nothing is scanned up front: a figure is found by the literal forms its value can be written in
    (``figures.written_forms``), each hit verified by parsing the sentence around it (parsed once, cached);
    the normalised text for quotes and the lowered text for words are built on first use.
    """

    def __init__(self, record: EvidenceLike | Mapping[str, Any]) -> None:
        self.id, self.url, self.title, self.kind, self.text = as_record(record)
        self.read = self.kind != SNIPPET_KIND
        self._sentence_figures: dict[int, list[Figure]] = {}
        self._sentence_words: dict[int, set[str]] = {}
        self._found: dict[tuple[str, str, str], tuple[int, list[tuple[Span, Figure]]]] = {}
        # The sentences found so far, sorted by start: a hit inside one is not looked up again.
        self._span_starts: list[int] = []
        self._spans: list[Span] = []
        self._spans_lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._best: dict[tuple[frozenset[str], int], list[Span]] = {}

    def keys(self) -> set[str]:
        # A web page is cited by its URL only; non-web evidence (a data source) also answers to its title.
        if is_web(self.url):
            return {normalise_url(self.url)}
        return {key for key in (self.url.strip().casefold(), self.title.strip().casefold()) if key}

    @cached_property
    def normalised(self) -> str:
        return normalise_for_match(self.text)

    @cached_property
    def _lowered(self) -> str:
        lowered = self.text.lower()
        # Offsets into the lowered text are offsets into the text only when lowering kept every length.
        return lowered if len(lowered) == len(self.text) else self.text

    # sentences

    def sentence_span(self, position: int) -> Span:
        """The sentence around ``position``, as ``(start, end)`` offsets."""
        with self._spans_lock:
            at = bisect.bisect_right(self._span_starts, position) - 1
            if at >= 0 and self._spans[at][0] <= position < self._spans[at][1]:
                return self._spans[at]
        text = self.text
        low = max(0, position - _SENTENCE_WINDOW)
        high = min(len(text), position + _SENTENCE_WINDOW)
        start = low
        for end_mark in _ENDS:
            found = text.rfind(end_mark, low, position)
            while found != -1 and _initial(text, found):
                found = text.rfind(end_mark, low, found)
            if found != -1 and found + len(end_mark) > start:
                start = found + len(end_mark)
        end = high
        for end_mark in _ENDS:
            found = text.find(end_mark, position, high)
            while found != -1 and _initial(text, found):
                found = text.find(end_mark, found + 1, high)
            if found != -1 and found + 1 < end:
                end = found + 1
        span = (start, max(end, position + 1))
        with self._spans_lock:
            at = bisect.bisect_left(self._span_starts, start)
            if at == len(self._span_starts) or self._span_starts[at] != start:
                self._span_starts.insert(at, start)
                self._spans.insert(at, span)
        return span

    def sentence(self, span: Span, *, around: int | None = None) -> str:
        """A sentence as written, whitespace collapsed, cut to ``SENTENCE_CHARS`` around ``around``."""
        start, end = span
        raw = self.text[start:end]
        if len(raw) > SENTENCE_CHARS:
            middle = (around - start) if around is not None else 0
            left = max(0, min(middle - SENTENCE_CHARS // 2, len(raw) - SENTENCE_CHARS))
            cut = raw[left : left + SENTENCE_CHARS].strip()
            raw = ("…" if left else "") + cut + ("…" if left + SENTENCE_CHARS < len(raw) else "")
        return " ".join(raw.split())

    def is_header(self, span: Span) -> bool:
        """A heading, or a "Label: value" line of the header a reader puts above a page's text (web_fetch's
        Title, Author, Date): it may repeat a figure, but a body sentence is the better evidence."""
        return span[0] < self._header_end or self.text.startswith("#", span[0])

    @cached_property
    def _header_end(self) -> int:
        match = _HEADER_RE.match(self.text)
        return match.end() if match else 0

    def words(self, span: Span) -> set[str]:
        found = self._sentence_words.get(span[0])
        if found is None:
            found = self._sentence_words[span[0]] = content_words(self.text[span[0] : span[1]])
        return found

    def figures(self, span: Span) -> list[Figure]:
        """The figures of one sentence, with offsets into the whole text."""
        found = self._sentence_figures.get(span[0])
        if found is None:
            start = span[0]
            found = self._sentence_figures[start] = [
                Figure(f.value, f.unit, f.kind, f.noun, f.text, f.start + start, f.end + start, f.scale)
                for f in figures_in(self.text[start : span[1]])
            ]
        return found

    # lookups

    def find(self, figure: Figure, *, limit: int = _MAX_HITS) -> list[tuple[Span, Figure]]:
        """Up to ``limit`` figures of this text that support ``figure``, with their sentences, in text order."""
        key = (figure.value, figure.unit, figure.kind)
        cached = self._found.get(key)
        # A cached lookup answers when it found everything there is, or at least ``limit``.
        if cached is not None and (len(cached[1]) < cached[0] or len(cached[1]) >= limit):
            return cached[1][:limit]
        found = self._find_identifier(figure, limit) if figure.kind == IDENTIFIER else self._find_number(figure, limit)
        self._found[key] = (limit, found)
        return found

    def holds(self, figure: Figure) -> bool:
        return bool(self.find(figure, limit=1))

    def rarity(self, figure: Figure) -> int:
        """How often the figure's plainest written form occurs in the text: a cheap guess at how many
        sentences a lookup would read."""
        if figure.kind == IDENTIFIER:
            return 0
        return self._count(written_forms(figure)[0][0], self.text)

    def _find_number(self, figure: Figure, limit: int) -> list[tuple[Span, Figure]]:
        text = self.text
        checked: set[int] = set()
        found: list[tuple[Span, Figure]] = []
        for form, scaled in written_forms(figure):
            position = text.find(form)
            while position != -1 and len(found) < limit:
                before = text[position - 1] if position else " "
                if not (before.isalnum() or before == ".") and form_ends_a_number(
                    text, position + len(form), form, scaled=scaled
                ):
                    span = self.sentence_span(position)
                    if span[0] not in checked:
                        checked.add(span[0])
                        supporting = next((f for f in self.figures(span) if supports(figure, f)), None)
                        if supporting is not None:
                            found.append((span, supporting))
                position = text.find(form, position + len(form))
        found.sort(key=lambda item: item[0])
        return found

    def _find_identifier(self, figure: Figure, limit: int) -> list[tuple[Span, Figure]]:
        # An identifier the source writes in another case ("ntb-7") is still the same name.
        lowered, value = self._lowered, figure.value
        found: list[tuple[Span, Figure]] = []
        position = lowered.find(value)
        while position != -1 and len(found) < limit:
            end = position + len(value)
            before = lowered[position - 1] if position else " "
            after = lowered[end] if end < len(lowered) else " "
            if not (before.isalnum() or before in "-_") and not (after.isalnum() or after == "_"):
                found.append(
                    (
                        self.sentence_span(position),
                        figure._replace(start=position, end=end, text=self.text[position:end]),
                    )
                )
            position = lowered.find(value, end)
        return found

    def contains_quote(self, fragments: Sequence[str]) -> bool:
        return fragments_in(fragments, self.normalised)

    def quote_span(self, fragments: Sequence[str]) -> Span | None:
        """The sentence holding the quote's first fragment, or None (it may run across sentences)."""
        first = fragments[0] if fragments else ""
        words = sorted(first.split(), key=len, reverse=True)[:1]
        if not words:
            return None
        position = self._lowered.find(words[0])
        while position != -1:
            span = self.sentence_span(position)
            if first in normalise_for_match(self.text[span[0] : span[1]]):
                return span
            position = self._lowered.find(words[0], position + 1)
        return None

    def best_spans(self, words: Iterable[str], *, count: int = 1) -> list[Span]:
        """The sentences where most of ``words`` occur (as word starts: "farm" finds "farms"), best first:
        the text's rarest of the words are followed to their first few sentences each."""
        key = (frozenset(words), count)
        cached = self._best.get(key)
        if cached is not None:
            return cached
        lowered = self._lowered
        rare = sorted(key[0], key=lambda word: (self._count(word, lowered), word))[:_RARE_WORDS]
        scores: dict[int, list[Any]] = {}
        for word in rare:
            seen: set[int] = set()
            position = lowered.find(word)
            while position != -1 and len(seen) < _WORD_HITS:
                if position == 0 or not lowered[position - 1].isalnum():
                    span = self.sentence_span(position)
                    if span[0] not in seen:
                        seen.add(span[0])
                        scores.setdefault(span[0], [0, span])[0] += 1
                position = lowered.find(word, position + len(word))
        ranked = sorted(scores.values(), key=lambda entry: (-entry[0], entry[1][0]))
        found = self._best[key] = [entry[1] for entry in ranked[:count]]
        return found

    def occurrences(self, word: str) -> int:
        """How often a lower-case word occurs in the text (as a substring, counted once per text)."""
        return self._count(word, self._lowered)

    def _count(self, literal: str, haystack: str) -> int:
        count = self._counts.get(literal)
        if count is None:
            count = self._counts[literal] = haystack.count(literal)
        return count


# --- a run's records -------------------------------------------------------------------------------


class EvidenceLibrary:
    """A run's records prepared for checks, found by the key a citation names them by."""

    def __init__(
        self,
        records: Iterable[EvidenceLike | Mapping[str, Any]],
        cache: MutableMapping[str, EvidenceText] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        """``aliases``: another URL of a work (normalised) -> the URL its texts are held under (normalised), so a
        citation or a finding naming either reads the texts of both."""
        self._aliases = {source_key(alias): source_key(primary) for alias, primary in (aliases or {}).items()}
        self._by_key: dict[str, list[EvidenceText]] = {}
        for record in records:
            item = as_record(record)
            # A record id names one text in a run; without a cache, or without an id, it is prepared here.
            cache_key = f"{item.id}:{len(item.text)}:{hash(item.text)}" if item.id else ""
            text = cache.get(cache_key) if cache is not None and cache_key else None
            if text is None:
                text = EvidenceText(item)
                if cache is not None and cache_key:
                    cache[cache_key] = text
            for key in text.keys():
                self._by_key.setdefault(self.canonical(key), []).append(text)

    def canonical(self, key: str) -> str:
        """The key a source's texts are held under: a work's first URL for its other URLs, else ``key``."""
        return self._aliases.get(key, key)

    def for_source(self, source: str) -> list[EvidenceText]:
        """The records held for a source (a URL or a label), read records first."""
        found = self._by_key.get(self.canonical(source_key(source)), [])
        return [t for t in found if t.read] + [t for t in found if not t.read]
