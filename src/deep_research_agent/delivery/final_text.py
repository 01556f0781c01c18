"""What an orchestrator's last text is, when it stops talking instead of calling ``submit_report``.

``classify_final_text`` names what the last text is, so the completion middleware can answer with the
matching ``nudge_for``:

- ``report_like``: the report was written as plain text (a ``#`` title with some body, or at least
  ``REPORT_MIN_CHARS`` of several sections or paragraphs) — it only needs to go through
  ``submit_report``;
- ``json_dump``: raw JSON (findings or data) instead of a report for a reader;
- ``intent_stub``: a short announcement of a next step ("Now I will…", "Let me…") that was not taken;
- ``other``: anything else.
"""

from __future__ import annotations

import json
import re
from typing import Literal

FinalTextKind = Literal["report_like", "json_dump", "intent_stub", "other"]

REPORT_MIN_CHARS = 600
TITLED_REPORT_MIN_CHARS = 300
INTENT_MAX_CHARS = 800
_STRUCTURE_SHARE = 0.2
_JSON_SPAN_SHARE = 0.6

_FENCED_RE = re.compile(r"^```[\w-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_JSON_START_RE = re.compile(r"[{\[]")
_TITLE_RE = re.compile(r"^#[ \t]+\S", re.MULTILINE)
_SECTION_RE = re.compile(r"^#{2,6}[ \t]+\S", re.MULTILINE)
_INTENT_RE = re.compile(
    r"(?:^|[.!?:]\s+|\n)\s*(?:(?:now|next|first|then|okay|ok|alright|great|so)\b,?\s+)*"
    r"(?:i\s+will|i['’]ll|i\s+am\s+going\s+to|i['’]m\s+going\s+to|i\s+need\s+to|i\s+should|i\s+shall|"
    r"let\s+me(?!\s+know)|let['’]s|we\s+will|we['’]ll|we\s+need\s+to|proceeding\s+to|moving\s+on\s+to)\b",
    re.IGNORECASE,
)

_NUDGES: dict[FinalTextKind, str] = {
    "report_like": (
        "Your last message is the report, but written as plain text it was not delivered. "
        "Call submit_report now with that whole report as report_markdown; do not rewrite it."
    ),
    "json_dump": (
        "Your last message is raw JSON, which a reader cannot use. Write the reader-facing report from it "
        "(one # title, a short summary, sections with inline [n] citations, and ## Sources) and deliver it "
        "with submit_report."
    ),
    "intent_stub": (
        "You announced a next step but did not take it. Take it now with a tool call in this turn: task to "
        "research, or submit_report to deliver the report."
    ),
    "other": (
        "You stopped without delivering the report. If the research is done, call submit_report with the "
        "whole report now; otherwise make the next tool call."
    ),
}


def classify_final_text(text: str) -> FinalTextKind:
    """What the orchestrator's last text (a message with no tool call) is."""
    stripped = text.strip()
    if not stripped:
        return "other"
    if _is_json_dump(stripped):
        return "json_dump"
    if _is_report_like(stripped):
        return "report_like"
    if len(stripped) <= INTENT_MAX_CHARS and _INTENT_RE.search(stripped):
        return "intent_stub"
    return "other"


def nudge_for(kind: FinalTextKind) -> str:
    """The message that sends the orchestrator back to work after a final text of this kind."""
    return _NUDGES[kind]


def _is_json_dump(text: str) -> bool:
    fenced = _FENCED_RE.match(text)
    candidate = fenced.group(1).strip() if fenced else text
    if not candidate.startswith(("{", "[")):
        # Prose around a JSON object is still a dump when the object is most of the message.
        return _largest_json_share(text) >= _JSON_SPAN_SHARE
    try:
        json.loads(candidate)
        return True
    except json.JSONDecodeError:
        # Truncated or invalid JSON still reads as a dump when structure characters dominate.
        dense = [c for c in candidate if not c.isspace()]
        return sum(c in '{}[]":,' for c in dense) / len(dense) >= _STRUCTURE_SHARE


def _largest_json_share(text: str) -> float:
    decoder = json.JSONDecoder()
    largest = 0
    start = _JSON_START_RE.search(text)
    while start is not None:
        try:
            value, end = decoder.raw_decode(text, start.start())
        except json.JSONDecodeError:
            start = _JSON_START_RE.search(text, start.start() + 1)
            continue
        if isinstance(value, (dict, list)):
            largest = max(largest, end - start.start())
        # Nested values are inside the span just decoded: resume after it.
        start = _JSON_START_RE.search(text, end)
    return largest / len(text)


def _is_report_like(text: str) -> bool:
    if _TITLE_RE.search(text) and len(text) >= TITLED_REPORT_MIN_CHARS:
        return True
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    return len(text) >= REPORT_MIN_CHARS and (len(_SECTION_RE.findall(text)) >= 2 or len(paragraphs) >= 3)
