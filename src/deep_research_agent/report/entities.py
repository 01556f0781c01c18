"""Names in a claim (people, places, organisations, works, titles), and whether a cited text holds them.

Contract:
- ``names_in(text, known=...)`` returns the named entities of one claim, in order, as ``Name`` spans: runs
  of capitalised words (``Sostratus of Cnidus``, ``Lighthouse of Alexandria``, ``Ptolemy II``), acronyms
  (``NASA``) and inner-capital words (``iPhone``), joined by the lower-case connectors a name carries
  (``of``, ``the``, ``de``, ``von``...; never ``and`` or ``for``, which join two names). Not names: the grammatical capital of a sentence's first word (and
  of a word after a colon, an opening quote or bracket), unless that word is a name the report capitalises
  mid-sentence elsewhere (``known``), an acronym, or shaped like no common word (see ``_sentence_start_name``);
  months and weekdays, eras and units (``BC``, ``GWh``), ``I``, a label word and its number (``Finding 1``,
  ``Phase II``), a lone Roman numeral, and anything inside quotation marks (the quote check reads those),
  code, a citation marker or a URL.
- ``known_names(texts)``: the words a report capitalises mid-sentence, which make the same word a name at a
  sentence's start ("Sostratus designed it" after "... built by Sostratus").
- ``NameIndex(text)`` folds a cited text once (case, diacritics, curly apostrophes); ``holds(word)`` finds a
  word of a name in it, tolerating case, diacritics, a possessive (``Ptolemy's``), a plural (``Ptolemies``),
  a short ending either side (``Egypt``/``Egyptian``, ``German``/``Germany``) and a few aliases
  (``US``/``United States``). A name is held when each of its words is (``missing_names``).

Why no library: the named-entity recognisers on the package index (spaCy, Stanza, Flair, GLiNER, NLTK's
chunker, TextBlob) each need a model or corpus downloaded from a hub at run time (spaCy's English models
are not on PyPI; the PyPI uploads of them are unofficial mirrors), which this product's deployments cannot
assume and its CI cannot fetch; ``nameparser`` splits a human name it is given but finds none in text. A
claim check needs only "which capitalised words must the source contain", deterministic and fast, and a
statistical tagger would also miss the made-up or misspelt names this check exists to catch.
"""

from __future__ import annotations

import re
import unicodedata
import weakref
from collections.abc import Iterable
from typing import NamedTuple

from ..evidence.figures import LABEL_WORDS, UNITS, masked_for_figures
from ..evidence.text import STOPWORDS, EvidenceText

_WORD_RE = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*")
_QUOTED_RE = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»")
_CODE_RE = re.compile(r"`[^`\n]*`")
_EMPHASIS_RE = re.compile(r"[*_~]+")
_UNVERIFIED_RE = re.compile(r"\[unverified\]")
# What makes the next word a sentence's first: the start, an end of sentence, a colon, an opening mark.
_STARTS_AFTER = re.compile(r"(?:^|[.!?:;]\s+|[(\[“\"'‘«—–]\s*|\s[-–—]\s+)$")
_ROMAN_RE = re.compile(r"[IVXLCDM]+")
CONNECTORS = frozenset("of the de da del della di du la le les von van der den ter y al el bin ibn &".split())
_NOT_NAMES = frozenset(
    """i a january february march april may june july august september october november december jan feb mar
    apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday bc bce ad ce
    ok""".split()
)  # fmt: skip
# Words that begin sentences: a capital on one of these is grammar, not a name.
COMMON_STARTS = (
    frozenset(
        """a an the this that these those it its it's they their them there here he she his her we our you your
    i my in on at by for from with without within into onto of to as and or but nor so yet if when while
    where whereas whether because since although though after before during until unless once than then
    thus hence however moreover furthermore meanwhile also still even only just both each every either
    neither all any some many most much more few fewer several such other another no not none one two three
    four five six seven eight nine ten first second third last next new old early earlier late later
    latest recent recently today now currently formerly originally initially eventually finally overall
    ancient modern medieval classical contemporary historical historically traditionally typically usually
    generally often sometimes always never rarely about around approximately roughly nearly almost over
    under above below between among across along through throughout against toward towards beyond despite
    instead rather according based given following including unlike like per via what which who whom whose
    why how yes indeed perhaps probably possibly certainly clearly notably importantly similarly likewise
    accordingly consequently therefore instead elsewhere together alone large small big great high low long
    short tall wide full main major minor key total overall average public private local national global
    international official early mid its use using used see note table figure source sources report study
    research data evidence results result analysis summary conclusion background method methods finding
    findings answer question built made known seen given taken found held set thought brought sold paid led
    won lost begun grown shown drawn written kept left put run cut spent sent told become became began
    stood stands stand remains remained lies lay today's yesterday tomorrow together further little less
    least best better worse worst good bad true false real whole half part parts most work construction
    development support security fixes fix design production installation maintenance testing release
    releases version versions users people packages package software system systems code project projects
    work's each""".split()
    )
    | STOPWORDS
)
# A sentence's first word shaped like a common word (an adverb, a participle, a plural noun) is not a name.
_COMMON_ENDINGS = (
    "ly", "ing", "ed", "ness", "ment", "ments", "tion", "tions", "sion", "sions", "ity", "ities", "ance",
    "ence", "ism", "isms", "ists", "ful", "less", "able", "ible", "ive", "ous", "ers", "ors", "ians", "ants",
    "ents", "ies", "ings",
)  # fmt: skip
_ALIASES: dict[str, tuple[str, ...]] = {
    "us": ("united states", "america", "u.s"),
    "usa": ("united states", "america", "u.s"),
    "america": ("united states", "u.s"),
    "american": ("united states", "u.s", "america"),
    "americans": ("united states", "u.s", "america"),
    "uk": ("united kingdom", "britain", "u.k"),
    "britain": ("united kingdom", "uk", "u.k"),
    "british": ("united kingdom", "uk", "britain"),
    "eu": ("european union",),
    "un": ("united nations",),
    "greek": ("greece",),
    "greeks": ("greece",),
    "french": ("france",),
    "dutch": ("netherlands", "holland"),
    "spanish": ("spain",),
    "english": ("england",),
    "swiss": ("switzerland",),
    "roman": ("rome",),
    "romans": ("rome",),
}
_NAME_ENDINGS = ("ians", "ian", "eans", "ean", "ans", "an", "ese", "ish", "i", "n", "s", "es")
_COMBINING_RE = re.compile(r"[\u0300-\u036f]")
_FOLD = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})


