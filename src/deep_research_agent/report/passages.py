"""The passages the claim judge reads for a claim: the sentences of its cited texts that hold its facts.

Contract:
- ``ClaimFacts.of(claim)`` is what a passage is chosen by: the claim's figures, quoted phrases, names and
  content words (their first letters, so "constructed" finds "construction").
- ``choose_passages(facts, text, count=...)`` returns up to ``count`` sentences of one text, best first: every
  ``PassageSignal`` proposes the sentences it finds (each figure's hits, each quote's sentence, each name's,
  the sentences sharing most words) and scores every proposed sentence; the scores add up. A page's header
  lines (``Title:``, ``Date:``) and headings are no passage: they repeat a page's words but state nothing.
  Slots no signal fills go to the sentences after the best one (a claim none of whose facts is in the text
  gets the text's first body sentences, never its title).
- ``shared_content(facts, passage)`` is the share of a claim's facts (figures, name words, content words) a
  passage holds, 0 to 1: how the judge's ``supported`` verdicts are held to the passage they name.

A sentence holding the claim's figure outranks one that shares only words: the figure is the fact a judge
must read. ``MeaningSignal(embedder)`` is one more ``PassageSignal`` passed in ``signals``: the sentences
nearest the claim in meaning (the vectors corpus search uses), so a paraphrase that shares no word with its
source still finds the sentence it restates (``with_meaning(embedder)`` is ``SIGNALS`` plus it).
No library: the retrieval libraries on the package index rank whole documents or need a model; the judge
needs the few sentences of one fetched page that hold a claim's own figures and names.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..embeddings import Embedder, EmbeddingFailed
from ..evidence.figures import DATE, YEAR, Figure, figures_in, masked_for_figures, same_measure, supports
from ..evidence.text import EvidenceText, Span, content_words, normalise_for_match, quote_fragments
from .claim_split import Claim
from .entities import fold

# A word's first letters stand for its forms ("reported", "reportedly"; "fixes", "fixed").
STEM = 4
# How many sentences each figure, name or word signal may propose from one text.
_HITS = 8
FIGURE_WEIGHT = 3.0
# A sentence holding another value of the same measure (another year, another length) is where a wrong
# figure would be corrected.
AKIN_FIGURE_WEIGHT = 1.0
QUOTE_WEIGHT = 3.0
NAME_WEIGHT = 2.0
WORD_WEIGHT = 1.0
# Meaning: a sentence's cosine with the claim above MEANING_FLOOR counts, scaled to 0..MEANING_WEIGHT at 1.
# MiniLM puts unrelated sentences near 0.1–0.3 and a restatement near 0.6–0.8, so a close paraphrase weighs
# about as much as a shared name, and a figure held still outranks it.
MEANING_WEIGHT = 3.0
MEANING_FLOOR = 0.3
# Embedding is the cost of meaning: about 20 to 70 sentences a second on two shared cores. So one text gives
# at most its first MEANING_SENTENCES body sentences, and one judging pass (one MeaningSignal) embeds at most
# MEANING_BUDGET in all, about 10 to 40 s; the texts beyond it are chosen by figures, names and words.
MEANING_SENTENCES = 200
MEANING_BUDGET = 800
# A word or name at most this often in a text counts in full; a more common one counts less (by the square
# root of how much more often it occurs): "POSTGRES" on every line of a page says little about which line.
_RARE = 2


_log = logging.getLogger(__name__)
# Claim vectors kept by one ``MeaningSignal``: a report's claims, several times over.
_CLAIMS_KEPT = 512


def stems(words: Iterable[str]) -> frozenset[str]:
    return frozenset(word[:STEM] for word in words)


@dataclass(frozen=True)
class ClaimFacts:
    """What a passage is chosen by: the claim's figures, quotes (as match fragments), names and words."""

    figures: tuple[Figure, ...]
    quotes: tuple[tuple[str, ...], ...]
    names: tuple[tuple[str, ...], ...]  # each name's words, folded
    words: frozenset[str]  # content words of the claim, names and figures aside
    word_stems: frozenset[str]
    sentence: str = ""  # the claim's words, citations aside, casefolded (``Claim.key``): what meaning reads

    @classmethod
    def of(cls, claim: Claim) -> ClaimFacts:
        names = tuple(tuple(fold(word) for word in name.words) for name in claim.names)
        name_words = {word for name in names for word in name}
        visible = masked_for_figures(claim.text)
        for figure in claim.figures:
            visible = visible[: figure.start] + " " * (figure.end - figure.start) + visible[figure.end :]
        words = frozenset(content_words(visible))
        return cls(
            figures=claim.figures,
            quotes=tuple(tuple(quote_fragments(quote)) for quote in claim.quotes),
            names=names,
            words=words,
            word_stems=stems(w for w in words if fold(w) not in name_words),
            sentence=claim.key,
        )

    @property
    def size(self) -> int:
        return len(self.figures) + sum(len(name) for name in self.names) + len(self.word_stems)


