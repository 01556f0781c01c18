"""Direction: a claim's comparative and directional words must agree with its source's around the same figure.

Contract:
- ``bound_directions(text, start, end)`` returns the directional words bound to the figure at
  ``text[start:end]``: within a few words before it ("over 100 metres", "rose by 5 %", "before 280 BC") or
  right after it ("100 metres or more", "a 5 % rise", "26 metres above sea level", "25 % smaller"), never
  across a clause mark or another number. Each is a ``Direction`` on an ``axis`` with a ``sign``:
  ``bound`` (over, more than, at least vs under, less than, at most, fewer than, up to, nearly), ``time``
  (after, since, later than vs before, prior to, until), ``change`` (rose, increased, grew, raised, up,
  larger vs fell, decreased, declined, lowered, down, smaller), ``level`` (above vs below) and ``extent``
  (largest, highest, most vs smallest, lowest, least). A negation just before a word ("not more than")
  flips it. With ``source=True`` (the cited text's side) a figure also takes the direction its sentence
  implies: the upper end of a range is a most ("8 to 10 hours": at most 10), the lower end a least, and a
  "maximum" or "minimum" earlier in its clause bounds it ("The maximum precision ... is 1000").
- Numbers spelled out ("fewer than ten deaths") are bound the same way: ``spelled_numbers``.
- ``sentence_directions(text)`` returns a claim's directional words bound to no figure: the ``change``
  words and, per dimension (``size``, ``height``, ``length``, ``speed``, ``age``, ``weight``, ``depth``,
  ``width``, ``amount``), its superlatives and comparatives ("the tallest", "exports fell", "much faster");
  words too common to count alone ("most", "up", "higher") are left out. With ``free_only=False`` (a
  source sentence) every such word counts, bound or not, and so do plain adjectives ("very slow").
- ``disagreement(claimed, found)``: the claim's direction that the source reverses: the source has a word
  of the opposite sign on the same axis and none of the claim's sign. A source silent on the direction
  never disagrees: "100 metres" neither confirms nor contradicts "over 100 metres".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ..evidence.figures import figures_in

BOUND, TIME, CHANGE, EXTENT, LEVEL = "bound", "time", "change", "extent", "level"


class Direction(NamedTuple):
    axis: str
    sign: int  # +1 greater, later, up, most; -1 the opposite
    words: str  # as written


Table = dict[tuple[str, ...], tuple[tuple[str, int], ...]]


def _forms(*groups: tuple[str, int, str]) -> Table:
    table: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    for axis, sign, words in groups:
        for phrase in words.split(","):
            table.setdefault(tuple(phrase.split()), []).append((axis, sign))
    return {phrase: tuple(meanings) for phrase, meanings in table.items()}


_CHANGE_UP = (
    "rose,risen,rises,rise,rising,increased,increase,increases,increasing,grew,grown,grows,growing,climbed,"
    "climbs,gained,gains,jumped,jumps,soared,soars,surged,surges,up,expanded,expands,doubled,tripled,higher by,"
    "raised,raise,raises,boosted,lengthened,widened"
)
_CHANGE_DOWN = (
    "fell,fallen,falls,fall,falling,decreased,decrease,decreases,decreasing,declined,decline,declines,declining,"
    "dropped,drop,drops,shrank,shrunk,shrinks,lost,loses,down,plunged,plunges,slumped,slumps,cut,cuts,reduced,"
    "reduces,contracted,contracts,halved,lower by,tumbled,sank,lowered,lower,lowers,trimmed,shortened,lessened"
)
# Superlatives, comparatives and (source side only) plain adjectives, per dimension.
_DIMENSIONS: dict[str, tuple[tuple[str, str, str], tuple[str, str, str]]] = {
    "size": (("largest,biggest,greatest", "larger,bigger,greater", "large,big,huge"),
             ("smallest", "smaller,lesser", "small,little,tiny")),
    "height": (("tallest,highest", "taller,higher", "tall,high"), ("shortest,lowest", "shorter,lower", "short,low")),
    "length": (("longest", "longer", "long"), ("shortest", "shorter", "short")),
    "speed": (("fastest,quickest", "faster,quicker", "fast,quick,rapid"), ("slowest", "slower", "slow")),
    "age": (("oldest,earliest", "older,earlier", "old,ancient"), ("newest,youngest,latest", "newer,younger", "new,young,recent")),
    "weight": (("heaviest", "heavier", "heavy"), ("lightest", "lighter", "light")),
    "depth": (("deepest", "deeper", "deep"), ("shallowest", "shallower", "shallow")),
    "width": (("widest", "wider", "wide"), ("narrowest", "narrower", "narrow")),
    "amount": (("most,maximum", "more", "many,much"), ("least,fewest,minimum", "fewer,less", "few")),
}  # fmt: skip
_SUPERLATIVES = [
    (dim, sign, forms[0]) for dim, sides in _DIMENSIONS.items() for sign, forms in zip((1, -1), sides, strict=True)
]
_COMPARATIVES = [
    (dim, sign, forms[1]) for dim, sides in _DIMENSIONS.items() for sign, forms in zip((1, -1), sides, strict=True)
]
_ADJECTIVES = [
    (dim, sign, forms[2]) for dim, sides in _DIMENSIONS.items() for sign, forms in zip((1, -1), sides, strict=True)
]

# Before a figure: "over 100", "rose by 5 %", "before 280 BC". Multi-word phrases win over their parts.
_BEFORE = _forms(
    (BOUND, 1, "over,more than,above,at least,exceeding,exceeded,exceeds,in excess of,upwards of,greater than,"
     "higher than,larger than,longer than,taller than,no fewer than,no less than,not less than,beyond,well over,"
     "just over,surpassing,topping,min,minimum of,a minimum of"),
    (BOUND, -1, "under,less than,fewer than,below,at most,up to,no more than,not more than,lower than,"
     "smaller than,shorter than,nearly,almost,just under,barely,short of,well under,maximum of,a maximum of,"
     "max,not quite"),
    (TIME, 1, "after,since,later than,following,post"),
    (TIME, -1, "before,prior to,earlier than,until,till,pre"),
    (CHANGE, 1, _CHANGE_UP),
    (CHANGE, -1, _CHANGE_DOWN),
    *((EXTENT, sign, forms) for _, sign, forms in _SUPERLATIVES),
)  # fmt: skip
# Right after a figure: "100 metres or more", "a 5 % rise", "25 % smaller", "26 metres above sea level".
_AFTER = _forms(
    (BOUND, 1, "or more,or above,or higher,or greater,or over,and above,and up,plus,or longer,or taller"),
    (BOUND, -1, "or less,or fewer,or below,or under,or lower,or shorter,and below,and under"),
    (CHANGE, 1, "rise,increase,gain,growth,jump,higher,more,up,larger,bigger,faster,longer,greater,taller"),
    (CHANGE, -1, "fall,drop,decrease,decline,loss,cut,lower,less,down,reduction,smaller,slower,shorter"),
    (LEVEL, 1, "above"),
    (LEVEL, -1, "below,beneath"),
)  # fmt: skip
# Without a figure: change words and, per dimension, superlatives and comparatives (adjectives: source only).
_CLAIM_WORDS = _forms(
    (CHANGE, 1, _CHANGE_UP),
    (CHANGE, -1, _CHANGE_DOWN),
    *((f"{dim}", sign, forms) for dim, sign, forms in _SUPERLATIVES + _COMPARATIVES),
)
_SOURCE_WORDS = _forms(
    (CHANGE, 1, _CHANGE_UP),
    (CHANGE, -1, _CHANGE_DOWN),
    *((f"{dim}", sign, forms) for dim, sign, forms in _SUPERLATIVES + _COMPARATIVES + _ADJECTIVES),
)
# Words too common to count on their own in a claim's sentence with no figure.
_WEAK = frozenset(
    {("up",), ("down",), ("cut",), ("cuts",), ("most",), ("least",), ("rise",), ("fall",), ("drop",), ("decline",),
     ("increase",), ("decrease",), ("lost",), ("earliest",), ("latest",), ("oldest",), ("newest",), ("minimum",),
     ("maximum",), ("lower",), ("higher",), ("greater",), ("older",), ("younger",), ("lesser",), ("earlier",),
     ("more",), ("less",), ("fewer",), ("raise",), ("lower",), ("lowers",), ("raises",)}
)  # fmt: skip
_NEGATIONS = frozenset({"not", "never", "no", "nor"})
_TOKEN_RE = re.compile(r"[^\W\d_]+|\d[\d,.]*|[.;:!?()\[\]—–-]")
_CLAUSE = frozenset(".;:!?()[]—–")
_RANGE_JOINERS = frozenset({"to", "–", "-", "—", "and", "through"})
_MAXIMUM_WORDS = frozenset({"maximum", "max", "limit"})
_MINIMUM_WORDS = frozenset({"minimum", "min"})
_BEFORE_WORDS = 4
_AFTER_WORDS = 3
SPELLED = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred dozen".split()
)
_SPELLED_RE = re.compile(r"\b(" + "|".join(sorted(SPELLED, key=len, reverse=True)) + r")\b", re.IGNORECASE)

Token = tuple[str, int, int]


def _tokens(text: str) -> list[Token]:
    return [(m.group().casefold(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _is_number(word: str) -> bool:
    return word[0].isdigit() or word in SPELLED


_FIRSTS: dict[int, dict[str, list[int]]] = {}


def _lengths(table: Table) -> dict[str, list[int]]:
    """A table's phrase lengths by first word, longest first (built once per table)."""
    firsts = _FIRSTS.get(id(table))
    if firsts is None:
        found: dict[str, set[int]] = {}
        for phrase in table:
            found.setdefault(phrase[0], set()).add(len(phrase))
        firsts = _FIRSTS[id(table)] = {word: sorted(lengths, reverse=True) for word, lengths in found.items()}
    return firsts


