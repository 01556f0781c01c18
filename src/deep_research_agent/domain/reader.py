"""The shape a reader asks a report to take: its language, its outline and its length and depth.

Contract:
- ``LANGUAGES`` maps every language code a run may name (ISO 639-1, or 639-3 where there is none) to its
  English name: exactly the languages the local detector (``documents/language.py``) tells apart, so a
  language that can be asked for by code can also be found by ``auto``;
- ``language_refusal(code)`` is why a ``report_language`` cannot be used (listing the valid values), or None;
- ``ReportStyle`` is the length and depth preset (``brief | standard | detailed``); ``STYLE_TARGETS`` says
  what each asks for (research units per plan, words of the report); ``standard`` is the default and asks
  for nothing, so a run with the defaults is prompted as before; ``style_unit_cap`` is the most units a
  run of a style starts (``delivery/unit_cap.py``; the plan review's bound too);
- ``parse_outline(raw)`` is the section headings a reader gave (a list, or a Markdown skeleton whose ``#``
  headings are the sections), or raises ``OutlineError`` saying how to fix it: an outline with no heading
  or with more than ``MAX_OUTLINE_SECTIONS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

AUTO_LANGUAGE = "auto"
ENGLISH = "en"

LANGUAGES: dict[str, str] = {
    "af": "Afrikaans",
    "am": "Amharic",
    "ar": "Arabic",
    "as": "Assamese",
    "az": "Azerbaijani",
    "be": "Belarusian",
    "bg": "Bulgarian",
    "bn": "Bangla",
    "br": "Breton",
    "bs": "Bosnian",
    "ca": "Catalan",
    "cs": "Czech",
    "cy": "Welsh",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "eo": "Esperanto",
    "es": "Spanish",
    "et": "Estonian",
    "eu": "Basque",
    "fa": "Persian",
    "fi": "Finnish",
    "fr": "French",
    "fy": "Western Frisian",
    "ga": "Irish",
    "gd": "Scottish Gaelic",
    "gl": "Galician",
    "gu": "Gujarati",
    "ha": "Hausa",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "ht": "Haitian Creole",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "ig": "Igbo",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "jv": "Javanese",
    "ka": "Georgian",
    "kk": "Kazakh",
    "km": "Khmer",
    "kn": "Kannada",
    "ko": "Korean",
    "ku": "Kurdish",
    "ky": "Kyrgyz",
    "la": "Latin",
    "lg": "Ganda",
    "ln": "Lingala",
    "lo": "Lao",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "mg": "Malagasy",
    "mk": "Macedonian",
    "ml": "Malayalam",
    "mn": "Mongolian",
    "mr": "Marathi",
    "ms": "Malay",
    "my": "Burmese",
    "ne": "Nepali",
    "nl": "Dutch",
    "no": "Norwegian",
    "om": "Oromo",
    "or": "Odia",
    "pa": "Punjabi",
    "pl": "Polish",
    "ps": "Pashto",
    "pt": "Portuguese",
    "qu": "Quechua",
    "ro": "Romanian",
    "ru": "Russian",
    "sa": "Sanskrit",
    "si": "Sinhala",
    "sk": "Slovak",
    "sl": "Slovenian",
    "so": "Somali",
    "sq": "Albanian",
    "sr": "Serbian",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "te": "Telugu",
    "th": "Thai",
    "tl": "Filipino",
    "tr": "Turkish",
    "ug": "Uyghur",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "uz": "Uzbek",
    "vi": "Vietnamese",
    "xh": "Xhosa",
    "yo": "Yoruba",
    "zh": "Chinese",
    "zu": "Zulu",
    "ace": "Acehnese",
    "bcl": "Central Bikol",
    "dz": "Dzongkha",
    "ext": "Extremaduran",
    "gcf": "Guadeloupean Creole French",
    "gom": "Goan Konkani",
    "grc": "Ancient Greek",
    "gug": "Paraguayan Guaraní",
    "hbo": "Ancient Hebrew",
    "kik": "Kikuyu",
    "nso": "Northern Sotho",
    "pcm": "Nigerian Pidgin",
    "rw": "Kinyarwanda",
    "se": "Northern Sami",
    "sn": "Shona",
    "st": "Southern Sotho",
    "an": "Aragonese",
    "ary": "Moroccan Arabic",
    "crh": "Crimean Tatar",
    "fo": "Faroese",
    "fuv": "Nigerian Fulfulde",
    "gcr": "Guianese Creole French",
    "guw": "Gun",
    "kab": "Kabyle",
    "lb": "Luxembourgish",
    "lij": "Ligurian",
    "ltg": "Latgalian",
    "uzs": "Southern Uzbek",
    "wa": "Walloon",
    "sdh": "Southern Kurdish",
    "arz": "Egyptian Arabic",
    "ba": "Bashkir",
    "mt": "Maltese",
    "nn": "Norwegian Nynorsk",
    "oc": "Occitan",
    "tg": "Tajik",
    "tk": "Turkmen",
    "tt": "Tatar",
    "vec": "Venetian",
    "vo": "Volapük",
    "wuu": "Wu Chinese",
    "yue": "Cantonese",
}


def language_refusal(code: str) -> str | None:
    """Why ``code`` is no ``report_language``, listing the valid values; None for ``auto`` or a known code."""
    if code == AUTO_LANGUAGE or code in LANGUAGES:
        return None
    return (
        f"report_language {code!r} is not a language code this agent knows. Use auto (the question's language) "
        f"or one of: {', '.join(sorted(LANGUAGES))}"
    )


def language_name(code: str) -> str:
    """The English name of a known language code (``fr``: French); the code itself for any other."""
    return LANGUAGES.get(code, code)


@dataclass(frozen=True)
class RunLanguage:
    """A run's report language once told, attached to the run (``delivery/reader.run_language``): a code, or
    None when the model chooses (an English question under ``auto``, or one whose language cannot be told)."""

    code: str | None


class ReportStyle(StrEnum):
    """How long and deep a report is, and so how many research units its plan has."""

    BRIEF = "brief"
    STANDARD = "standard"
    DETAILED = "detailed"


@dataclass(frozen=True)
class StyleTarget:
    """What a style asks of the plan and the report: a range of research units and of the report's words."""

    units: tuple[int, int]
    words: tuple[int, int]


