"""Checked claims: every claim of a report held against the full text of the evidence it cites.

Contract (the claims are ``claim_split.split_claims``'s):
- ``check_claims(markdown, citations, library)`` judges each claim against the texts the run retrieved
  for the sources it cites (``citations`` is ``check_citations`` on the same text): every figure
  (``figures.py``) and every quoted phrase must be in the union of the texts of its cited sources that
  the run read in full (a page, an MCP result, a corpus passage; a search snippet is not read). A claim is
  judged on its own text only: a source verified for another sentence proves nothing about this one.
  Verdicts (``ClaimVerdict``), first match: ``uncited_number``, ``source_not_read`` (no cited source was
  read in full), ``unsupported_number``, ``unsupported_quote``, ``conflicting`` (two cited sources give
  different values in the same unit, near the same words), ``contradicted`` (a directional word bound to a
  figure, or a superlative, comparative or change word of the sentence, is reversed by the source's words
  around the same figure or in its nearest sentence: ``direction.py``), ``unsupported_name`` (a name of
  the claim is in none of its cited texts, nor in a cited source's title: ``entities.py``), ``supported``
  when it has a figure, a quote or a name and all of them check out (no direction reversed), else
  ``unchecked``: a sentence with nothing to look up is never called supported because a source was read.
  Each record names the offending ``tokens`` and, per cited source, the sentence of its text nearest to the
  claim, and says how it was decided (``decided_by``: ``figures_and_quotes`` when the claim has a figure or
  a quote, ``names_and_direction`` when it has names but no figure or quote, ``not_checked`` when it has
  none of these). Figures are labels, versions and identifiers as ``figures.py`` reads them: "Finding
  1" states no figure. ``ClaimCheck.summary`` is ``domain.claims.summarise_claims`` of its records.
- ``ClaimCheck.judgeable()`` are the claims the judge (``judge.py``) decides: unchecked, supported with no
  figure and no quote, or supported with a word that none of the sentences holding its figures and quotes
  has (a cause, a detail beside a correct figure); ``judge.apply_judgements`` puts its verdicts in.
- ``ClaimCheck.problems()`` states each failing claim as an instruction for the report gate's one bounce.
- ``mark_unverified(markdown, check)`` appends `` [unverified]`` to every claim whose verdict flags it
  (neither ``supported`` nor ``unchecked``; after its last citation, or before its closing punctuation),
  never twice.

No model is called here: it is local text work, and each text is prepared once per run (``evidence/text.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from ..domain.claims import CitationRecord, ClaimRecord, ClaimSource, ClaimSummary, summarise_claims
from ..domain.names import ClaimMethod, ClaimVerdict
from ..evidence.figures import DATE, IDENTIFIER, YEAR, Figure, masked_for_figures, same_measure, supports
from ..evidence.text import EvidenceLibrary, EvidenceText, Span, content_words, normalise_for_match, quote_fragments
from .citations import CitationReport
from .claim_split import UNVERIFIED_MARK, Claim, split_claims
from .direction import Direction, bound_directions, disagreement, sentence_directions, spelled_numbers
from .entities import NameIndex, known_names, missing_names, name_index, names_in

_EXCERPT_CHARS = 160
_CONTEXT_WORDS = 6
# How many sentences holding a claim's figure compete for its nearest sentence, and how many sentences of
# another cited source, those sharing most words with the claim, are read for a conflicting value.
_NEAREST_HITS = 8
_CONFLICT_SENTENCES = 12


@dataclass(frozen=True)
class CheckedClaim:
    claim: Claim
    record: ClaimRecord
    # For the bounce: the nearest sentence of each cited source, or the conflicting one.
    hints: tuple[str, ...] = field(default=())
    # Whether the deterministic checks settle a supported claim: it has no word beyond the sentences its
    # figures and quotes were found in. An unsettled one goes to the judge with the claims without figures.
    settled: bool = True


@dataclass(frozen=True)
class ClaimCheck:
    checked: list[CheckedClaim]
    # The claim judge called its planted control claim supported: none of its verdicts is in these records.
    judge_unreliable: bool = False

    @property
    def records(self) -> list[ClaimRecord]:
        return [c.record for c in self.checked]

    @property
    def summary(self) -> ClaimSummary:
        return summarise_claims(self.records, judge_unreliable=self.judge_unreliable)

    def judgeable(self) -> list[CheckedClaim]:
        """The claims no deterministic check can settle: unchecked (no figure, quote or name), supported with
        no figure and no quote (their names, if any, were found), or supported with words beyond the
        sentences their figures and quotes were found in. The judge decides these."""
        return [
            c
            for c in self.checked
            if c.record.verdict == ClaimVerdict.UNCHECKED
            or (
                c.record.verdict == ClaimVerdict.SUPPORTED
                and (not (c.claim.figures or c.claim.quotes) or not c.settled)
            )
        ]

    def with_records(self, updated: dict[int, tuple[ClaimRecord, tuple[str, ...]]]) -> ClaimCheck:
        """This check with the records (and hints) of some claims, by their position, replaced."""
        return ClaimCheck(
            [
                CheckedClaim(c.claim, *updated[i], settled=c.settled) if i in updated else c
                for i, c in enumerate(self.checked)
            ],
            judge_unreliable=self.judge_unreliable,
        )

    def problems(self) -> list[str]:
        """Each failing claim as an instruction to the report's writer (a claim resting on a source that was
        never read is left to the citation check, which names that source once)."""
        return [text for checked in self.checked if (text := _problem(checked))]


# --- checking --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cited:
    index: int
    citation: CitationRecord | None
    read: tuple[EvidenceText, ...]
    snippets: tuple[EvidenceText, ...]


@dataclass(frozen=True)
class _Conflict:
    claimed: Figure
    holder: _Cited
    other: _Cited
    other_text: EvidenceText
    other_span: Span
    other_figure: Figure


def check_claims(markdown: str, citations: CitationReport, library: EvidenceLibrary) -> ClaimCheck:
    """Every claim of ``markdown`` judged against the texts its citations point to."""
    by_index = {c.index: c for c in citations.citations}
    claims = split_claims(markdown)
    known = known_names(claim.text for claim in claims)
    named = [replace(claim, names=tuple(names_in(claim.text, known=known))) for claim in claims]
    return ClaimCheck([_check(claim, by_index, library) for claim in named])


def _cited(index: int, citation: CitationRecord | None, library: EvidenceLibrary) -> _Cited:
    if citation is None or citation.action == "remove":
        return _Cited(index, citation, (), ())
    texts = library.for_source(citation.url or citation.title)
    return _Cited(index, citation, tuple(t for t in texts if t.read), tuple(t for t in texts if not t.read))


def _check(claim: Claim, by_index: dict[int, CitationRecord], library: EvidenceLibrary) -> CheckedClaim:
    text = " ".join(claim.text.split())
    if not claim.indexes:
        tokens = [f.text for f in claim.figures]
        record = ClaimRecord(
            claim=text,
            verdict=ClaimVerdict.UNCITED_NUMBER,
            tokens=tokens,
            detail=f"{_listed(tokens)} with no citation",
            decided_by=ClaimMethod.FIGURES_AND_QUOTES,
        )
        return CheckedClaim(claim, record)
    cited = [_cited(n, by_index.get(n), library) for n in claim.indexes]
    words = content_words(masked_for_figures(claim.text))
    if not any(c.read for c in cited):
        return CheckedClaim(
            claim, _record(claim, text, cited, words, ClaimVerdict.SOURCE_NOT_READ, [], _not_read(cited))
        )
    texts = [t for c in cited for t in c.read]
    missing = [f for f in claim.figures if not any(t.holds(f) for t in texts)]
    unquoted = [q for q in claim.quotes if not any(t.contains_quote(quote_fragments(q)) for t in texts)]
    where = _where(cited)
    if missing:
        tokens = [f.text for f in missing] + [f"“{q}”" for q in unquoted]
        record = _record(
            claim,
            text,
            cited,
            words,
            ClaimVerdict.UNSUPPORTED_NUMBER,
            tokens,
            f"{_listed(tokens)} not in the text of {where}",
        )
        return CheckedClaim(claim, record, _hints(record))
    if unquoted:
        tokens = [f"“{q}”" for q in unquoted]
        record = _record(
            claim,
            text,
            cited,
            words,
            ClaimVerdict.UNSUPPORTED_QUOTE,
            tokens,
            f"{_listed(tokens)} not in the text of {where}",
        )
        return CheckedClaim(claim, record, _hints(record))
    conflict = _conflict(claim, cited)
    if conflict is not None:
        tokens = [conflict.claimed.text, conflict.other_figure.text]
        detail = f"[{conflict.holder.index}] gives {conflict.claimed.text}, [{conflict.other.index}] gives {conflict.other_figure.text}"
        record = _record(claim, text, cited, words, ClaimVerdict.CONFLICTING, tokens, detail, conflict=conflict)
        return CheckedClaim(claim, record, _hints(record))
    stated = sentence_directions(masked_for_figures(claim.text), figures=[(f.start, f.end) for f in claim.figures])
    reversal = _reversal(claim, cited, words, stated)
    if reversal is not None:
        record = _record(
            claim,
            text,
            cited,
            words,
            ClaimVerdict.CONTRADICTED,
            [reversal.claimed],
            f"[{reversal.source.index}] says {reversal.says}",
            method=ClaimMethod.NAMES_AND_DIRECTION,
            sentence=(reversal.source, reversal.text, reversal.span, reversal.around),
        )
        return CheckedClaim(claim, record, _hints(record))
    holders = [name_index(t) for t in texts]
    titles = " ".join(f"{c.citation.title} {c.citation.url or ''}" for c in cited if c.citation and c.read)
    unnamed = missing_names(claim.names, [*holders, NameIndex(titles)])
    if unnamed:
        tokens = list(dict.fromkeys(name.text for name in unnamed))
        record = _record(
            claim,
            text,
            cited,
            words,
            ClaimVerdict.UNSUPPORTED_NAME,
            tokens,
            f"{_listed(tokens)} not in the text of {where}",
            method=ClaimMethod.NAMES_AND_DIRECTION,
        )
        return CheckedClaim(claim, record, _hints(record))
    settled = True
    if claim.figures or claim.quotes:
        method = ClaimMethod.FIGURES_AND_QUOTES
        settled = _covered(claim, texts)
    elif claim.names:
        method = ClaimMethod.NAMES_AND_DIRECTION
    else:
        # A directional word the source does not reverse is no fact found in it: "fell" beside an invented cause.
        detail = f"no figure, quote or name to look up in the text of {where}"
        record = _record(claim, text, cited, words, ClaimVerdict.UNCHECKED, [], detail, method=ClaimMethod.NOT_CHECKED)
        return CheckedClaim(claim, record)
    record = _record(claim, text, cited, words, ClaimVerdict.SUPPORTED, [], "", method=method)
    return CheckedClaim(claim, record, settled=settled)


_STEM = 5


def _covered(claim: Claim, texts: Sequence[EvidenceText]) -> bool:
    """Whether every content word of a claim (its figures' and quotes' own words aside) is in the sentences
    that hold its figures and quotes, a word's first letters standing for its forms ("reported",
    "reportedly")."""
    visible = masked_for_figures(claim.text)
    for figure in claim.figures:
        visible = visible[: figure.start] + " " * (figure.end - figure.start) + visible[figure.end :]
    for quote in claim.quotes:
        visible = visible.replace(quote, " ")
    wanted = {word[:_STEM] for word in content_words(visible) if len(word) >= 4}
    if not wanted:
        return True
    held: set[str] = set()
    for text in texts:
        # The sentences the nearest-sentence search reads: every hit of the rarest figure (already looked
        # up), the first of each other.
        for rank, figure in enumerate(sorted(claim.figures, key=text.rarity)):
            for span, _ in text.find(figure, limit=_NEAREST_HITS if rank == 0 else 1):
                held |= {word[:_STEM] for word in text.words(span)}
        for quote in claim.quotes:
            span = text.quote_span(quote_fragments(quote))
            if span is not None:
                held |= {word[:_STEM] for word in text.words(span)}
    return wanted <= held


def _record(
    claim: Claim,
    text: str,
    cited: list[_Cited],
    words: set[str],
    verdict: ClaimVerdict,
    tokens: list[str],
    detail: str,
    *,
    conflict: _Conflict | None = None,
    method: ClaimMethod | None = None,
    sentence: tuple[_Cited, EvidenceText, Span, int | None] | None = None,
) -> ClaimRecord:
    sources = []
    for c in cited:
        texts = c.read or c.snippets
        evidence_id, sentence_text = None, ""
        if conflict is not None and c is conflict.other:
            evidence_id = conflict.other_text.id
            sentence_text = conflict.other_text.sentence(conflict.other_span, around=conflict.other_figure.start)
        elif sentence is not None and c is sentence[0]:
            evidence_id = sentence[1].id
            sentence_text = sentence[1].sentence(sentence[2], around=sentence[3])
        elif texts:
            evidence_id, sentence_text = _nearest(claim, texts, words)
        citation = c.citation
        sources.append(
            ClaimSource(
                index=c.index,
                url=citation.url if citation else None,
                title=citation.title if citation else "",
                evidence_id=evidence_id or (citation.evidence_id if citation else None),
                sentence=sentence_text,
            )
        )
    if method is None:
        method = ClaimMethod.NOT_CHECKED if verdict == ClaimVerdict.SOURCE_NOT_READ else ClaimMethod.FIGURES_AND_QUOTES
    return ClaimRecord(
        claim=text,
        indexes=list(claim.indexes),
        verdict=verdict,
        tokens=tokens,
        detail=detail,
        decided_by=method,
        sources=sources,
    )


def _nearest(claim: Claim, texts: Sequence[EvidenceText], words: set[str]) -> tuple[str | None, str]:
    """The sentence of ``texts`` nearest to the claim: the one holding most of its figures and quotes, then a
    body sentence before a page's header line, then the one sharing most of its words."""
    best: tuple[tuple[int, bool, int], EvidenceText, Span, int | None] | None = None
    quotes = [(quote, quote_fragments(quote)) for quote in claim.quotes]
    for text in texts:
        candidates: dict[Span, int | None] = {}
        # The sentences holding the claim's rarest figure compete; its other figures only score them.
        for figure in sorted(claim.figures, key=text.rarity):
            for span, found in text.find(figure, limit=_NEAREST_HITS):
                candidates.setdefault(span, found.start)
            if candidates:
                break
        for _, fragments in quotes:
            if text.contains_quote(fragments) and (span := text.quote_span(fragments)) is not None:
                candidates.setdefault(span, None)
        if not candidates:
            candidates = dict.fromkeys(text.best_spans(words, count=3))
        for span, around in candidates.items():
            parsed = text.figures(span)
            sentence = normalise_for_match(text.text[span[0] : span[1]]) if quotes else ""
            held = sum(any(supports(f, g) for g in parsed) for f in claim.figures)
            held += sum(all(fragment in sentence for fragment in fragments) for _, fragments in quotes)
            score = (held, not text.is_header(span), len(words & text.words(span)))
            if best is None or score > best[0]:
                best = (score, text, span, around)
    if best is None:
        return texts[0].id, ""
    _, text, span, around = best
    return text.id, text.sentence(span, around=around)