def _match(words: Sequence[str], table: Table) -> list[tuple[int, int, str, int]]:
    """The phrases of ``table`` in ``words``, the longest at each position, not overlapping:
    (first, length, axis, sign)."""
    firsts = _lengths(table)
    found: list[tuple[int, int, str, int]] = []
    i = 0
    while i < len(words):
        for length in firsts.get(words[i], ()):
            meanings = table.get(tuple(words[i : i + length])) if i + length <= len(words) else None
            if meanings:
                found += [(i, length, axis, sign) for axis, sign in meanings]
                i += length - 1
                break
        i += 1
    return found


def _signed(words: Sequence[str], first: int, sign: int) -> int:
    negated = any(w in _NEGATIONS for w in words[max(0, first - 2) : first])
    return -sign if negated else sign


def _window(tokens: Sequence[Token], start: int, end: int) -> tuple[list[int], list[int]]:
    """The indexes of the tokens that may bind to the figure at ``start:end``: a few before, a few after,
    never across a clause mark or another number."""
    before: list[int] = []
    after: list[int] = []
    for i in range(len(tokens) - 1, -1, -1):
        word, token_start, _ = tokens[i]
        if token_start >= start:
            continue
        if word in _CLAUSE or _is_number(word) or len(before) == _BEFORE_WORDS:
            break
        before.insert(0, i)
    for i, (word, token_start, _) in enumerate(tokens):
        if token_start < end:
            continue
        if word in _CLAUSE or _is_number(word) or len(after) == _AFTER_WORDS:
            break
        after.append(i)
    return before, after