class PassageSignal(Protocol):
    """One way of finding the sentences of a text that hold a claim, and of scoring a sentence for it."""

    def propose(self, facts: ClaimFacts, text: EvidenceText) -> Iterable[Span]: ...

    def score(self, facts: ClaimFacts, text: EvidenceText, span: Span) -> float: ...


class FigureSignal:
    """The sentences holding the claim's figures, each figure held worth ``FIGURE_WEIGHT``."""

    def propose(self, facts: ClaimFacts, text: EvidenceText) -> Iterable[Span]:
        for figure in facts.figures:
            yield from (span for span, _ in text.find(figure, limit=_HITS))

    def score(self, facts: ClaimFacts, text: EvidenceText, span: Span) -> float:
        if not facts.figures:
            return 0.0
        found = text.figures(span)
        score = 0.0
        for figure in facts.figures:
            if any(supports(figure, g) for g in found):
                score += FIGURE_WEIGHT
            elif any(_akin(figure, g) for g in found):
                score += AKIN_FIGURE_WEIGHT
        return score


class QuoteSignal:
    """The sentence holding each quoted phrase's first fragment, each quote held worth ``QUOTE_WEIGHT``."""

    def propose(self, facts: ClaimFacts, text: EvidenceText) -> Iterable[Span]:
        for fragments in facts.quotes:
            span = text.quote_span(list(fragments))
            if span is not None:
                yield span

    def score(self, facts: ClaimFacts, text: EvidenceText, span: Span) -> float:
        if not facts.quotes:
            return 0.0
        sentence = normalise_for_match(text.text[span[0] : span[1]])
        return QUOTE_WEIGHT * sum(all(f in sentence for f in fragments) for fragments in facts.quotes)


class NameSignal:
    """The sentences naming the claim's names, each name whose every word is there worth ``NAME_WEIGHT``."""

    def propose(self, facts: ClaimFacts, text: EvidenceText) -> Iterable[Span]:
        folded = _folded(text)
        for name in facts.names:
            # A name's longest word is its rarest in a page, usually; the others score the sentences it finds.
            word = max(name, key=len)
            hits = 0
            for match in re.finditer(rf"(?<![^\W\d_]){re.escape(word)}", folded):
                yield text.sentence_span(match.start())
                hits += 1
                if hits == _HITS:
                    break

    def score(self, facts: ClaimFacts, text: EvidenceText, span: Span) -> float:
        if not facts.names:
            return 0.0
        sentence = _folded(text)[span[0] : span[1]]
        return NAME_WEIGHT * sum(
            _rarity(text, max(name, key=len))
            for name in facts.names
            if all(re.search(rf"(?<![^\W\d_]){re.escape(w)}", sentence) for w in name)
        )


class WordSignal:
    """The sentences sharing most of the claim's content words, each shared word worth ``WORD_WEIGHT``."""

    def propose(self, facts: ClaimFacts, text: EvidenceText) -> Iterable[Span]:
        return text.best_spans(facts.words, count=_HITS) if facts.words else []

    def score(self, facts: ClaimFacts, text: EvidenceText, span: Span) -> float:
        return WORD_WEIGHT * sum(_rarity(text, stem) for stem in facts.word_stems & stems(text.words(span)))