def _conflict(claim: Claim, cited: list[_Cited]) -> _Conflict | None:
    """Two cited sources giving different values, in the same unit, near the same words, for one figure."""
    readable_all = [c for c in cited if c.read]
    if len({c.index for c in readable_all}) < 2:
        return None
    stated = {f.value for f in claim.figures}
    best: tuple[int, _Conflict] | None = None
    for claimed, cited_for in zip(claim.figures, claim.cited_for, strict=True):
        if claimed.kind in (DATE, IDENTIFIER, YEAR) or not (claimed.unit or claimed.noun):
            continue
        readable = [c for c in readable_all if c.index in cited_for]
        if len(readable) < 2:
            continue
        holders = [c for c in readable if any(t.holds(claimed) for t in c.read)]
        if not holders:
            continue
        around_claim, names = _context(claim.text, claimed.start, claimed.end)
        for other in readable:
            if other in holders:
                continue
            for text in other.read:
                for span in text.best_spans(around_claim, count=_CONFLICT_SENTENCES):
                    sentence = text.text[span[0] : span[1]]
                    for found in text.figures(span):
                        if found.value in stated or found.kind == YEAR or not same_measure(claimed, found):
                            continue
                        around_found, _ = _context(sentence, found.start - span[0], found.end - span[0])
                        shared = around_claim & around_found
                        if len(shared) >= 2 and shared - names and (best is None or len(shared) > best[0]):
                            best = (len(shared), _Conflict(claimed, holders[0], other, text, span, found))
    return best[1] if best else None