class Name(NamedTuple):
    """A named entity of a claim: its words as written and where it is in the claim."""

    text: str
    words: tuple[str, ...]
    start: int
    end: int


def fold(text: str) -> str:
    """Text without case, diacritics or curly apostrophes, same script: "Köln’s" is "koln's"."""
    text = text.translate(_FOLD)
    if not text.isascii():
        text = _COMBINING_RE.sub("", unicodedata.normalize("NFKD", text))
    return text.casefold()


def _masked(text: str) -> str:
    """``text`` with quotes, code, citations, URLs, emphasis marks and the unverified mark blanked (same length)."""
    blank = lambda m: " " * (m.end() - m.start())  # noqa: E731
    text = masked_for_figures(text)
    text = _CODE_RE.sub(blank, text)
    text = _QUOTED_RE.sub(blank, text)
    text = _UNVERIFIED_RE.sub(blank, text)
    return _EMPHASIS_RE.sub(blank, text)


def prose_of(text: str) -> str:
    """``text`` in its writer's own words: quotations (in their source's language), code, citations, URLs and
    figures blanked, for telling the language it is written in."""
    return _masked(text)


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper() or (word[:1].islower() and any(ch.isupper() for ch in word[1:]))


def _is_acronym(word: str) -> bool:
    letters = [ch for ch in word if ch.isalpha()]
    return len(letters) >= 2 and all(ch.isupper() for ch in letters) and not _ROMAN_RE.fullmatch(word)


def _at_sentence_start(text: str, start: int) -> bool:
    return _STARTS_AFTER.search(text, max(0, start - 4), start) is not None or not text[:start].strip()


def _sentence_start_name(word: str, known: frozenset[str]) -> bool:
    """Whether a sentence's first word is a name all the same."""
    folded = fold(word)
    if folded in known or _is_acronym(word):
        return True
    if folded in COMMON_STARTS or folded in _NOT_NAMES:
        return False
    if folded.endswith("s") and not folded.endswith(("us", "os", "is", "as", "ss")):
        return False  # "Earthquakes damaged it": a plural noun
    return not folded.endswith(_COMMON_ENDINGS)


def _excluded(word: str, following: str) -> bool:
    """Capitalised words that are no name: months, eras, units, ``I``, label words before their number."""
    folded = fold(word)
    if folded in _NOT_NAMES or folded in UNITS:
        return True
    if folded in LABEL_WORDS and re.match(r"\s*(?:\d|[IVXLC]+\b|No\b)", following):
        return True
    return False