class MeaningSignal:
    """The sentences nearest the claim in meaning, each worth up to ``MEANING_WEIGHT`` by its cosine above
    ``MEANING_FLOOR``. A text's sentences are embedded once (its first ``MEANING_SENTENCES`` body sentences)
    and kept while the text lives; a claim's vector is kept while its sentence is asked about. Once ``budget``
    sentences are embedded, a text not embedded yet gets no meaning (``unread`` counts them; logged once).
    An embedder that fails proposes nothing and scores nothing, so the other signals choose; ``failure`` says
    why (logged once). Make one per judging pass: its budget and caches are that pass's."""

    def __init__(self, embedder: Embedder, *, budget: int = MEANING_BUDGET) -> None:
        self.embedder = embedder
        self.budget = budget
        self.remaining = budget
        self.unread = 0
        self.failure = ""
        self._lock = threading.Lock()
        self._texts: weakref.WeakKeyDictionary[EvidenceText, tuple[dict[int, int], list[Span], np.ndarray]] = (
            weakref.WeakKeyDictionary()
        )
        self._claims: dict[str, np.ndarray] = {}
        self._last: tuple[EvidenceText, str, list[Span], np.ndarray] | None = None

    def propose(self, facts: ClaimFacts, text: EvidenceText) -> Iterable[Span]:
        spans, cosines = self._cosines(facts, text)
        nearest = sorted(range(len(spans)), key=lambda row: -cosines[row])[:_HITS]
        return [spans[row] for row in nearest if cosines[row] > MEANING_FLOOR]

    def score(self, facts: ClaimFacts, text: EvidenceText, span: Span) -> float:
        spans, cosines = self._cosines(facts, text)
        row = self._rows(text).get(span[0])
        cosine = float(cosines[row]) if row is not None else 0.0
        return MEANING_WEIGHT * max(0.0, cosine - MEANING_FLOOR) / (1 - MEANING_FLOOR)

    def _cosines(self, facts: ClaimFacts, text: EvidenceText) -> tuple[list[Span], np.ndarray]:
        """The embedded sentences of ``text`` and their cosines to the claim (the last pair asked is kept)."""
        last = self._last
        if last is not None and last[0] is text and last[1] == facts.sentence:
            return last[2], last[3]
        spans: list[Span] = []
        cosines = np.zeros(0, dtype=np.float32)
        if facts.sentence and not self.failure:
            try:
                _, spans, matrix = self._sentences(text)
                cosines = matrix @ self._claim(facts.sentence) if spans else cosines
            except EmbeddingFailed as exc:
                self.failure = str(exc)
                _log.warning("the judge's passages are chosen without meaning: %s", exc)
                spans = []
                cosines = np.zeros(0, dtype=np.float32)
        self._last = (text, facts.sentence, spans, cosines)
        return spans, cosines

    def _rows(self, text: EvidenceText) -> dict[int, int]:
        with self._lock:
            found = self._texts.get(text)
        return found[0] if found is not None else {}

    def _sentences(self, text: EvidenceText) -> tuple[dict[int, int], list[Span], np.ndarray]:
        with self._lock:
            found = self._texts.get(text)
        if found is None:
            spans = []
            for span in _sentences_from(text, 0):
                if len(spans) >= min(MEANING_SENTENCES, self.remaining):
                    break
                spans.append(span)
            if not spans and self.remaining <= 0:
                self.unread += 1
                if self.unread == 1:
                    _log.warning("meaning read %s sentences; further cited texts are chosen without it", self.budget)
            self.remaining -= len(spans)
            matrix = (
                self.embedder.embed_documents([text.sentence(span) for span in spans])
                if spans
                else np.zeros((0, 0), dtype=np.float32)
            )
            found = ({span[0]: row for row, span in enumerate(spans)}, spans, matrix)
            with self._lock:
                self._texts[text] = found
        return found

    def _claim(self, sentence: str) -> np.ndarray:
        with self._lock:
            vector = self._claims.get(sentence)
        if vector is None:
            vector = self.embedder.embed_query(sentence)
            with self._lock:
                if len(self._claims) >= _CLAIMS_KEPT:
                    self._claims.clear()
                self._claims[sentence] = vector
        return vector


