"""Figures in text, normalised so a report's number can be found in the text it cites.

Contract: ``figures_in(text)`` returns every figure of ``text`` in order, each a ``Figure`` with a canonical
``value`` and ``unit``, a ``kind`` and the words around it; ``supports(claimed, found)`` says whether a
figure found in a source holds the one a claim states.

- Values: ``3,000``, ``3000`` and ``3 000`` are ``3000``; ``2.50`` is ``2.5``; scale words multiply
  (``1.2 billion`` and ``1,200 million`` are both ``1200000000``). A comma is a thousands separator, never
  a decimal point. Signs are dropped ("fell 5%" and "-5%" agree).
- Units: written forms map to one canonical unit (``100 m``, ``100 metres``, ``100-metre`` are
  ``100 m``; ``12 percent`` is ``12 %``; ``$61`` and ``61 dollars`` are ``61 usd``); an unknown word after
  a number is no unit, but it is kept as the figure's ``noun`` ("500 employees"), which the conflict check
  compares. Units are never converted: ``100 m`` does not support ``328 ft``.
- Ranges: ``280–247 BC``, ``between 280 and 247 BC`` and ``15 to 25 percent`` give two figures, the unit
  of the second applying to the first; ``2019–24`` is ``2019`` and ``2024``.
- Kinds: a year (``in 1999``, ``1990s``, ``247 BC``) never supports a count (``1,999 visitors``, ``1999
  metres``) or the reverse; a bare four-digit number with no cue is either. ISO and month-name dates
  (``2024-03-14``, ``14 March 2024``) are one ``date`` figure plus their year. Identifiers with digits
  (``NTB-7``, ``COVID-19``) are one ``identifier`` figure, found as written.
- Not figures: digits inside words (``H2O``, ``v2``, ``CO2``, ``Q1``), ordinals (``21st``), URLs and
  ``[n]`` citation markers. Numbers spelled out ("three") are not read either.
- Labels are not figures: a number that names rather than measures is skipped, in a report as in a source:
  after a label word (``Finding 1``, ``Step 2``, ``Table 3``, ``Figure 4``, ``Section 5``, ``No. 6``,
  ``#7``, ``Type 2``: ``LABEL_WORDS``) unless a unit or a scale word follows it ("Table 3" is a label,
  "level 3 metres" a length), and an inline list number (``(1) the base``, ``2) the tower``).
- Versions and standards are ``identifier`` figures, found as tokens, never as numbers (``Python 3.1`` is
  not held by "Python 3.10"): a dotted number after a capitalised name or a version word (``Python 3.12``,
  ``version 2.4``), any number with two dots or more (``3.12.1``), and a standard's number after its body
  (``ISO 8601``, ``RFC 9110``: ``STANDARD_BODIES``).

Why not a library: number parsers (``price-parser``, ``quantulum3``) parse one quantity per string or need
a model of units; this needs every figure of a page, in one pass, fast enough for thirty pages per report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

YEAR, COUNT, DATE, IDENTIFIER = "year", "count", "date", "identifier"


class Figure(NamedTuple):
    value: str
    unit: str
    kind: str  # YEAR, COUNT, DATE, IDENTIFIER, or "" when a bare number could be a year or a count
    noun: str  # the word after a number with no unit ("500 employees"), for the conflict check
    text: str  # as written, for messages: "300 metres", "$2.4 million"
    start: int
    end: int
    scale: int = 1


_UNIT_FORMS: dict[str, tuple[str, ...]] = {
    "%": ("%", "percent", "per cent", "pct"),
    "pp": ("percentage points", "percentage point", "pp"),
    "m": ("m", "metre", "metres", "meter", "meters"),
    "km": ("km", "kilometre", "kilometres", "kilometer", "kilometers"),
    "cm": ("cm", "centimetre", "centimetres", "centimeter", "centimeters"),
    "mm": ("mm", "millimetre", "millimetres", "millimeter", "millimeters"),
    "ft": ("ft", "foot", "feet"),
    "mi": ("mi", "mile", "miles"),
    "inch": ("inch", "inches"),
    "kg": ("kg", "kilogram", "kilograms", "kilogramme", "kilogrammes"),
    "g": ("g", "gram", "grams", "gramme", "grammes"),
    "t": ("tonne", "tonnes", "metric tons", "metric ton"),
    "ton": ("ton", "tons"),
    "lb": ("lb", "lbs"),
    "kb": ("kb", "kilobyte", "kilobytes"),
    "mb": ("mb", "megabyte", "megabytes"),
    "gb": ("gb", "gigabyte", "gigabytes"),
    "tb": ("tb", "terabyte", "terabytes"),
    "s": ("sec", "secs", "second", "seconds"),
    "ms": ("ms", "millisecond", "milliseconds"),
    "min": ("min", "mins", "minute", "minutes"),
    "h": ("h", "hr", "hrs", "hour", "hours"),
    "day": ("day", "days"),
    "week": ("week", "weeks", "wk", "wks"),
    "month": ("month", "months"),
    "year": ("year", "years", "yr", "yrs"),
    "decade": ("decade", "decades"),
    "century": ("century", "centuries"),
    "wh/kg": ("wh/kg",),
    "wh": ("wh", "watt-hour", "watt-hours", "watt hours"),
    "kwh": ("kwh", "kilowatt-hour", "kilowatt-hours", "kilowatt hours"),
    "mwh": ("mwh", "megawatt-hour", "megawatt-hours", "megawatt hours"),
    "gwh": ("gwh", "gigawatt-hour", "gigawatt-hours", "gigawatt hours"),
    "twh": ("twh", "terawatt-hour", "terawatt-hours", "terawatt hours"),
    "w": ("w", "watt", "watts"),
    "kw": ("kw", "kilowatt", "kilowatts"),
    "mw": ("mw", "megawatt", "megawatts"),
    "gw": ("gw", "gigawatt", "gigawatts"),
    "tw": ("tw", "terawatt", "terawatts"),
    "hz": ("hz", "hertz"),
    "khz": ("khz", "kilohertz"),
    "mhz": ("mhz", "megahertz"),
    "ghz": ("ghz", "gigahertz"),
    "v": ("v", "volt", "volts"),
    "kv": ("kv", "kilovolt", "kilovolts"),
    "ah": ("ah", "amp-hour", "amp-hours"),
    "mah": ("mah",),
    "ms/cm": ("ms/cm",),
    "°c": ("°c", "degrees celsius", "degree celsius", "celsius", "deg c"),
    "°f": ("°f", "degrees fahrenheit", "degree fahrenheit", "fahrenheit"),
    "°": ("°", "degrees", "degree"),
    "ha": ("ha", "hectare", "hectares"),
    "acre": ("acre", "acres"),
    "km2": ("km2", "km²", "square kilometres", "square kilometers"),
    "m2": ("m2", "m²", "square metres", "square meters"),
    "l": ("l", "litre", "litres", "liter", "liters"),
    "ml": ("ml", "millilitre", "millilitres", "milliliter", "milliliters"),
    "km/h": ("km/h", "kph", "kilometres per hour", "kilometers per hour"),
    "mph": ("mph", "miles per hour"),
    "m/s": ("m/s", "metres per second", "meters per second"),
    "x": ("x", "×", "times", "fold"),
    "usd": ("usd", "us dollars", "dollars", "dollar"),
    "eur": ("eur", "euros", "euro"),
    "gbp": ("gbp", "pounds sterling", "sterling"),
    "jpy": ("jpy", "yen"),
    "cny": ("cny", "yuan", "renminbi"),
    "bc": ("bc", "bce"),
    "ad": ("ad", "ce"),
}
UNITS: dict[str, str] = {form: unit for unit, forms in _UNIT_FORMS.items() for form in forms}
_ERAS = frozenset({"bc", "ad"})
_CURRENCY_SIGNS = {"$": "usd", "us$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
_SCALES: dict[str, int] = {
    "thousand": 10**3,
    "k": 10**3,
    "million": 10**6,
    "mn": 10**6,
    "mln": 10**6,
    "billion": 10**9,
    "bn": 10**9,
    "trillion": 10**12,
    "tn": 10**12,
}
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# Words before a bare four-digit number that make it a year (unless a noun follows: "in 1500 cases").
_YEAR_CUES = frozenset(
    {"in", "since", "by", "until", "till", "before", "after", "during", "circa", "c", "ca", "year", "early", "late",
     "mid", "pre", "post", "spring", "summer", "autumn", "fall", "winter", "fy", *_MONTHS}
)  # fmt: skip


def _alternation(forms: Iterable[str]) -> str:
    return "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))


_SPACES = " \u00a0\u202f\u2009"
_SPACE = r"[ \u00a0\u202f\u2009]"
# Every pattern starts at a digit (or a literal), so a 50 KB page is scanned in a few milliseconds; units,
# scales, dates and identifiers are recognised around each number, not by alternations tried everywhere.
_NUMBER_RE = re.compile(
    rf"(?<![\w.])(?P<int>\d{{1,3}}(?:,\d{{3}})+(?!\d)|\d{{1,3}}(?:{_SPACE}\d{{3}})+(?![\d,])|\d+)(?P<frac>\.\d+)?(?!\d)(?P<decade>s\b)?"
)
_WORD = r"[^\W\d_][\w/²°-]*"
_AFTER_RE = re.compile(
    rf"{_SPACE}?-?{_SPACE}?(?P<w1>%|°[cCfF]?(?![a-zA-Z])|{_WORD})(?:{_SPACE}(?P<w2>{_WORD}))?(?:{_SPACE}(?P<w3>{_WORD}))?"
)
_ISO_TAIL_RE = re.compile(r"-(\d{2})-(\d{2})(?!\d)")
_MONTH_NAMES = _alternation(_MONTHS)
_DATE_HEAD_RE = re.compile(
    rf"(?:(?<![\w.])(?P<dd>\d{{1,2}})(?:st|nd|rd|th)?{_SPACE}(?P<dm>{_MONTH_NAMES})\.?,?|\b(?P<mm>{_MONTH_NAMES})\.?{_SPACE}(?P<md>\d{{1,2}})(?:st|nd|rd|th)?,?){_SPACE}$",
    re.IGNORECASE,
)
_ID_HEAD_RE = re.compile(r"(?<![\w-])(?P<prefix>[A-Z][A-Za-z]*)(?:-[A-Za-z0-9]+)*-$")
_ID_TAIL_RE = re.compile(r"[A-Za-z0-9]*(?:-[A-Za-z0-9]+)*")
_URL_RE = re.compile(r"https?://\S+")
_LINK_TARGET_RE = re.compile(r"\]\([^)\s]*\)")
_CITATION_RE = re.compile(r"\[\d+(?:\s*[-–,]\s*\d+)*\]")
_RANGE_JOIN_RE = re.compile(r"\s*(?:-|–|—|to|and|or|through|until)\s*$", re.IGNORECASE)
_CUE_PUNCTUATION = ".,;:()[]\"'-–"
_STOP_NOUNS = frozenset(
    {"and", "the", "for", "per", "with", "from", "was", "were", "are", "that", "than", "this", "into", "over",
     "under", "which", "while", "when", "who", "its", "their", "has", "had", "have", "but", "not", "out", "off"}
)  # fmt: skip
_ORDINAL_SUFFIXES = frozenset({"st", "nd", "rd", "th"})
# Words after which a number names something (a finding, a table, a step) instead of measuring it. A
# capitalised form always counts; the lower-case forms only for the words a sentence does not otherwise put
# before a measure.
LABEL_WORDS = frozenset(
    """finding findings step steps table tables figure figures fig figs section sections sec chapter chapters
    ch part parts phase phases stage stages item items no nos number appendix annex volume vol article art
    clause rule option level round question exhibit tier episode season book act scene example lesson page
    p pp footnote note source ref reference claim point paragraph para line row column box map plate slide
    task goal objective recommendation scenario group wave trial experiment study model type category grade
    class route unit""".split()
)  # fmt: skip
_LOWERCASE_LABELS = frozenset(
    """step steps table tables fig figs section sections chapter chapters phase phases stage stages item items
    no nos appendix annex page p pp paragraph para footnote clause article exhibit slide""".split()
)  # fmt: skip
_LABEL_BEFORE_RE = re.compile(r"(?:^|(?<=[\s(\[*_]))(?P<word>[^\W\d_]+)\.?[ \u00a0]*$")
_LIST_NUMBER_RE = re.compile(r"[ \u00a0]+[^\W\d_]")
_VERSION_WORDS = frozenset({"version", "versions", "ver", "release", "releases", "v"})
STANDARD_BODIES = frozenset(
    {"ISO", "IEC", "IEEE", "RFC", "PEP", "EN", "DIN", "ANSI", "ASTM", "ECMA", "BS", "FIPS", "NIST", "ITU",
     "JIS", "SAE", "ETSI", "ISO/IEC"}
)  # fmt: skip
_STANDARD_BEFORE_RE = re.compile(r"(?<![\w/])(?P<body>[A-Z]{2,5}(?:/[A-Z]{2,5})?)[ \u00a0]$")
_DOTTED_TAIL_RE = re.compile(r"(?:\.\d+)+")
_NOT_PRODUCT_NAMES = frozenset({*(name.capitalize() for name in _MONTHS), "The", "In", "On", "At", "By", "Of"})
_MULTI_WORD_UNITS = max(len(form.split()) for form in UNITS)


def _blank(match: re.Match[str]) -> str:
    return " " * (match.end() - match.start())


def masked_for_figures(text: str) -> str:
    """``text`` with URLs, link targets and citation markers blanked, same length, so offsets stay valid."""
    if "http" in text:
        text = _URL_RE.sub(_blank, text)
    if "](" in text:
        text = _LINK_TARGET_RE.sub(_blank, text)
    if "[" in text:
        text = _CITATION_RE.sub(_blank, text)
    return text


def figures_in(text: str) -> list[Figure]:
    """Every figure of ``text``, in order (see the module's contract)."""
    masked = masked_for_figures(text)
    figures: list[Figure] = []
    numbers: list[Figure] = []
    skip_until = -1
    for match in _NUMBER_RE.finditer(masked):
        start = match.start()
        if start < skip_until:
            continue
        if start and masked[start - 1] == "-" and (identifier := _identifier(masked, start)) is not None:
            _flush(numbers, figures, masked)
            figures.append(identifier)
            skip_until = identifier.end
            continue
        if len(match.group("int")) == 4 and not match.group("frac") and (date := _date(masked, match)) is not None:
            day_start = date[0].start
            while numbers and numbers[-1].start >= day_start:
                numbers.pop()
            _flush(numbers, figures, masked)
            figures.extend(date)
            skip_until = date[0].end
            continue
        figure = _number(match, masked)
        if figure is not None:
            numbers.append(figure)
    _flush(numbers, figures, masked)
    return figures


def _flush(numbers: list[Figure], figures: list[Figure], text: str) -> None:
    if numbers:
        _join_ranges(numbers, text)
        figures.extend(numbers)
        numbers.clear()


def _identifier(text: str, start: int) -> Figure | None:
    head = _ID_HEAD_RE.search(text, max(0, start - 40), start)
    # "Mid-2024" is a year, not a name.
    if head is None or head.group("prefix").casefold() in _YEAR_CUES:
        return None
    tail = _ID_TAIL_RE.match(text, start)
    end = tail.end() if tail else start
    written = text[head.start() : end]
    return Figure(written.casefold(), "", IDENTIFIER, "", written, head.start(), end)


def _date(text: str, match: re.Match[str]) -> list[Figure] | None:
    """An ISO date starting at this year, or a month-name date ending with it: one date and its year."""
    year = int(match.group("int"))
    start, end = match.span("int")
    if iso := _ISO_TAIL_RE.match(text, end):
        month, day = int(iso.group(1)), int(iso.group(2))
        span = (start, iso.end())
    elif head := _DATE_HEAD_RE.search(text, max(0, start - 24), start):
        if head.group("dd"):
            month, day = _MONTHS[head.group("dm").casefold()], int(head.group("dd"))
        else:
            month, day = _MONTHS[head.group("mm").casefold()], int(head.group("md"))
        span = (head.start(), end)
    else:
        return None
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    written = text[span[0] : span[1]]
    return [
        Figure(f"{year:04d}-{month:02d}-{day:02d}", "", DATE, "", written, *span),
        Figure(str(year), "", YEAR, "", str(year), start, end),
    ]


def _number(match: re.Match[str], text: str) -> Figure | None:
    digits, fraction, decade = match.groups()
    grouped = not digits.isdigit()
    if grouped:
        digits = "".join(ch for ch in digits if ch.isdigit())
    start, end = match.span()
    if text[end : end + 2].lower() in _ORDINAL_SUFFIXES and not text[end + 2 : end + 3].isalpha():
        return None  # "21st", "3rd": a rank, and a source may spell it out
    if not grouped and not decade and (version := _version(text, start, end, fraction)) is not None:
        return version
    if not grouped and not fraction and _list_number(text, start, end):
        return None
    sign_start = _sign_start(text, start)
    unit = _CURRENCY_SIGNS.get(text[sign_start:start].strip(_SPACES).casefold(), "") if sign_start < start else ""
    scale, noun = 1, ""
    after = None if decade else _AFTER_RE.match(text, end)
    if after is not None:
        words = [w for w in after.groups() if w]
        used = 0
        first = words[0].casefold()
        if first in _SCALES and (first != "k" or after.start(1) == end):
            scale, used = _SCALES[first], 1  # "5k" is 5,000; "5 k" is not
        found = _unit(words[used:])
        if found is not None:
            unit_word, count = found
            canonical = UNITS[unit_word]
            if canonical in _ERAS and not " ".join(words[used : used + count]).isupper():
                found = None  # "5 ad campaigns"
            else:
                unit = unit or canonical
                used += count
        if used:
            end = after.end(used)
        elif len(first) >= 3 and words[0].isalpha() and first not in _STOP_NOUNS:
            noun = first
    if scale == 1 and not unit and not grouped and _label_before(text, sign_start):
        return None  # "Finding 1", "Table 3", "No. 6": a name, not a measure
    if scale != 1:
        try:
            value = _plain(Decimal(digits + (fraction or "")) * scale)
        except InvalidOperation:
            return None
    else:
        value = digits.lstrip("0") or "0"
        if fraction:
            value += fraction.rstrip("0").rstrip(".")
    kind = _kind(
        digits,
        grouped=grouped,
        fraction=fraction,
        scaled=scale != 1,
        unit=unit,
        decade=bool(decade),
        noun=noun,
        text=text,
        start=start,
    )
    return Figure(value, unit, kind, noun, text[sign_start:end], start, end, scale)


def _label_before(text: str, start: int) -> bool:
    """Whether the number at ``start`` follows a label word ("Finding 1", "Table 3", "No. 6") or a ``#``."""
    before = text[max(0, start - 24) : start]
    if before.endswith("#"):
        return True
    match = _LABEL_BEFORE_RE.search(before)
    if match is None:
        return False
    word = match.group("word")
    folded = word.casefold()
    if folded not in LABEL_WORDS:
        return False
    return word[0].isupper() or folded in _LOWERCASE_LABELS


def _list_number(text: str, start: int, end: int) -> bool:
    """An inline list number: "(1) the base", "2) the tower" (one or two digits, a word after)."""
    if end - start > 2 or int(text[start:end]) > 20 or text[end : end + 1] != ")":
        return False
    opened = start > 0 and text[start - 1] == "("
    if not opened and start > 0 and not text[start - 1].isspace():
        return False
    return _LIST_NUMBER_RE.match(text, end + 1) is not None


def _version(text: str, start: int, end: int, fraction: str | None) -> Figure | None:
    """A version or a standard's number, as an identifier found as written: "Python 3.12", "3.12.1",
    "version 2.4", "ISO 8601". None for any other number."""
    tail = _DOTTED_TAIL_RE.match(text, end) if fraction else None
    if tail is not None and not text[tail.end() : tail.end() + 1].isalnum():
        end = tail.end()  # "3.12.1": two dots or more make a version, whatever precedes it
        written = text[start:end]
        return Figure(written.casefold(), "", IDENTIFIER, "", written, start, end)
    standard = (
        _STANDARD_BEFORE_RE.search(text, max(0, start - 12), start) if text[start - 2 : start - 1].isupper() else None
    )
    if standard is not None and standard.group("body") in STANDARD_BODIES:
        written = " ".join(text[standard.start() : end].split())
        return Figure(written.casefold(), "", IDENTIFIER, "", written, standard.start(), end)
    if not fraction or text[end : end + 1].isalnum():
        return None
    before = text[max(0, start - 24) : start]
    word = re.search(r"([^\W\d_][\w+#-]*)\.?[ \u00a0]$", before)
    if word is None:
        return None
    name = word.group(1)
    after = _AFTER_RE.match(text, end)
    measured = after is not None and (
        (after.group(1) or "").casefold() in _SCALES or _unit([w for w in after.groups() if w]) is not None
    )
    if measured or text[end : end + 1] == "%":
        return None
    if name.casefold() in _VERSION_WORDS or (
        name[0].isupper()
        and name not in _NOT_PRODUCT_NAMES
        and name.casefold() not in LABEL_WORDS
        and name.casefold() not in UNITS
    ):
        written = text[start:end]
        return Figure(written.casefold(), "", IDENTIFIER, "", written, start, end)
    return None


def _sign_start(text: str, start: int) -> int:
    """Where a currency sign before the number at ``start`` begins ("$61", "US$ 61", "€ 180"), else ``start``."""
    at = start - 1
    if at >= 0 and text[at] in _SPACES:
        at -= 1
    if at < 0 or text[at] not in "$€£¥":
        return start
    return at - 2 if text[at] == "$" and text[max(0, at - 2) : at] == "US" else at


def _unit(words: list[str]) -> tuple[str, int] | None:
    """The longest unit form the words after a number start with, and how many words it takes
    ("100-metre-high": "metre")."""
    for count in range(min(len(words), _MULTI_WORD_UNITS), 0, -1):
        form = " ".join(words[:count]).casefold()
        if form in UNITS:
            return form, count
    if words and "-" in words[0]:
        head = words[0].split("-", 1)[0].casefold()
        for form in (words[0].casefold(), head):
            if form in UNITS:
                return form, 1
    return None


def _plain(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _kind(
    digits: str,
    *,
    grouped: bool,
    fraction: str | None,
    scaled: bool,
    unit: str,
    decade: bool,
    noun: str,
    text: str,
    start: int,
) -> str:
    year_shaped = len(digits) == 4 and 1000 <= int(digits) <= 2100 and not grouped and fraction is None and not scaled
    if grouped or fraction is not None or scaled or (unit and unit not in _ERAS):
        return COUNT
    if unit in _ERAS or (year_shaped and decade):
        return YEAR
    if year_shaped and not noun:
        before = text[max(0, start - 24) : start].split()
        if before and before[-1].strip(_CUE_PUNCTUATION).casefold() in _YEAR_CUES:
            return YEAR
    return ""


def _join_ranges(numbers: list[Figure], text: str) -> None:
    """A range's first figure takes the unit, scale and year-ness of its second: ``280–247 BC``, ``15 to 25
    percent``, ``1 to 2 million``; ``2019–24`` is ``2019`` and ``2024``."""
    for i in range(len(numbers) - 1):
        first, second = numbers[i], numbers[i + 1]
        between = text[first.end : second.start]
        if len(between) > 12 or not _RANGE_JOIN_RE.fullmatch(between):
            continue
        dash = between.strip() in ("-", "–", "—")
        if (
            dash
            and first.kind in (YEAR, "")
            and len(first.value) == 4
            and second.kind == ""
            and len(second.text) == 2
            and int(second.value) > int(first.value[2:])
        ):
            first, second = first._replace(kind=YEAR), second._replace(value=first.value[:2] + second.text, kind=YEAR)
        if first.scale == 1 and second.scale != 1 and "." not in first.value and not first.unit:
            first = first._replace(value=_plain(Decimal(first.value) * second.scale), scale=second.scale, kind=COUNT)
        if not first.unit and second.unit:
            first = first._replace(unit=second.unit, kind=second.kind if first.kind != YEAR else YEAR)
        if first.kind == YEAR and second.kind == "" and len(second.value) == 4:
            second = second._replace(kind=YEAR)
        elif second.kind == YEAR and first.kind == "" and len(first.value) == 4:
            first = first._replace(kind=YEAR)
        numbers[i], numbers[i + 1] = first, second


def written_forms(figure: Figure) -> list[tuple[str, bool]]:
    """Literal strings one of which any written form of ``figure``'s value starts with, each with whether a
    scale word must follow it: ``3000`` is written "3000", "3,000", "3 000" or "3" + "thousand"; 1.2 billion
    "1.2" or "1,200" + a scale word. Where to look for a figure in a long text before parsing there."""
    if figure.kind == DATE:
        return [(figure.value[:4], False)]
    forms: list[tuple[str, bool]] = []
    value = Decimal(figure.value)
    for scale in (1, *sorted(set(_SCALES.values()))):
        if scale > max(value, Decimal(1)):
            break
        mantissa = _plain(value / scale)
        if scale != 1 and len(mantissa.replace(".", "")) > 6:
            continue
        whole, _, fraction = mantissa.partition(".")
        tail = f".{fraction}" if fraction else ""
        forms.append((whole + tail, scale != 1))
        if len(whole) > 3:
            groups = [whole[max(0, i - 3) : i] for i in range(len(whole), 0, -3)][::-1]
            forms.extend((separator.join(groups) + tail, scale != 1) for separator in (",", *_SPACES))
    return forms


_SCALE_AFTER_RE = re.compile(rf"{_SPACE}?(?:{_alternation(_SCALES)})(?![a-z])", re.IGNORECASE)


def form_ends_a_number(text: str, end: int, form: str, *, scaled: bool) -> bool:
    """Whether a hit of ``form`` ending at ``end`` can be a whole number of that value (not "3000" in "30000",
    "3,000" in "3,000,000", "2.5" in "2.55"; "2.5" in "2.50" and "6" in "6.00" are)."""
    if scaled:
        return _SCALE_AFTER_RE.match(text, end) is not None
    if "." in form:
        while end < len(text) and text[end] == "0":
            end += 1
    elif text[end : end + 2] == ".0":
        # "6" is also written "6.00", as script output often is.
        zeros = end + 1
        while zeros < len(text) and text[zeros] == "0":
            zeros += 1
        if not text[zeros : zeros + 1].isdigit():
            return True
    following = text[end : end + 2]
    if following[:1].isdigit():
        return False
    return not (following[:1] in ".," and following[1:2].isdigit())


def same_measure(a: Figure, b: Figure) -> bool:
    """Whether two figures measure the same kind of thing: compatible units, or no unit and the same noun."""
    if a.unit or b.unit:
        return bool(a.unit and b.unit) and (a.unit == b.unit or _degrees(a.unit, b.unit))
    return bool(a.noun) and a.noun == b.noun


def supports(claimed: Figure, found: Figure) -> bool:
    """Whether ``found`` (in a source) holds ``claimed`` (in a report): same value, compatible unit and kind."""
    if claimed.kind in (DATE, IDENTIFIER) or found.kind in (DATE, IDENTIFIER):
        return claimed.kind == found.kind and claimed.value == found.value
    if claimed.value != found.value:
        return False
    if claimed.unit and found.unit and claimed.unit != found.unit and not _degrees(claimed.unit, found.unit):
        return False
    return {claimed.kind, found.kind} != {YEAR, COUNT}


def _degrees(a: str, b: str) -> bool:
    """Plain "degrees" agrees with degrees Celsius or Fahrenheit."""
    return "°" in (a, b) and a.startswith("°") and b.startswith("°")


def unsupported(claimed: list[Figure], found: list[Figure]) -> list[Figure]:
    """The figures of ``claimed`` that no figure of ``found`` supports."""
    by_value: dict[str, list[Figure]] = {}
    for figure in found:
        by_value.setdefault(figure.value, []).append(figure)
    return [c for c in claimed if not any(supports(c, f) for f in by_value.get(c.value, ()))]