@dataclass(frozen=True)
class _Reversal:
    claimed: str  # the claim's words, with the figure they bind to
    says: str  # the source's words that reverse them
    source: _Cited
    text: EvidenceText
    span: Span
    around: int | None


def _reversal(claim: Claim, cited: list[_Cited], words: set[str], stated: list[Direction]) -> _Reversal | None:
    """A directional word of the claim that its source reverses: bound to a figure the source holds (or a
    number spelled out in both), or on its own in the sentence, against the source's sentence nearest to the
    claim (``direction.py``)."""
    readable = [c for c in cited if c.read]
    anchors: list[tuple[str, list[Direction], Callable[[EvidenceText], list[tuple[Span, int, int]]]]] = []
    for figure in claim.figures:
        directions = bound_directions(claim.text, figure.start, figure.end)
        if directions:
            negative = claim.text[figure.start - 1 : figure.start] in ("-", "−")
            anchors.append((figure.text, directions, partial(_figure_hits, figure, negative)))
    for word, start, end in spelled_numbers(claim.text):
        directions = bound_directions(claim.text, start, end)
        if directions:
            anchors.append((word, directions, partial(_word_hits, word)))
    for written, directions, hits_in in anchors:
        found: list[Direction] = []
        against: tuple[_Cited, EvidenceText, Span, int] | None = None
        for c in readable:
            for text in c.read:
                for span, start, end in hits_in(text):
                    around = bound_directions(text.text, start, end, source=True)
                    found.extend(around)
                    if against is None and around:
                        against = (c, text, span, start)
        reversed_ = disagreement(directions, found)
        if reversed_ is not None and against is not None:
            opposite = next(d for d in found if d.axis == reversed_.axis)
            c, text, span, at = against
            return _Reversal(f"{reversed_.words} {written}", f"{opposite.words} {written}", c, text, span, at)
    if not stated:
        return None
    topic = words - {w for d in stated for w in content_words(d.words)}
    for c in readable:
        for text in c.read:
            for span in text.best_spans(topic, count=2):
                if len(topic & text.words(span)) < min(2, len(topic)):
                    continue
                sentence = text.text[span[0] : span[1]]
                said = sentence_directions(sentence, free_only=False)
                reversed_ = disagreement(stated, said)
                if reversed_ is not None:
                    opposite = next(d for d in said if d.axis == reversed_.axis)
                    return _Reversal(reversed_.words, opposite.words, c, text, span, None)
    return None