def known_names(texts: Iterable[str]) -> frozenset[str]:
    """The folded words the texts capitalise somewhere other than a sentence's start."""
    found: set[str] = set()
    for text in texts:
        masked = _masked(text)
        for match in _WORD_RE.finditer(masked):
            word = match.group()
            if _is_capitalised(word) and not _at_sentence_start(masked, match.start()):
                folded = fold(word)
                if folded not in COMMON_STARTS and folded not in _NOT_NAMES:
                    found.add(_strip_possessive(folded))
    return frozenset(found)


def names_in(text: str, *, known: frozenset[str] = frozenset(), english: bool = True) -> list[Name]:
    """The named entities of ``text`` (see the module's contract). Not ``english``, a sentence's first word is
    a name only when it is ``known`` or an acronym: the common-word shapes that tell grammar from a name are
    English ones ("Selon la source" would name "Selon")."""
    masked = _masked(text)
    names: list[Name] = []
    current: list[tuple[str, int, int]] = []  # the words of the name being read
    pending: list[tuple[str, int, int]] = []  # connectors after it, kept if another capitalised word follows
    last_end = -1

    def close() -> None:
        words = [w for w in current if w[0].casefold() not in CONNECTORS]
        significant = [w for w in words if not _ROMAN_RE.fullmatch(w[0]) or len(words) > 1]
        if significant and not all(_ROMAN_RE.fullmatch(w[0]) for w in significant):
            start, end = current[0][1], current[-1][2]
            names.append(Name(text[start:end], tuple(w[0] for w in significant), start, end))
        current.clear()
        pending.clear()

    for match in _WORD_RE.finditer(masked):
        word, start, end = match.group(), match.start(), match.end()
        gap = masked[last_end:start] if last_end >= 0 else ""
        adjacent = last_end >= 0 and gap in (" ", "\u00a0", "-")
        last_end = end
        if _is_capitalised(word) and not _excluded(word, masked[end : end + 6]):
            starts = _at_sentence_start(masked, start)
            is_name = _sentence_start_name(word, known) if english else fold(word) in known or _is_acronym(word)
            if starts and not (current and adjacent) and not is_name:
                close()
                continue
            if current and adjacent:
                current.extend(pending)
                pending.clear()
            elif current:
                close()
            current.append((word, start, end))
            continue
        if current and adjacent and word.casefold() in CONNECTORS and len(pending) < 2:
            pending.append((word, start, end))
            continue
        if current:
            close()
    if current:
        close()
    return names


# --- matching --------------------------------------------------------------------------------------


def _strip_possessive(word: str) -> str:
    for ending in ("'s", "s'", "'"):
        if word.endswith(ending) and len(word) > len(ending) + 1:
            return word[: -len(ending)] if ending != "s'" else word[:-1]
    return word


def _variants(word: str) -> list[tuple[str, int]]:
    """Forms to look for, each with how many letters may follow it in the text."""
    base = _strip_possessive(fold(word))
    forms: list[tuple[str, int]] = [(base, 3 if len(base) >= 4 else 1)]
    if base.endswith("ies") and len(base) > 4:
        forms.append((base[:-3] + "y", 0))
    for ending in _NAME_ENDINGS:
        stem = base[: -len(ending)]
        if base.endswith(ending) and len(stem) >= 4:
            forms.append((stem, 3))
    return forms


class NameIndex:
    """A cited text folded once, for finding the words of names in it."""

    def __init__(self, text: str) -> None:
        self.folded = fold(text)
        self._found: dict[str, bool] = {}

    def holds(self, word: str) -> bool:
        key = fold(word)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._search(word)
        return found

    def _search(self, word: str) -> bool:
        folded = self.folded
        for form, extra in _variants(word):
            if re.search(rf"(?<![^\W\d_]){re.escape(form)}[^\W\d_]{{0,{extra}}}(?![^\W\d_])", folded):
                return True
        for alias in _ALIASES.get(_strip_possessive(fold(word)), ()):
            if re.search(rf"(?<![^\W\d_]){re.escape(alias)}(?![^\W\d_])", folded):
                return True
        return False


_INDEXES: weakref.WeakKeyDictionary[EvidenceText, NameIndex] = weakref.WeakKeyDictionary()


def name_index(text: EvidenceText) -> NameIndex:
    """The folded form of a retrieved text, made once per prepared text (the run keeps those)."""
    index = _INDEXES.get(text)
    if index is None:
        index = _INDEXES[text] = NameIndex(f"{text.title}\n{text.url}\n{text.text}")
    return index


def missing_names(names: Iterable[Name], indexes: Iterable[NameIndex]) -> list[Name]:
    """The names of which some word is in none of the texts."""
    held = list(indexes)
    return [name for name in names if not all(any(index.holds(w) for index in held) for w in name.words)]
