"""Direction: a claim's comparative and directional words must agree with its source's around the same figure.

Contract:
- ``bound_directions(text, start, end)`` returns the directional words bound to the figure at
  ``text[start:end]``: within a few words before it ("over 100 metres", "rose by 5 %", "before 280 BC") or
  right after it ("100 metres or more", "a 5 % rise"), never across a clause mark or another number. Each is
  a ``Direction`` on an ``axis`` with a ``sign``: ``bound`` (over, more than, at least, above vs under, less
  than, at most, fewer than, up to, nearly), ``time`` (after, since, later than vs before, prior to, until),
  ``change`` (rose, increased, grew, up vs fell, decreased, declined, down) and ``extent`` (largest,
  highest, most vs smallest, lowest, least). A negation just before a word ("not more than") flips it.
- ``sentence_directions(text)`` returns the directional words of a sentence that are bound to no figure,
  on the ``change`` and ``extent`` axes and the comparatives (taller, larger, higher... vs shorter,
  smaller, lower...): what a sentence says without a number ("the tallest", "exports fell").
- ``disagreement(claimed, found)``: the claim's direction that the source reverses: the source has a word
  of the opposite sign on the same axis around the same figure (or in its nearest sentence) and none of the
  claim's sign. A source silent on the direction never disagrees: "100 metres" neither confirms nor
  contradicts "over 100 metres".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ..evidence.figures import figures_in

BOUND, TIME, CHANGE, EXTENT = "bound", "time", "change", "extent"


class Direction(NamedTuple):
    axis: str
    sign: int  # +1 greater, later, up, most; -1 the opposite
    words: str  # as written


def _forms(*groups: tuple[str, int, str]) -> dict[tuple[str, ...], tuple[str, int]]:
    table: dict[tuple[str, ...], tuple[str, int]] = {}
    for axis, sign, words in groups:
        for phrase in words.split(","):
            table[tuple(phrase.split())] = (axis, sign)
    return table


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
    (CHANGE, 1, "rose,risen,rises,rise,rising,increased,increase,increases,increasing,grew,grown,grows,"
     "growing,climbed,climbs,gained,gains,jumped,jumps,soared,soars,surged,surges,up,expanded,expands,"
     "doubled,tripled,higher by,raised,boosted"),
    (CHANGE, -1, "fell,fallen,falls,fall,falling,decreased,decrease,decreases,decreasing,declined,decline,"
     "declines,declining,dropped,drop,drops,shrank,shrunk,shrinks,lost,loses,down,plunged,plunges,slumped,"
     "slumps,cut,cuts,reduced,reduces,contracted,contracts,halved,lower by,tumbled,sank"),
    (EXTENT, 1, "largest,biggest,greatest,highest,tallest,longest,widest,heaviest,most,maximum,fastest,"
     "deepest,oldest,earliest"),
    (EXTENT, -1, "smallest,least,lowest,shortest,narrowest,lightest,fewest,minimum,slowest,shallowest,"
     "youngest,newest,latest"),
)  # fmt: skip
# Right after a figure: "100 metres or more", "a 5 % rise", "5 % lower".
_AFTER = _forms(
    (BOUND, 1, "or more,or above,or higher,or greater,or over,and above,and up,plus,or longer,or taller"),
    (BOUND, -1, "or less,or fewer,or below,or under,or lower,or shorter,and below,and under"),
    (CHANGE, 1, "rise,increase,gain,growth,jump,higher,more,up"),
    (CHANGE, -1, "fall,drop,decrease,decline,loss,cut,lower,less,down,reduction"),
)  # fmt: skip
# Without a figure: what a sentence says on the change and extent axes, and its comparatives.
_SENTENCE = _forms(
    *(
        (axis, sign, ",".join(" ".join(k) for k, v in _BEFORE.items() if v == (axis, sign)))
        for axis, sign in ((CHANGE, 1), (CHANGE, -1), (EXTENT, 1), (EXTENT, -1))
    ),
    ("comparative", 1, "taller,larger,bigger,higher,longer,greater,heavier,wider,faster,deeper,older"),
    ("comparative", -1, "shorter,smaller,lower,lesser,lighter,narrower,slower,shallower,younger"),
)
# Words of the change and extent axes too common to count on their own in a sentence with no figure.
_WEAK = frozenset({("up",), ("down",), ("cut",), ("cuts",), ("most",), ("least",), ("rise",), ("fall",), ("drop",),
                   ("decline",), ("increase",), ("decrease",), ("lost",), ("earliest",), ("latest",), ("oldest",),
                   ("newest",), ("minimum",), ("maximum",), ("lower",), ("higher",), ("greater",), ("older",),
                   ("younger",), ("lesser",)})  # fmt: skip
_NEGATIONS = frozenset({"not", "never", "no", "nor"})
_LONGEST = max(len(k) for k in (*_BEFORE, *_AFTER, *_SENTENCE))
_TOKEN_RE = re.compile(r"[^\W\d_]+|\d[\d,.]*|[.;:!?()\[\]—–]")
_CLAUSE = frozenset(".;:!?()[]—–")
_BEFORE_WORDS = 4
_AFTER_WORDS = 3


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group().casefold(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _match(words: Sequence[str], table: dict[tuple[str, ...], tuple[str, int]]) -> list[tuple[int, int, str, int]]:
    """Every phrase of ``table`` in ``words``, longest first and not overlapping: (first, length, axis, sign)."""
    found: list[tuple[int, int, str, int]] = []
    used: set[int] = set()
    for length in range(min(_LONGEST, len(words)), 0, -1):
        for i in range(len(words) - length + 1):
            if any(j in used for j in range(i, i + length)):
                continue
            hit = table.get(tuple(words[i : i + length]))
            if hit is not None:
                found.append((i, length, *hit))
                used.update(range(i, i + length))
    return sorted(found)


def _signed(words: Sequence[str], first: int, sign: int) -> int:
    negated = any(w in _NEGATIONS for w in words[max(0, first - 2) : first])
    return -sign if negated else sign


def bound_directions(text: str, start: int, end: int) -> list[Direction]:
    """The directional words bound to the figure at ``text[start:end]`` (see the module's contract)."""
    before: list[tuple[str, int, int]] = []
    for token in reversed(_tokens(text[max(0, start - 80) : start])):
        if token[0] in _CLAUSE or token[0][0].isdigit() or len(before) == _BEFORE_WORDS:
            break
        before.insert(0, token)
    after: list[tuple[str, int, int]] = []
    tail = text[end : end + 60]
    for token in _tokens(tail):
        if token[0] in _CLAUSE or token[0][0].isdigit() or len(after) == _AFTER_WORDS:
            break
        after.append(token)
    found: list[Direction] = []
    words = [w for w, _, _ in before]
    for first, length, axis, sign in _match(words, _BEFORE):
        found.append(Direction(axis, _signed(words, first, sign), " ".join(words[first : first + length])))
    following = [w for w, _, _ in after]
    # The figure's own unit words come first ("100 metres or more"): skip up to two of them.
    for first, length, axis, sign in _match(following, _AFTER):
        if first <= 2:
            found.append(Direction(axis, sign, " ".join(following[first : first + length])))
    return found


def sentence_directions(text: str) -> list[Direction]:
    """The change, extent and comparative words of ``text`` bound to none of its figures."""
    bound: set[int] = set()
    for figure in figures_in(text):
        # Blank the figure's own window: those words belong to it.
        window_start = max(0, figure.start - 40)
        bound.update(range(window_start, min(len(text), figure.end + 30)))
    tokens = [t for t in _tokens(text) if t[1] not in bound]
    words = [w for w, _, _ in tokens]
    found: list[Direction] = []
    for first, length, axis, sign in _match(words, _SENTENCE):
        phrase = tuple(words[first : first + length])
        if phrase in _WEAK:
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
