"""The hand-over contract between a research sub-agent and the orchestrator: its shape, its rules, its caps.

The shape: a sub-agent's final message is one JSON object ``{summary, findings: [{finding, evidence,
source}], gaps}``, bare, fenced or wrapped in prose; the last object with ``summary`` or ``findings``
is the one read (``last_findings_object``).

The rules: ``validate_findings`` names every problem with that message:

- no findings object parses; the summary is empty; ``findings`` is not a list;
- a finding is not an object, or has no text, or no source;
- a source is a file path, a sandbox path or an internal tool name / function call instead of a URL
  or a source label ("Tavily search" and "MCP: pricing-db" are labels and fine);
- a field is longer than ``MAX_FIELD_CHARS`` (a data dump), or transcribes a series of at least
  ``MIN_SERIES_POINTS`` dated values;
- findings exist although the sub-agent made no tool call, so none of them can come from retrieved text;
- a field copies a placeholder of an example answer the sub-agent was shown (its prompt's, the contract's, or
  any example a harness message showed it), or repeats a harness instruction it was given (a guard's warning,
  a nudge): a copied quote is left out of its finding, a copied claim or source drops the finding, a copied
  summary or gap is not handed over.

An empty ``findings`` list is valid: it is the honest "nothing found". The verdict also carries what to
hand over once the gate's single bounce is spent: the findings that parse, cleaned (unusable findings
dropped, series summarised, long fields cut), or else the prose, trimmed.

The caps: what reaches the orchestrator is at most ``MAX_HANDOVER_CHARS`` (``capped``): one degenerate
worker cannot flood the orchestrator's context.

``quotes_checked`` marks, as a unit hands over, each finding whose quote is in no text the run retrieved
from its source (``check: "quote_not_found"``): the orchestrator's prompt says such a finding needs another
source before a report states it.

``hand_back`` is what a sub-agent stopped by a guard returns: its last findings object if it wrote one
(without what it copied), otherwise one that says it was halted and quotes the head of its last notes
(unless they repeat the harness), always with a gap that names what stopped it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from pydantic import BaseModel, Field, ValidationError

from ..domain.conversation import is_harness_instruction, is_harness_message
from ..domain.findings import Finding, Findings
from ..domain.internal_names import LOCAL_PATH_RE, SANDBOX_PATH_RE, is_file_path, names_internal_tool
from ..domain.stops import StopCause
from ..evidence.text import EvidenceLibrary, quote_fragments
from ..prompts import Prompt, template
from ..report.series import describe, inline_series


def last_findings_object(text: str) -> dict[str, Any] | None:
    """The last JSON object in ``text`` that carries ``summary`` or ``findings``, wherever it sits."""
    found: dict[str, Any] | None = None
    for value in json_objects(text):
        if isinstance(value, dict) and ("summary" in value or "findings" in value):
            found = value
    return found


def json_objects(text: str) -> Iterator[Any]:
    """Each JSON value that starts at a ``{`` of ``text``, left to right, skipping what does not parse."""
    decoder = json.JSONDecoder()
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        yield value
        index = text.find("{", end)


def parse_findings(text: str) -> Findings | None:
    """The findings object in a sub-agent's final message, or None when there is none that validates."""
    raw = last_findings_object(text)
    if raw is None:
        return None
    try:
        return Findings.model_validate(raw)
    except ValidationError:
        return None


MAX_FIELD_CHARS = 1200
MIN_SERIES_POINTS = 6
MAX_FALLBACK_CHARS = 4000
_EXCERPT_CHARS = 60
_URL_RE = re.compile(r"^(?:https?|corpus)://\S+$", re.IGNORECASE)

NOT_PARSED = (
    "Your final message has no findings JSON object: nothing in it parses as an object with `summary` or `findings`."
)
PROVENANCE = (
    "You returned findings but made no tool call in this unit, so none of them comes from text you retrieved: "
    "search and read first, or return an empty findings list."
)
UNRESEARCHED = "You called no tool in this unit, so nothing was researched"
# Kept in the cleaned findings so the orchestrator does not present an unresearched summary as researched.
NO_SOURCES_GAP = "No source was consulted for this unit; its summary is unverified."

_CONTRACT_EXAMPLE = {
    "summary": "dense prose answer",
    "findings": [
        {
            "finding": "one claim with its figures",
            "evidence": "verbatim quote from the text you read",
            "source": "the page URL",
        }
    ],
    "gaps": ["what you could not establish"],
}
_CONTRACT = (
    f"Reply with exactly one JSON object and nothing else: {json.dumps(_CONTRACT_EXAMPLE, ensure_ascii=False)}. "
    'A source is the URL the claim was read at, or a named data source such as "MCP: pricing-db"; never a file path '
    "or a tool name. Keep every field under 1,200 characters, and give a series as its statistic (count, span first → last, "
    "min/max, mean), not value by value. An empty findings list is fine when nothing was found."
)


class FindingsVerdict(BaseModel):
    """The gate's judgement on one final message; ``copied_text`` when a field copied text it was shown, and
    ``example``, an example answer that ends the bounce instead of the contract (set by the gate, which sees the
    unit and its assist)."""

    findings: Findings | None = None
    problems: list[str] = Field(default_factory=list)
    fallback_text: str = ""
    copied_text: bool = False
    example: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_findings(text: str, *, tool_calls_made: int, conversation: Sequence[AnyMessage] = ()) -> FindingsVerdict:
    """Parse and check a sub-agent's final message; ``tool_calls_made`` is the sub-agent's own tool-call count,
    ``conversation`` the messages it answers (a field repeating what the harness told it there is refused)."""
    raw = last_findings_object(text)
    if raw is None:
        return FindingsVerdict(problems=[NOT_PARSED], fallback_text=_trim(text.strip(), MAX_FALLBACK_CHARS))
    copying = _Copying(conversation)
    problems: list[str] = []
    copied = any(copying.of(text) for text in _string_values(raw))
    summary = _as_text(raw.get("summary"))
    if what := copying.of(summary):
        problems.append(_copy_problem("`summary`", what, summary))
        summary = ""
    elif not summary:
        problems.append("`summary` is empty: answer the unit in a few dense sentences, or say that nothing was found.")
    problems.extend(_field_problems("`summary`", summary))

    items: Any = raw.get("findings") or []
    if not isinstance(items, list):
        problems.append("`findings` is not a list: make it a list of {finding, evidence, source} objects.")
        items = []
    kept: list[Finding] = []
    for number, item in enumerate(items, start=1):
        finding, found = _check_finding(number, item, copying)
        problems.extend(found)
        if finding is not None:
            kept.append(finding)

    gaps = _as_list(raw.get("gaps"))
    problems.extend(
        _copy_problem(f"gap {n}", what, gap) for n, gap in enumerate(gaps, start=1) if (what := copying.of(gap))
    )
    gaps = [gap for gap in gaps if not copying.of(gap)]
    for number, gap in enumerate(gaps, start=1):
        problems.extend(_field_problems(f"gap {number}", gap))
    if items and tool_calls_made <= 0:
        problems.append(PROVENANCE)
        kept, gaps = [], [*gaps, NO_SOURCES_GAP]

    cleaned = Findings(summary=_clean(summary), findings=kept, gaps=[_clean(gap) for gap in gaps])
    return FindingsVerdict(findings=cleaned, problems=problems, fallback_text=cleaned.to_json(), copied_text=copied)


def bounce_message(problems: Sequence[str], *, example: str = "") -> str:
    """What the sub-agent is told when its findings are sent back: each problem, then the contract; an answer
    that researched nothing (``UNRESEARCHED`` first) is told only that, ending on what to do: a small model
    told last to reply with findings writes them from memory (Qwen2.5-Coder-0.5B: 0 of 4 replies searched when
    the bounce ended "then reply with your findings", 4 of 4 when it ended on the call to make). With
    ``example`` (the assist's, for findings that copied placeholders) it ends on that example instead of the
    contract."""
    if problems and problems[0].startswith(UNRESEARCHED):
        return problems[0]
    listed = "\n".join(f"- {problem}" for problem in problems)
    if example:
        return f"Your findings were not accepted:\n{listed}\n\n{example}"
    return (
        f"Your findings were not accepted:\n{listed}\n\n{_CONTRACT}\n"
        "This is your one chance to fix them; after it, whatever parses is handed over as it is."
    )


def _string_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [text for item in value for text in _string_values(item)] if isinstance(value, list) else []


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _example_placeholders() -> frozenset[str]:
    """The texts of the example answers every sub-agent may be shown: its prompt's example line and the bounce's."""
    examples: list[Any] = [_CONTRACT_EXAMPLE]
    for prompt in (Prompt.RESEARCH_SUBAGENT, Prompt.EXTRACT_SUBAGENT):
        for line in template(prompt).splitlines():
            if line.startswith('{"summary"'):
                examples.append(json.loads(line))
    return frozenset(_words(text) for example in examples for text in _string_values(example))


_PLACEHOLDERS = _example_placeholders()
_MIN_PLACEHOLDER_WORDS = 3


def copies_placeholder(value: str, placeholders: Collection[str] = _PLACEHOLDERS) -> bool:
    """True when ``value`` is an example answer's placeholder (of ``placeholders``, their words), or a run of at
    least three of its words: a small model copies the example instead of answering (seen: "the text you read
    that supports it")."""
    words = _words(value)
    if not words:
        return False
    return any(
        words == held or (len(words.split()) >= _MIN_PLACEHOLDER_WORDS and f" {words} " in f" {held} ")
        for held in placeholders
    )


def _shown_examples(text: str) -> set[str]:
    """The words of the string values of the JSON objects in a harness message (an example answer or call it
    showed); never a URL, which an answer is right to cite."""
    values = [string for value in json_objects(text) for string in _string_values(value)]
    return {words for value in values if not _URL_RE.match(value.strip()) and (words := _words(value))}


_MIN_ECHO_WORDS = 8


class _Copying:
    """Tells which text a field copied instead of answering: an example's placeholder (the prompt's and the
    contract's, or one a harness message in the conversation showed), or a run of eight words that a harness
    instruction in the conversation introduced (words no earlier message held, so a bounce quoting the
    sub-agent's own answer, or an example filled with its brief, does not count). Seen: Qwen2.5-Coder-0.5B
    handed over the loop guard's "Repeating it will not give you anything new" as its unit's summary, and the
    salvaged report showed it."""

    def __init__(self, conversation: Sequence[AnyMessage]) -> None:
        held: set[tuple[str, ...]] = set()
        held_text = " "
        shown: set[str] = set()
        self._introduced: set[tuple[str, ...]] = set()
        for message in conversation:
            runs = _word_runs(message.text)
            if is_harness_instruction(message):
                self._introduced |= runs - held
                shown |= {words for words in _shown_examples(message.text) if f" {words} " not in held_text}
            elif not is_harness_message(message):
                held |= runs
                held_text += f"{_words(message.text)} "
        self._placeholders = _PLACEHOLDERS | shown

    def of(self, value: str) -> str | None:
        """What ``value`` copied, as a problem names it, or None when it copied nothing."""
        if copies_placeholder(value, self._placeholders):
            return "copies the example's placeholder"
        if self._introduced and not self._introduced.isdisjoint(_word_runs(value)):
            return "repeats what the harness told you"
        return None

    def cleaned(self, findings: Findings) -> Findings:
        """``findings`` without what was copied: the summary, quotes and gaps blanked or dropped, and the
        findings whose claim or source was copied left out."""
        kept = [
            f.model_copy(update={"evidence": ""}) if self.of(f.evidence) else f
            for f in findings.findings
            if not (self.of(f.finding) or self.of(f.source))
        ]
        return Findings(
            summary="" if self.of(findings.summary) else findings.summary,
            findings=kept,
            gaps=[gap for gap in findings.gaps if not self.of(gap)],
        )


def _word_runs(text: str) -> set[tuple[str, ...]]:
    words = _words(text).split()
    return {tuple(words[i : i + _MIN_ECHO_WORDS]) for i in range(len(words) - _MIN_ECHO_WORDS + 1)}


def _copy_problem(name: str, what: str, value: str) -> str:
    return f"{name} {what} “{_trim(value, _EXCERPT_CHARS)}”: write what the text you read says."


def source_problem(source: str) -> str | None:
    """Why ``source`` cannot be cited, or None when it is a URL or a source label."""
    if _URL_RE.match(source):
        return None
    if SANDBOX_PATH_RE.search(source):
        return "is a sandbox path"
    if is_file_path(source) or LOCAL_PATH_RE.search(source):
        return "is a file path"
    if names_internal_tool(source):
        return "names an internal tool, not a source"
    return None


def _check_finding(number: int, item: Any, copying: _Copying) -> tuple[Finding | None, list[str]]:
    if not isinstance(item, dict):
        return None, [f"finding {number} is not an object: write it as {{finding, evidence, source}}."]
    claim, evidence, source = (_as_text(item.get(key)) for key in ("finding", "evidence", "source"))
    # Named by its number, never by an excerpt of its claim: Qwen2.5-Coder-0.5B copied a cut excerpt
    # ("…visible from 50 kilo…") as its revised claim in 4 of 4 replayed replies, and 0 of 4 without it.
    name = f"finding {number}"
    problems: list[str] = []
    if not claim:
        problems.append(f"{name} has no text: state the claim in `finding`.")
    why = source_problem(source) if source else "is missing"
    if not source:
        problems.append(f"{name} has no source: give the URL the claim was read at.")
    elif why:
        problems.append(
            f"{name}: the source “{_trim(source, _EXCERPT_CHARS)}” {why}; "
            'give the page URL, or a named data source such as "MCP: pricing-db".'
        )
    copied = [
        (field, value, what)
        for field, value in (("finding", claim), ("evidence", evidence), ("source", source))
        if (what := copying.of(value))
    ]
    problems.extend(_copy_problem(f"{name}: `{field}`", what, value) for field, value, what in copied)
    for field, value in (("finding", claim), ("evidence", evidence), ("source", source)):
        problems.extend(_field_problems(f"{name}: `{field}`", value))
    # A finding may come without its quote, so a copied `evidence` is left out; a copied claim or source is not a finding.
    if not claim or why or any(field != "evidence" for field, _, _ in copied) or len(source) > MAX_FIELD_CHARS:
        return None, problems
    if copied:
        evidence = ""
    return Finding(finding=_clean(claim), evidence=_clean(evidence), source=source), problems


def _field_problems(name: str, value: str) -> list[str]:
    problems: list[str] = []
    if len(value) > MAX_FIELD_CHARS:
        problems.append(
            f"{name} is {len(value):,} characters (limit {MAX_FIELD_CHARS:,}): that is a data dump; "
            "keep the claim and its key figures."
        )
    _, points = inline_series(value)
    if len(points) >= MIN_SERIES_POINTS:
        problems.append(
            f"{name} transcribes a series of {len(points)} dated values: "
            "give its statistic instead (count, span first → last, min/max, mean)."
        )
    return problems


def _clean(value: str) -> str:
    """The field as it is handed over: a transcribed series becomes its statistic, then the length is capped."""
    lead, points = inline_series(value)
    if len(points) >= MIN_SERIES_POINTS:
        value = f"{lead.strip()} {describe(points)}".strip()
    return _trim(value, MAX_FIELD_CHARS)


def _trim(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _as_text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    values = value if isinstance(value, list) else [value]
    return [text for text in (_as_text(v) for v in values) if text]


MAX_HANDOVER_CHARS = 20_000
_NOTES_CHARS = 1500
_SUMMARY_CHARS = 4000
_GAP_CHARS = 500
_MAX_GAPS = 20


def capped_text(text: str) -> str:
    """A sub-agent answer that is no findings object, cut to the hand-over cap with a note."""
    if len(text) <= MAX_HANDOVER_CHARS:
        return text
    return (
        text[:MAX_HANDOVER_CHARS].rstrip()
        + f"\n\n[Cut: the sub-agent's answer was {len(text):,} characters; only the first {MAX_HANDOVER_CHARS:,} are shown.]"
    )


def capped_findings(findings: Findings) -> Findings:
    """Fit the findings object under the hand-over cap: clip summary and gaps, then drop findings from the end."""
    if len(findings.to_json()) <= MAX_HANDOVER_CHARS:
        return findings
    summary = _clip(findings.summary, _SUMMARY_CHARS)
    gaps = [_clip(gap, _GAP_CHARS) for gap in findings.gaps[:_MAX_GAPS]]
    kept = list(findings.findings)

    def build() -> Findings:
        dropped = len(findings.findings) - len(kept)
        note = f"{dropped} findings were dropped" if dropped else "The answer was shortened"
        return Findings(summary=summary, findings=kept, gaps=[*gaps, f"{note} to fit the hand-over size cap."])

    while kept and len(build().to_json()) > MAX_HANDOVER_CHARS:
        kept.pop()
    return build()


def quotes_checked(findings: Findings, library: EvidenceLibrary) -> Findings:
    """``findings`` with each finding whose quote is in no text the run retrieved from its source (a page, a
    search result's snippet, an MCP result, a corpus passage) marked ``quote_not_found``; a finding without a
    quote is left to the report's checks, which name it."""
    marked = [
        finding.model_copy(update={"check": "quote_not_found"})
        if finding.evidence
        and not any(
            text.contains_quote(quote_fragments(finding.evidence)) for text in library.for_source(finding.source)
        )
        else finding
        for finding in findings.findings
    ]
    return findings.model_copy(update={"findings": marked})


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def hand_back(messages: Sequence[AnyMessage], *, cause: StopCause, why: str | None = None) -> Findings:
    """What a sub-agent a guard stopped hands back: what it found, marked as halted by ``why`` (by default the
    cause's wording)."""
    why = why or cause.wording
    copying = _Copying(messages)
    findings = _last_findings(messages)
    if findings is not None:
        findings = copying.cleaned(findings)
    else:
        summary = f"Halted by {why} before this unit returned findings."
        notes = _last_notes(messages)
        if notes and not copying.of(notes):
            summary += f" Its last notes: {notes}"
        findings = Findings(summary=summary)
    gap = f"This unit was halted by {why}; what it had not yet gathered is missing."
    return findings.model_copy(update={"gaps": [*findings.gaps, gap]})


def _last_notes(messages: Sequence[AnyMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not is_harness_message(message) and message.text.strip():
            text = message.text.strip()
            return text if len(text) <= _NOTES_CHARS else text[:_NOTES_CHARS].rstrip() + " …"
    return ""


def _last_findings(messages: Sequence[AnyMessage]) -> Findings | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.text:
            findings = parse_findings(message.text)
            if findings is not None:
                return findings
    return None