def _figure_hits(figure: Figure, negative: bool, text: EvidenceText) -> list[tuple[Span, int, int]]:
    # A figure's sign is no part of its value ("fell 5%" is "-5%"), but "-1000" bounds a range from below.
    return [
        (span, hit.start, hit.end)
        for span, hit in text.find(figure, limit=_NEAREST_HITS)
        if (text.text[hit.start - 1 : hit.start] in ("-", "−")) == negative or not hit.start
    ]


def _word_hits(word: str, text: EvidenceText) -> list[tuple[Span, int, int]]:
    found: list[tuple[Span, int, int]] = []
    for match in re.finditer(rf"\b{re.escape(word)}\b", text.text, re.IGNORECASE):
        found.append((text.sentence_span(match.start()), match.start(), match.end()))
        if len(found) == _NEAREST_HITS:
            break
    return found


_TOKEN_RE = re.compile(r"[^\W\d_]+")


def _context(text: str, start: int, end: int) -> tuple[set[str], set[str]]:
    """Content words within a few words either side of a figure, and which of them are names (capitalised
    inside the sentence), which alone never make two figures the same figure."""
    before = list(_TOKEN_RE.finditer(text, 0, start))
    after = list(_TOKEN_RE.finditer(text, end))
    first = next(_TOKEN_RE.finditer(text), None)
    words: set[str] = set()
    names: set[str] = set()
    for match in before[-_CONTEXT_WORDS:] + after[:_CONTEXT_WORDS]:
        word = match.group()
        folded = content_words(word)
        if not folded:
            continue
        words |= folded
        if word[0].isupper() and (first is None or match.start() != first.start()):
            names |= folded
    return words, names