SIGNALS: tuple[PassageSignal, ...] = (FigureSignal(), QuoteSignal(), NameSignal(), WordSignal())


def with_meaning(embedder: Embedder | None) -> tuple[PassageSignal, ...]:
    """``SIGNALS``, and the meaning of ``embedder``'s vectors when there is one."""
    return SIGNALS if embedder is None else (*SIGNALS, MeaningSignal(embedder))


def choose_passages(
    facts: ClaimFacts, text: EvidenceText, *, count: int, signals: Sequence[PassageSignal] = SIGNALS
) -> list[Span]:
    """Up to ``count`` sentences of ``text`` for a claim, best first (see the module's contract)."""
    proposed: dict[int, Span] = {}
    for signal in signals:
        for span in signal.propose(facts, text):
            if not text.is_header(span):
                proposed.setdefault(span[0], span)
    scored = [(sum(signal.score(facts, text, span) for signal in signals), span) for span in proposed.values()]
    chosen = [span for score, span in sorted(scored, key=lambda item: (-item[0], item[1][0])) if score > 0][:count]
    # Slots left are filled with the sentences that follow the best one (or the first of the body): a fact is
    # often continued, or its cause given, in the next sentence.
    anchor = chosen[0][1] if chosen else len(text.text) - len(text.text.lstrip())
    for span in _sentences_from(text, anchor):
        if len(chosen) >= count:
            break
        if all(span[0] != other[0] for other in chosen):
            chosen.append(span)
    return chosen


def shared_content(facts: ClaimFacts, passage: str) -> float:
    """The share of the claim's figures, name words and content words that ``passage`` holds (1 for a claim
    with none of these: there is nothing to share)."""
    if not facts.size:
        return 1.0
    found = figures_in(passage)
    held = sum(any(supports(f, g) for g in found) for f in facts.figures)
    folded = fold(passage)
    held += sum(bool(re.search(rf"(?<![^\W\d_]){re.escape(w)}", folded)) for name in facts.names for w in name)
    held += len(facts.word_stems & stems(content_words(passage)))
    return held / facts.size


def _akin(claimed: Figure, found: Figure) -> bool:
    """Another value of the same measure: the same unit or noun, or both years, or both dates."""
    if claimed.kind in (YEAR, DATE) or found.kind in (YEAR, DATE):
        return claimed.kind == found.kind
    return same_measure(claimed, found)


def _rarity(text: EvidenceText, word: str) -> float:
    occurrences = text.occurrences(word)
    return 1.0 if occurrences <= _RARE else math.sqrt(_RARE / occurrences)


def _sentences_from(text: EvidenceText, position: int) -> Iterator[Span]:
    """The body sentences of ``text`` from ``position`` on, header lines and blank ones skipped."""
    while position < len(text.text):
        while position < len(text.text) and text.text[position].isspace():
            position += 1
        if position >= len(text.text):
            return
        span = text.sentence_span(position)
        if not text.is_header(span) and text.text[span[0] : span[1]].strip():
            yield span
        position = max(span[1], position + 1)


_FOLDED: weakref.WeakKeyDictionary[EvidenceText, str] = weakref.WeakKeyDictionary()


def _folded(text: EvidenceText) -> str:
    """The text folded like a claim's names (``entities.fold``), once per prepared text, each character to one
    so that offsets into it are offsets into the text."""
    folded = _FOLDED.get(text)
    if folded is None:
        folded = fold(text.text)
        if len(folded) != len(text.text):
            folded = "".join(fold(c)[:1] or c for c in text.text)
        _FOLDED[text] = folded
    return folded