STYLE_TARGETS: dict[ReportStyle, StyleTarget] = {
    ReportStyle.BRIEF: StyleTarget(units=(1, 2), words=(300, 600)),
    ReportStyle.STANDARD: StyleTarget(units=(2, 5), words=(800, 2000)),
    ReportStyle.DETAILED: StyleTarget(units=(4, 8), words=(2500, 5000)),
}


def style_unit_cap(style: str) -> int | None:
    """The most research units a run of ``style`` starts: the top of its range; None for ``standard``, which
    asks for nothing (``plan_max_units`` and the budgets bound it)."""
    preset = ReportStyle(style)
    return None if preset is ReportStyle.STANDARD else STYLE_TARGETS[preset].units[1]


def style_refusal(style: str) -> str | None:
    """Why ``style`` is no ``report_style``, listing the valid values; None for a known style."""
    if style in set(ReportStyle):
        return None
    return f"report_style {style!r} does not exist. Use one of: {', '.join(ReportStyle)}"


MAX_OUTLINE_SECTIONS = 30
MAX_HEADING_CHARS = 200
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


class OutlineError(ValueError):
    """An outline that cannot be followed, with what to do about it."""


def parse_outline(raw: object) -> tuple[str, ...]:
    """The section headings of an outline, in order: a list of headings, or a text whose Markdown headings (of
    the shallowest level it uses below the title) are the sections; a text without ``#`` headings is read one
    heading per non-empty line (list markers dropped). Raises ``OutlineError`` for none, too many or too long."""
    if isinstance(raw, (list, tuple)):
        if not all(isinstance(item, str) for item in raw):
            raise OutlineError("report_outline must be a list of section headings (strings) or a Markdown skeleton")
        headings = [_clean(item) for item in raw]
    elif isinstance(raw, str):
        headings = _from_text(raw)
    else:
        raise OutlineError("report_outline must be a list of section headings or a Markdown skeleton")
    headings = [heading for heading in headings if heading]
    if not headings:
        raise OutlineError(
            "report_outline has no section headings: give a list of headings, or Markdown with ## headings"
        )
    if len(headings) > MAX_OUTLINE_SECTIONS:
        raise OutlineError(
            f"report_outline has {len(headings)} sections; a report follows at most {MAX_OUTLINE_SECTIONS}: "
            "merge sections or give only the top-level ones"
        )
    if too_long := next((h for h in headings if len(h) > MAX_HEADING_CHARS), None):
        raise OutlineError(
            f"report_outline has a heading of {len(too_long)} characters (at most {MAX_HEADING_CHARS}): "
            f"{too_long[:60]!r}..."
        )
    return tuple(dict.fromkeys(headings))


def _clean(heading: str) -> str:
    return " ".join(_BULLET.sub("", heading).strip().lstrip("#").split())


def _from_text(text: str) -> list[str]:
    found = [(len(m[1]), m[2]) for line in text.splitlines() if (m := _HEADING.match(line))]
    if not found:
        return [_clean(line) for line in text.splitlines()]
    levels = sorted({level for level, _ in found})
    # One # title over ## sections is a skeleton's usual shape: the sections are the level below the title.
    if len(levels) > 1 and sum(level == levels[0] for level, _ in found) == 1:
        levels = levels[1:]
    return [_clean(heading) for level, heading in found if level == levels[0]]