def _not_read(cited: list[_Cited]) -> str:
    parts = []
    for c in cited:
        if c.snippets:
            parts.append(f"[{c.index}] was only seen as a search-result snippet; its page was never read")
        elif c.citation is None:
            parts.append(f"[{c.index}] has no Sources entry")
        else:
            parts.append(f"[{c.index}] was never retrieved by this run")
    return "; ".join(parts)


def _where(cited: list[_Cited]) -> str:
    return ", ".join(f"[{c.index}]" for c in cited if c.read)


def _listed(tokens: Sequence[str]) -> str:
    return ", ".join(tokens)


def _hints(record: ClaimRecord) -> tuple[str, ...]:
    return tuple(f"[{s.index}] says: “{s.sentence}”" for s in record.sources if s.sentence)


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 1].rstrip() + "…"


def _problem(checked: CheckedClaim) -> str | None:
    record = checked.record
    claim = f"“{_excerpt(record.claim)}”"
    hints = (" " + " ".join(checked.hints)) if checked.hints else ""
    if record.verdict == ClaimVerdict.UNCITED_NUMBER:
        return f"{claim} states {record.detail}: cite the source whose text gives it, or drop the figure."
    if record.verdict == ClaimVerdict.UNSUPPORTED_NUMBER:
        return f"{claim}: {record.detail}.{hints} State the figures the source gives, or drop them."
    if record.verdict == ClaimVerdict.UNSUPPORTED_QUOTE:
        return (
            f"{claim}: the quoted {record.detail}.{hints} Quote the source word for word, or drop the quotation marks."
        )
    if record.verdict == ClaimVerdict.CONFLICTING:
        return f"{claim}: its sources disagree: {record.detail}.{hints} State the range, or both values, each with its source."
    if record.verdict == ClaimVerdict.UNSUPPORTED_NAME:
        return (
            f"{claim}: the name {record.detail}.{hints} Name only who and what the source names, or cite the "
            "source that names them."
        )
    if record.verdict == ClaimVerdict.CONTRADICTED and record.decided_by != ClaimMethod.JUDGED:
        return (
            f"{claim}: it says “{_listed(record.tokens)}” where {record.detail}: the source says the opposite.{hints} "
            "State what the source says, or drop the claim."
        )
    if record.verdict in (ClaimVerdict.CONTRADICTED, ClaimVerdict.NOT_SUPPORTED):
        judged = "contradicts it" if record.verdict == ClaimVerdict.CONTRADICTED else "does not state it"
        why = f" ({record.detail})" if record.detail else ""
        return (
            f"{claim}: judged against its cited text, which {judged}{why}.{hints} State only what the source says, "
            "or drop the claim."
        )
    return None


