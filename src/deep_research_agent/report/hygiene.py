"""Deterministic report hygiene: scrub what the reader must never see, and lint the citations.

``scrub_report(markdown)`` removes the run's machinery from a report:

- tool-call syntax: ``<tool_call>``-style blocks, JSON function-call blobs, calls such as
  ``web_search(...)`` and bare internal tool names (``submit_report``);
- sandbox and local file paths (``/workspace/...``, ``/large_tool_results/...``, ``./data.json``);
- process narration: a sentence about sub-agents or offloaded files is dropped when it carries no
  citation; when it does, only the attribution is cut ("According to the research sub-agent, X [1]"
  becomes "X [1]");
- raw data dumps: a run of at least ``MIN_DUMP_ROWS`` date/value rows, or a CSV-like block that long,
  becomes one line with its count, span, min/max and mean (citations on the rows are kept).

It is idempotent and leaves plain prose byte-for-byte alone: only lines it changes are re-spaced, and
runs of blank lines are closed up only in a text it changed. Fenced code is kept verbatim unless the
whole block is a tool call or a dump. The Sources section is never touched: a bad entry there is the
citation check's business.

``lint_citations(markdown)`` checks the numbering contract (inline ``[n]`` ↔ ``## Sources``) and
``CitationLint.problems()`` states each defect as an instruction the writer can act on.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

from ..domain.internal_names import (
    BARE_TOOL_NAMES,
    LOCAL_PATH_RE,
    ROLE_RE,
    SANDBOX_PATH_RE,
    UNDERSCORE_TOOL_NAMES,
    UNDERSCORE_TOOL_RE,
)
from .charts import chart_cites, is_chart_fence
from .markdown import CITATION_RE, citation_groups, first_use_order, source_entries, split_sources
from .series import Point, describe, parse_row, to_float

MIN_DUMP_ROWS = 8

# A removed span is first replaced by this marker, so later steps know which lines changed and may be
# re-spaced or dropped; lines without it are left exactly as written.
_CUT = "\x00"

_XML_BLOCK_RE = re.compile(
    r"<(tool_call|tool_use|function_call|function_calls|tool_calls|invoke|tool_result)\b[^>]*>.*?</\1\s*>",
    re.DOTALL | re.IGNORECASE,
)
_XML_TAG_RE = re.compile(
    r"</?(?:tool_call|tool_use|function_call|function_calls|tool_calls|tool_result)\b[^>]*>|<\|[a-z_]*tool[a-z_]*\|>",
    re.IGNORECASE,
)
_FENCE_BLOCK_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\2[ \t]*(?:\n|\Z)", re.MULTILINE | re.DOTALL)

_NAME_KEYS = frozenset({"name", "tool", "tool_name", "action", "function"})
_ARG_KEYS = frozenset({"arguments", "args", "parameters", "input", "tool_input", "action_input"})

_UNDERSCORE = "|".join(sorted(UNDERSCORE_TOOL_NAMES, key=len, reverse=True))
_BARE = "|".join(sorted(BARE_TOOL_NAMES))
# Bare words (``execute``) only count when the parenthesis hugs them: "execute (and monitor)" is prose.
_TOOL_CALL_RE = re.compile(rf"`?\b(?:(?:{_UNDERSCORE})\s*|(?:{_BARE}))\((?:[^()]|\([^()]*\))*\)`?")
_CONNECTOR = r"(?:[ \t]*\b(?:via|using|with|through|by|from|calling|called|the)\b)*"
_TOOL_MENTION_RE = re.compile(
    rf"{_CONNECTOR}[ \t]*(?:{_TOOL_CALL_RE.pattern}"
    rf"|`?(?:{UNDERSCORE_TOOL_RE.pattern}|{ROLE_RE.pattern})`?(?:[ \t]+(?:tool|calls?|results?|output)\b)?)",
    re.IGNORECASE,
)
_PATH_CONNECTOR = (
    r"(?:[ \t]*\b(?:(?:is|are|was|were|been)[ \t]+)?(?:saved|stored|written|located|available|kept|loaded|read)"
    r"[ \t]+(?:to|in|at|under|from)\b|[ \t]*\b(?:in|at|from|see|under|file|to)\b)?"
)
_PATH = rf"(?:{SANDBOX_PATH_RE.pattern}|{LOCAL_PATH_RE.pattern})"
# A parenthetical that points at a path ("(data in /workspace/x.csv)") goes whole.
_PATH_ASIDE_RE = re.compile(rf"[ \t]*\([^()\n]*{_PATH}[^()\n]*\)")
_PATH_MENTION_RE = re.compile(rf"{_PATH_CONNECTOR}[ \t]*`?{_PATH}`?")

_AGENT = r"(?:(?:research|extract|coding)[- ]?)?sub-?agents?"
_REPORTED = r"(?:found|reported|returned|discovered|noted|confirmed|showed|identified|retrieved|fetched|gathered|established|determined)"
_OFFLOADED = r"offloaded[ \t]+(?:file|data|results?|output|table|csv|json)s?"
_PROCESS_RE = re.compile(
    rf"{ROLE_RE.pattern}"
    rf"|\b(?:my|our)[ \t]+(?:\w+[ \t]+)?sub-?agents?\b"
    rf"|\bsub-?agents?[ \t]+{_REPORTED}\b"
    rf"|\b(?:dispatched|delegated|spawned|launched)[ \t]+(?:\w+[ \t]+){{0,3}}sub-?agents?\b"
    rf"|\b{_OFFLOADED}\b"
    rf"|{UNDERSCORE_TOOL_RE.pattern}|{SANDBOX_PATH_RE.pattern}|{LOCAL_PATH_RE.pattern}",
    re.IGNORECASE,
)
_ATTRIBUTION_RE = re.compile(
    rf",?[ \t]*\b(?:according[ \t]+to|per|as[ \t]+(?:reported|found|noted|shown)[ \t]+by|based[ \t]+on|from)[ \t]+"
    rf"(?:the[ \t]+|my[ \t]+|our[ \t]+)?(?:{_AGENT}(?:'s?)?|{_OFFLOADED})"
    rf"(?:[ \t]+(?:findings|results|report|data|output|research))?(?:[ \t]+(?:at|in)[ \t]+[^\s,]+)?(?:[ \t]*,)?",
    re.IGNORECASE,
)
_AGENT_SUBJECT_RE = re.compile(
    rf"^(?:the[ \t]+|my[ \t]+|our[ \t]+|a[ \t]+|one[ \t]+)?{_AGENT}[ \t]+{_REPORTED}[ \t]+(?:that[ \t]+)?",
    re.IGNORECASE,
)

_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])([ \t]+)(?=\S)")
_LINE_PREFIX_RE = re.compile(r"^([ \t]*(?:#{1,6}[ \t]+|>[ \t]*|[-*+][ \t]+|\d+[.)][ \t]+)?)(.*)$")
_TABLE_SEPARATOR_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$")
_CSV_DELIMITERS = (",", ";", "\t")
_CSV_CELL_MAX = 40
_NUMERIC_CELL_RE = re.compile(r"^[-−+]?[$€£¥]?\d[\d,]*(?:\.\d+)?[ \t]*%?$")


def scrub_report(markdown: str) -> str:
    """``markdown`` without internal names, paths, process narration or data dumps (see the module doc)."""
    parts = split_sources(markdown)
    return _scrub_body(parts.before) + parts.sources + _scrub_body(parts.after)


def _scrub_body(text: str) -> str:
    if not text:
        return text
    original = text
    text = _XML_TAG_RE.sub(_CUT, _XML_BLOCK_RE.sub(_CUT, text))
    pieces: list[str] = []
    position = 0
    for fence in _FENCE_BLOCK_RE.finditer(text):
        pieces.append(_scrub_prose(text[position : fence.start()]))
        pieces.append(_scrub_fence(fence))
        position = fence.end()
    pieces.append(_scrub_prose(text[position:]))
    scrubbed = "".join(pieces)
    # Blank runs left by removed blocks are closed up; an untouched text keeps its own spacing.
    return re.sub(r"\n{3,}", "\n\n", scrubbed) if scrubbed != original else scrubbed


def _scrub_fence(fence: re.Match[str]) -> str:
    """A fenced block is kept verbatim unless it is a tool call (dropped) or a data dump (summarised)."""
    content = fence.group(3).replace(_CUT, "")
    if is_chart_fence(fence.group(0).lstrip(" \t")[len(fence.group(2)) :].split("\n", 1)[0]):
        return fence.group(0).replace(_CUT, "")  # a chart's points are data the chart check reads, never a dump
    emptied = _CUT in fence.group(3) and not content.strip()
    if emptied or _is_tool_call_text(content):
        return ""
    summary = _dump_summary(content.splitlines())
    return f"{fence.group(1)}{summary}\n" if summary else fence.group(0).replace(_CUT, "")


def _scrub_prose(text: str) -> str:
    text = _cut_json_tool_calls(text)
    lines = _collapse_dumps(text.split("\n"))
    kept = [line for line in (_scrub_line(line) for line in lines) if line is not None]
    return "\n".join(kept)


def _cut_json_tool_calls(text: str) -> str:
    decoder = json.JSONDecoder()
    out: list[str] = []
    position = 0
    index = _next_json_start(text, 0)
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = _next_json_start(text, index + 1)
            continue
        if _is_tool_call(value):
            out.append(text[position:index] + _CUT)
            position = end
        index = _next_json_start(text, end)
    out.append(text[position:])
    return "".join(out)


def _next_json_start(text: str, start: int) -> int:
    found = [i for i in (text.find("{", start), text.find("[", start)) if i != -1]
    return min(found) if found else -1


def _is_tool_call_text(text: str) -> bool:
    try:
        return _is_tool_call(json.loads(text))
    except json.JSONDecodeError:
        return bool(_TOOL_CALL_RE.fullmatch(text.strip()))


def _is_tool_call(value: object) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_is_tool_call(item) for item in value)
    if not isinstance(value, dict):
        return False
    keys = set(value)
    if keys & {"tool_calls", "function_call"}:
        return True
    if isinstance(value.get("function"), dict) and "name" in value["function"]:
        return True
    return bool(keys & _NAME_KEYS and keys & _ARG_KEYS)


def _collapse_dumps(lines: list[str]) -> list[str]:
    out: list[str] = []
    index = 0
    while index < len(lines):
        end, summary = _dump_at(lines, index)
        if summary is None:
            out.extend(lines[index:end])
            index = end
            continue
        # A dumped Markdown table takes its header and separator rows with it.
        if len(out) >= 2 and _TABLE_SEPARATOR_RE.match(out[-1]) and out[-2].lstrip().startswith("|"):
            del out[-2:]
        out.append(summary)
        index = end
    return out


def _dump_at(lines: list[str], start: int) -> tuple[int, str | None]:
    """``(end, summary)`` for a dump starting at ``start``; ``summary`` is None when there is none."""
    for run in (_row_run, _csv_run):
        end, summary = run(lines, start)
        if summary is not None:
            return end, summary
    return start + 1, None


def _row_run(lines: list[str], start: int) -> tuple[int, str | None]:
    points: list[Point] = []
    end = start
    while end < len(lines) and (point := parse_row(lines[end].replace(_CUT, ""))) is not None:
        points.append(point)
        end += 1
    return (end, describe(points)) if len(points) >= MIN_DUMP_ROWS else (start, None)


def _csv_run(lines: list[str], start: int) -> tuple[int, str | None]:
    first = lines[start]
    delimiter = next((d for d in _CSV_DELIMITERS if d in first), None)
    if delimiter is None or _LINE_PREFIX_RE.match(first).group(1).strip() or first.lstrip().startswith("|"):
        return start, None
    width = first.count(delimiter)
    rows: list[list[str]] = []
    end = start
    while end < len(lines) and lines[end].count(delimiter) == width:
        cells = [cell.strip() for cell in lines[end].split(delimiter)]
        if any(len(cell) > _CSV_CELL_MAX or ". " in cell for cell in cells):
            break
        rows.append(cells)
        end += 1
    header = rows[0] if rows and not _numeric_tail(rows[0]) else None
    points = [point for row in rows[1 if header else 0 :] if (point := _csv_point(row)) is not None]
    if len(points) < MIN_DUMP_ROWS or len(points) < len(rows) - (1 if header else 0):
        return start, None
    columns = f" ({', '.join(header)})" if header else ""
    return end, describe(points, heading=f"Table of {len(points)} rows × {width + 1} columns{columns}")


def _numeric_tail(cells: list[str]) -> list[str]:
    return [cell for cell in cells[1:] if _NUMERIC_CELL_RE.match(cell)]


def _csv_point(cells: list[str]) -> Point | None:
    numeric = _numeric_tail(cells)
    if not numeric:
        return None
    value = numeric[0]
    return Point(label=cells[0], value=to_float(value.rstrip("% \t")), unit="%" if value.endswith("%") else "")


def _dump_summary(lines: list[str]) -> str | None:
    """The summary of a fenced block whose every non-blank line belongs to one dump."""
    body = [line for line in lines if line.strip()]
    if not body:
        return None
    end, summary = _dump_at(body, 0)
    return summary if end == len(body) else None


def _scrub_line(line: str) -> str | None:
    """The line with internal mentions removed; None when nothing of it is left."""
    prefix, content = _LINE_PREFIX_RE.match(line).groups()
    is_table = content.lstrip().startswith("|") or prefix.lstrip().startswith("#")
    scrubbed = _scrub_tokens(content) if is_table else _scrub_sentences(content)
    if scrubbed == content and _CUT not in content:
        return line
    scrubbed = _respace(scrubbed)
    return f"{prefix}{scrubbed}" if scrubbed else None


def _scrub_sentences(content: str) -> str:
    parts = _SENTENCE_SPLIT_RE.split(content)
    sentences, separators = parts[0::2], parts[1::2] + [""]
    kept: list[str] = []
    for sentence, separator in zip(sentences, separators, strict=True):
        if _is_narration(sentence) and not CITATION_RE.search(sentence):
            continue
        kept.append(_scrub_tokens(sentence) + separator)
    return "".join(kept).rstrip() if len(kept) < len(sentences) else "".join(kept)


def _is_narration(sentence: str) -> bool:
    return bool(_PROCESS_RE.search(sentence) or _ATTRIBUTION_RE.search(sentence) or _AGENT_SUBJECT_RE.search(sentence))


def _scrub_tokens(text: str) -> str:
    stripped = _AGENT_SUBJECT_RE.sub(_CUT, text, count=1)
    stripped = _ATTRIBUTION_RE.sub(_CUT, stripped)
    for pattern in (_TOOL_MENTION_RE, _PATH_ASIDE_RE, _PATH_MENTION_RE):
        stripped = pattern.sub(_CUT, stripped)
    if stripped.startswith(_CUT) and stripped.lstrip(_CUT + " \t,"):
        rest = stripped.lstrip(_CUT + " \t,")
        stripped = _CUT + rest[0].upper() + rest[1:]
    return stripped


_RESPACE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(_CUT), ""),
    (re.compile(r"\(\s*\)|\[\s*\]|``"), ""),
    (re.compile(r"(?<=\S)[ \t]{2,}"), " "),
    (re.compile(r"[ \t]+([,.;:!?)])"), r"\1"),
    (re.compile(r"\([ \t]+"), "("),
    (re.compile(r",([.!?;:])"), r"\1"),
    (re.compile(r"^[ \t,;:]+|[ \t]+$"), ""),
]


def _respace(text: str) -> str:
    for pattern, replacement in _RESPACE:
        text = pattern.sub(replacement, text)
    return "" if not text.strip(" \t.,;:-–—|") else text


class CitationLint(BaseModel):
    """How a report's inline citations and its Sources list agree."""

    cited: list[int]
    listed: list[int]
    orphans: list[int]
    danglers: list[int]
    empty_entries: list[int]
    has_sources: bool
    no_inline_citations: bool

    @property
    def ok(self) -> bool:
        return not self.problems()

    def problems(self) -> list[str]:
        """Each defect as an instruction to the report's writer."""
        problems: list[str] = []
        if self.no_inline_citations:
            problems.append(
                "The report lists sources but cites none of them in the text: "
                "put [n] right after each claim that comes from source n."
            )
        if self.danglers and not self.has_sources:
            cited = ", ".join(f"[{n}]" for n in self.danglers)
            problems.append(
                f"The text cites {cited} but the report has no `## Sources` section: "
                "end it with `## Sources`, one `[n] Title — URL` line per cited source."
            )
        else:
            problems.extend(
                f"[{n}] is cited in the text but has no entry under Sources: add `[{n}] Title — URL`, or remove the citation."
                for n in self.danglers
            )
        if not self.no_inline_citations:
            problems.extend(
                f"[{n}] is listed under Sources but never cited: cite it after the claim it supports, or delete the entry."
                for n in self.orphans
            )
        problems.extend(
            f"Sources entry [{n}] is empty: give its title and URL, or delete it and every [{n}] in the text."
            for n in self.empty_entries
        )
        return problems


def lint_citations(markdown: str) -> CitationLint:
    """Orphans, danglers, empty entries, and a Sources list with no inline citation at all."""
    parts = split_sources(markdown)
    body = parts.before + parts.after
    # A chart's points cite sources too; a source only a chart cites is no orphan.
    cited = list(dict.fromkeys([*first_use_order(body), *chart_cites(body)]))
    entries = source_entries(parts.sources)
    listed = list(dict.fromkeys(entry.index for entry in entries))
    empty = [entry.index for entry in entries if entry.is_empty]
    return CitationLint(
        cited=cited,
        listed=listed,
        orphans=[n for n in listed if n not in cited and n not in empty],
        danglers=[n for n in cited if n not in listed],
        empty_entries=empty,
        has_sources=parts.has_sources,
        no_inline_citations=bool(listed) and not citation_groups(body) and not cited,
    )