def _bound(tokens: Sequence[Token], start: int, end: int, *, source: bool) -> tuple[list[Direction], set[int]]:
    before, after = _window(tokens, start, end)
    found: list[Direction] = []
    used: set[int] = set()
    words = [tokens[i][0] for i in before]
    for first, length, axis, sign in _match(words, _BEFORE):
        found.append(Direction(axis, _signed(words, first, sign), " ".join(words[first : first + length])))
        used.update(before[first : first + length])
    following = [tokens[i][0] for i in after]
    for first, length, axis, sign in _match(following, _AFTER):
        # The figure's own unit words come first ("500 employees or more"), and "... and more than 20":
        # the words before the next figure are that figure's.
        next_figures = following[first + length : first + length + 1] == ["than"] and first > 0
        if first <= 2 and not (next_figures and following[first - 1] in ("and", "or", "but", "while")):
            found.append(Direction(axis, sign, " ".join(following[first : first + length])))
            used.update(after[first : first + length])
    if source:
        found += _implied(tokens, start, end, before, after)
    return found, used


def _implied(tokens: Sequence[Token], start: int, end: int, before: list[int], after: list[int]) -> list[Direction]:
    """What a source's sentence says of a figure's bound without a bound word beside it."""
    found: list[Direction] = []
    first_before = before[0] if before else next((i for i, t in enumerate(tokens) if t[1] >= start), len(tokens))
    previous = first_before - 1
    if 0 <= previous and _is_number(tokens[previous][0]) and before and tokens[before[-1]][0] in _RANGE_JOINERS:
        found.append(Direction(BOUND, -1, f"{tokens[previous][0]} {tokens[before[-1]][0]}"))
    elif not before and previous >= 1 and tokens[previous][0] in _RANGE_JOINERS and _is_number(tokens[previous - 1][0]):
        found.append(Direction(BOUND, -1, f"{tokens[previous - 1][0]}{tokens[previous][0]}"))
    last_after = after[-1] if after else next((i - 1 for i, t in enumerate(tokens) if t[1] >= end), len(tokens) - 1)
    following = last_after + 1
    if (
        following < len(tokens)
        and _is_number(tokens[following][0])
        and after
        and tokens[after[-1]][0] in _RANGE_JOINERS
    ):
        found.append(Direction(BOUND, 1, f"{tokens[after[-1]][0]} {tokens[following][0]}"))
    elif not after and following + 1 < len(tokens) and tokens[following][0] in _RANGE_JOINERS:
        if _is_number(tokens[following + 1][0]):
            found.append(Direction(BOUND, 1, f"{tokens[following][0]}{tokens[following + 1][0]}"))
    if not any(d.axis == BOUND for d in found):
        for word, token_start, _ in reversed(tokens):
            if token_start >= start:
                continue
            if word in _CLAUSE:
                break
            if word in _MAXIMUM_WORDS or word in _MINIMUM_WORDS:
                found.append(Direction(BOUND, -1 if word in _MAXIMUM_WORDS else 1, word))
                break
    return found