# --- marking ---------------------------------------------------------------------------------------


def mark_unverified(markdown: str, check: ClaimCheck) -> tuple[str, list[ClaimRecord]]:
    """``markdown`` with `` [unverified]`` on every claim a check flags (a claim whose cited sources disagree
    also gets both values with their sources: `` (the cited sources disagree: [2] gives 137 metres, [1] gives
    100 metres)``), and the records with the claims as delivered. ``check`` must come from ``check_claims`` on
    this same ``markdown``."""
    marks = sorted(
        (c for c in check.checked if c.record.verdict.flags and not _marked(markdown, c.claim)),
        key=lambda c: c.claim.mark_at,
    )
    if not marks:
        return markdown, check.records
    marked_at = {id(c) for c in marks}
    pieces: list[str] = []
    position = 0
    for checked in marks:
        pieces.append(markdown[position : checked.claim.mark_at] + _mark(checked.record))
        position = checked.claim.mark_at
    pieces.append(markdown[position:])
    records = []
    for checked in check.checked:
        record = checked.record
        if id(checked) in marked_at:
            claim = checked.claim
            offset = claim.mark_at - claim.start
            delivered = claim.text[:offset] + _mark(record) + claim.text[offset:]
            record = record.model_copy(update={"claim": " ".join(delivered.split())})
        records.append(record)
    return "".join(pieces), records


def _mark(record: ClaimRecord) -> str:
    """The mark a flagged claim is delivered with: sources that disagree keep both values, each with its source."""
    if record.verdict == ClaimVerdict.CONFLICTING and record.detail:
        return f" {UNVERIFIED_MARK} (the cited sources disagree: {record.detail})"
    return f" {UNVERIFIED_MARK}"


def _marked(markdown: str, claim: Claim) -> bool:
    return UNVERIFIED_MARK in markdown[claim.start : max(claim.end, claim.mark_at + len(UNVERIFIED_MARK) + 2)]
