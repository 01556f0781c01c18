"""The fixed wording of a task's digest and of a re-run's "what changed" section, in English or translated.

Contract:
- ``DigestWording`` owns every fixed phrase ``tasks/digest.py`` and ``tasks/diff.section`` write, English by
  default (``ENGLISH_WORDING``); a phrase's ``{placeholders}`` (``since``, ``count``, ``task``, ``reason``)
  are filled when a section is written, and what comes from the run (findings, figures, URLs, why a page
  could not be read) is put in as it is; the Markdown around the phrases (``## ``, ``**…:**``, ``- ``)
  belongs to the section, not to the wording;
- ``translation_request(language)`` is the (system, user) prompt that asks a model for the wording in a
  language: the English wording as a JSON object, to be answered with the same keys
  (``prompts/digest_wording.md``);
- ``parse_wording(reply)`` is the translated wording in a model's reply, or raises ``WordingError`` saying
  why it cannot be used: no JSON object, a key missing, a value that is no text, empty, on several lines
  or over ``MAX_GROWTH`` times the English (and ``MIN_BOUND`` characters), or whose placeholders are not
  exactly the English phrase's (one lost, added or malformed would break or garble the section).
"""

from __future__ import annotations

import json
import re
from string import Formatter
from typing import Any

from pydantic import BaseModel, ConfigDict

from .. import prompts
from ..domain.reader import language_name

MAX_GROWTH = 3
MIN_BOUND = 80
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class DigestWording(BaseModel):
    """The fixed phrases of a digest (a scheduled run's) and of a re-run's section (a named task's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The digest of a scheduled run (``tasks/digest.py``).
    changed_since: str = "What changed since {since}"
    nothing_material: str = "Nothing material changed: no new findings, no figure moved and no source is gone."
    pages_checked: str = "Pages that changed in other ways or were new: {count}."
    figures_moved: str = "Figures that moved"
    new_findings: str = "New findings"
    sources_gone: str = "Sources gone"
    pages_changed: str = "Pages that changed"
    new_pages: str = "New pages"
    recalled: str = "Nothing material changed: the run read nothing again."
    first_heading: str = "What changed"
    first_run: str = (
        "This is the first run of the task {task}: there is nothing to compare with yet. "
        "The next runs open with what changed since this one."
    )
    failed_heading: str = "This run failed"
    failed: str = (
        "The run ended with {reason} before it could compare anything. "
        "The schedule goes on: the next run compares with the last run that delivered a report."
    )
    # The section a re-run of a named task appends to its report (``tasks/diff.section``).
    since_last_run: str = "What changed since the last run"
    compared_with: str = "Compared with the run of {since}."
    nothing_changed: str = "Nothing changed: no new findings or sources, and every page read again is unchanged."
    changed_sources: str = "Changed sources"
    new_sources: str = "New sources"


ENGLISH_WORDING = DigestWording()


class WordingError(ValueError):
    """Why a model's answer is no usable wording."""


def placeholders(phrase: str) -> set[str]:
    """The names of ``phrase``'s ``{placeholders}``; a ``ValueError`` for a stray brace."""
    return {name for _, name, _, _ in Formatter().parse(phrase) if name is not None}


def translation_request(language: str) -> tuple[str, str]:
    """The system and user prompt asking for the wording in ``language`` (a code, ``fr``)."""
    names = sorted(set().union(*(placeholders(phrase) for phrase in ENGLISH_WORDING.model_dump().values())))
    system = prompts.fill(
        prompts.Prompt.DIGEST_WORDING,
        language=language_name(language),
        placeholders=", ".join(f"{{{name}}}" for name in names),
    )
    return system, ENGLISH_WORDING.model_dump_json(indent=1)


def parse_wording(reply: str) -> DigestWording:
    """The wording in ``reply`` (a JSON object, possibly fenced or after a thinking block); raises
    ``WordingError`` when it cannot be used (see the contract)."""
    found = _json_object(_THINKING.sub(" ", reply))
    if found is None:
        raise WordingError(f"the answer holds no JSON object: {' '.join(reply.split())[:80]!r}")
    phrases = {}
    for key, english in ENGLISH_WORDING.model_dump().items():
        phrases[key] = _phrase(key, english, found.get(key))
    return DigestWording(**phrases)


def _phrase(key: str, english: str, value: Any) -> str:
    if value is None:
        raise WordingError(f"the answer has no {key!r}")
    if not isinstance(value, str) or not value.strip():
        raise WordingError(f"{key!r} is {'empty' if isinstance(value, str) else 'no text'}")
    phrase = value.strip()
    if "\n" in phrase:
        raise WordingError(f"{key!r} runs over several lines")
    if len(phrase) > max(MAX_GROWTH * len(english), MIN_BOUND):
        raise WordingError(f"{key!r} is {len(phrase)} characters long, the English {len(english)}")
    try:
        kept = placeholders(phrase)
        phrase.format(**dict.fromkeys(kept, ""))
    except (ValueError, IndexError, KeyError):
        raise WordingError(f"{key!r} has a stray brace: {phrase!r}") from None
    if kept != placeholders(english):
        wanted = ", ".join(sorted(f"{{{name}}}" for name in placeholders(english))) or "none"
        raise WordingError(f"{key!r} does not keep its placeholders ({wanted}): {phrase!r}")
    return phrase


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (a model may fence it or write a line before it)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None