def bound_directions(text: str, start: int, end: int, *, source: bool = False) -> list[Direction]:
    """The directional words bound to the figure at ``text[start:end]`` (see the module's contract)."""
    low, high = max(0, start - 200), min(len(text), end + 80)
    tokens = [(w, a + low, b + low) for w, a, b in _tokens(text[low:high])]
    return _bound(tokens, start, end, source=source)[0]


def spelled_numbers(text: str) -> list[tuple[str, int, int]]:
    """The numbers of ``text`` spelled out ("ten", "a dozen"), each with where it is."""
    return [(m.group().casefold(), m.start(), m.end()) for m in _SPELLED_RE.finditer(text)]


def sentence_directions(
    text: str, *, free_only: bool = True, figures: Sequence[tuple[int, int]] | None = None
) -> list[Direction]:
    """The change and per-dimension words of ``text`` (see the module's contract); ``figures`` are the
    spans of its figures when the caller has them."""
    tokens = _tokens(text)
    bound: set[int] = set()
    if free_only:
        spans = list(figures) if figures is not None else [(f.start, f.end) for f in figures_in(text)]
        spans += [(s, e) for _, s, e in spelled_numbers(text)]
        for start, end in spans:
            bound |= _bound(tokens, start, end, source=False)[1]
    kept = [token for i, token in enumerate(tokens) if i not in bound]
    words = [w for w, _, _ in kept]
    found: list[Direction] = []
    for first, length, axis, sign in _match(words, _CLAIM_WORDS if free_only else _SOURCE_WORDS):
        phrase = tuple(words[first : first + length])
        if free_only and phrase in _WEAK:
            continue
        found.append(Direction(axis, _signed(words, first, sign), " ".join(phrase)))
    return found


def disagreement(claimed: Iterable[Direction], found: Iterable[Direction]) -> Direction | None:
    """The first direction of the claim that the source reverses (see the module's contract)."""
    source = list(found)
    for direction in claimed:
        same_axis = [d for d in source if d.axis == direction.axis]
        if same_axis and not any(d.sign == direction.sign for d in same_axis):
            return direction
    return None
