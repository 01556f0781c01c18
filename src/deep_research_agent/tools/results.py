"""How much of a tool result enters a model's context: the one owner of that limit for every tool.

Contract of ``fit_result`` (web_fetch pages, MCP results, custom tool results):
- a result within ``max_chars`` characters and ``max_rows`` rows (items of a JSON list, or of the one
  list a JSON object wraps; lines of CSV/TSV after its header) is passed on as it is, unless it is a
  metric time series;
- a larger one, or any metric time series (a time column and at least one numeric column, at least
  ``MIN_SERIES_POINTS`` rows), is written whole to ``<offload_dir>/<name>-<digest>.<json|csv|txt>`` in the
  run's sandbox when one is attached and offloading is on, and the model gets a stub instead: the path,
  the row count, the columns, a 5-row preview, the source to cite, and who can read the file (the
  extract and coding sub-agents, through ``task``). A series' stub carries its computed summary (span,
  first and last, min and max with when, mean, median, direction: ``report.series.summarize``) and the
  rule that a series is never listed row by row. The file is remembered, so a replaced sandbox session
  gets it again;
- without a sandbox, with offloading off, or when the sandbox cannot take the file, the limits become
  truncation: the first ``max_rows`` rows, then the first ``max_chars`` characters, with a note saying
  what was cut and why (a series keeps its summary line on top);
- 0 for a limit means no cap. The caller keeps the whole text as evidence, so citations are checked
  against all of it.

Why not deepagents' own eviction (``FilesystemMiddleware(tool_token_limit_before_evict=...)``): it counts
tokens, not rows; its stub is a head and tail of text with no rows, columns or series statistics; it
points the model to ``read_file`` pagination, which the extract role does not have; and without a
sandbox it writes into the checkpointed graph state instead of truncating.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import logging
import math
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from ..domain.errors import ToolFailure
from ..domain.knobs import KnobError, not_negative
from ..domain.secrets import redact
from ..report.series import summarize_values
from ..settings import ResultSettings

if TYPE_CHECKING:
    from ..run.attachments import Attachments
    from ..sandbox.connector import SandboxConnector

logger = logging.getLogger(__name__)

PREVIEW_ROWS = 5
PREVIEW_ROW_CHARS = 300
PREVIEW_TEXT_CHARS = 1500
MIN_SERIES_POINTS = 3
MAX_SUMMARISED_METRICS = 4
MAX_COLUMNS_SHOWN = 40
SAMPLE_ROWS = 100
# Larger results are examined (parsed, checked for a series) off the event loop, in threads of their own.
EXAMINE_OFF_LOOP_CHARS = 20_000
_EXAMINE_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="dra-results")
_TIME_COLUMN = re.compile(r"^(?:date|time|timestamp|datetime|ts|day|week|month|year|period|as_of|asof|dt)$", re.I)
_SLUG = re.compile(r"[^a-z0-9]+")
SERIES_RULE = (
    "A time series is never listed row by row: state its statistic (span, first → last, min and max with when, "
    "mean, median, direction)."
)


@dataclass(frozen=True)
class ResultLimits:
    """The size limits of one graph's tool results, and the sandbox that takes what is over them; a negative
    limit or an ``offload_dir`` that is not an absolute path is refused with a ``KnobError``."""

    max_chars: int = 60_000
    max_rows: int = 1_000
    offload: bool = True
    offload_dir: str = "/workspace/data"
    sandbox: SandboxConnector | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        not_negative("ResultLimits", "max_chars", self.max_chars)
        not_negative("ResultLimits", "max_rows", self.max_rows)
        if not self.offload_dir.startswith("/") or ".." in self.offload_dir.split("/"):
            raise KnobError("ResultLimits", "offload_dir", self.offload_dir, "an absolute sandbox path without '..'")

    @classmethod
    def of(cls, settings: ResultSettings, sandbox: SandboxConnector | None) -> ResultLimits:
        """The limits the run's result settings set, offloading into ``sandbox`` (None: cutting instead)."""
        return cls(
            max_chars=settings.max_result_chars,
            max_rows=settings.max_result_rows,
            offload=settings.offload_results,
            offload_dir=settings.offload_dir,
            sandbox=sandbox,
        )


@dataclass(frozen=True)
class Table:
    """A result read as rows: JSON objects or arrays, or CSV/TSV lines under a header."""

    format: str  # "json" or "csv"
    rows: list[Any]
    columns: list[str]
    header: str = ""
    key: str = ""  # the key of a JSON object whose list holds the rows

    def preview(self) -> list[str]:
        if self.format == "csv":
            return [_cut(str(row), PREVIEW_ROW_CHARS) for row in self.rows[:PREVIEW_ROWS]]
        return [
            _cut(json.dumps(row, ensure_ascii=False, default=str), PREVIEW_ROW_CHARS)
            for row in self.rows[:PREVIEW_ROWS]
        ]

    def head(self, count: int) -> str:
        if self.format == "csv":
            return "\n".join([self.header, *map(str, self.rows[:count])])
        return json.dumps(self.rows[:count], ensure_ascii=False, indent=1, default=str)


@dataclass(frozen=True)
class Series:
    time_column: str
    start: str
    end: str
    lines: tuple[str, ...]

    def text(self, count: int) -> str:
        metrics = " ".join(self.lines)
        return f"Time series of {count:,} points, {self.start} → {self.end}, by {self.time_column}. {metrics}"


async def fit_result(
    text: str, *, name: str, cite_as: str, limits: ResultLimits, attachments: Attachments, tabular: bool = True
) -> str:
    """The text a model reads in place of ``text``; see the module contract. ``name`` names the file,
    ``cite_as`` says how the stub tells the model to cite it (e.g. ``"MCP: prices"`` with its quotes),
    ``attachments`` are the run's (where its sandbox session is kept), ``tabular`` is False for prose (a
    fetched page), which is measured in characters only."""
    if len(text) > EXAMINE_OFF_LOOP_CHARS:
        table, series = await asyncio.get_running_loop().run_in_executor(_EXAMINE_POOL, _examine, text, tabular)
    else:
        table, series = _examine(text, tabular)
    rows = len(table.rows) if table else 0
    over = [
        *([f"{rows:,} rows (limit {limits.max_rows:,})"] if limits.max_rows and rows > limits.max_rows else []),
        *(
            [f"{len(text):,} characters (limit {limits.max_chars:,})"]
            if limits.max_chars and len(text) > limits.max_chars
            else []
        ),
    ]
    if not over and series is None:
        return text
    if limits.sandbox is None:
        why = "No sandbox is attached to this run, so the rest could not be offloaded"
    elif not limits.offload:
        why = "Offloading is off for this run"
    else:
        try:
            path = await _offload(text, name=name, table=table, limits=limits, attachments=attachments)
        except ToolFailure as failure:
            why = f"The sandbox could not take the file ({failure.message.rstrip('.')})"
        else:
            return _stub(path, text, table=table, series=series, over=over or ["a metric time series"], cite_as=cite_as)
    return _truncated(text, table=table, series=series, limits=limits, why=why)


def _examine(text: str, tabular: bool) -> tuple[Table | None, Series | None]:
    table = parse_table(text) if tabular else None
    return table, detect_series(table) if table else None


async def _offload(text: str, *, name: str, table: Table | None, limits: ResultLimits, attachments: Attachments) -> str:
    assert limits.sandbox is not None
    extension = table.format if table else "txt"
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    slug = _SLUG.sub("-", name.lower()).strip("-")[:60] or "result"
    path = f"{limits.offload_dir}/{slug}-{digest}.{extension}"
    content = text.encode()
    session = limits.sandbox.session(attachments)
    [response] = await session.upload([(path, content)])
    if response.error:
        raise ToolFailure.transient(str(response.error))
    session.remember(path, content)
    return path


def _stub(path: str, text: str, *, table: Table | None, series: Series | None, over: list[str], cite_as: str) -> str:
    lines = [
        f"[Offloaded to the sandbox: {' and '.join(over)}; the whole result is in a file, only this stub is here.]",
        f"file: {path}",
    ]
    if table is not None:
        shape = "CSV" if table.format == "csv" else f"JSON list{f' under key {table.key!r}' if table.key else ''}"
        lines += [f"format: {shape}", f"rows: {len(table.rows):,}"]
        if table.columns:
            shown = table.columns[:MAX_COLUMNS_SHOWN]
            more = f" (+{len(table.columns) - len(shown)} more)" if len(table.columns) > len(shown) else ""
            lines.append(f"columns: {', '.join(shown)}{more}")
        lines += [f"preview (first {min(PREVIEW_ROWS, len(table.rows))} rows):", *table.preview()]
    else:
        lines += [
            f"size: {len(text):,} characters, {text.count(chr(10)) + 1:,} lines",
            "preview:",
            _cut(text, PREVIEW_TEXT_CHARS),
        ]
    if series is not None:
        lines += [f"series: {series.text(len(table.rows) if table else 0)}", SERIES_RULE]
    lines.append(
        f"Cite it as {cite_as}. To use the file, give its path to extract-subagent (to pull out facts with quotes) "
        "or to coding-subagent (to compute over it) through task, with what you need from it and the source to cite."
    )
    return "\n".join(lines)


def _truncated(text: str, *, table: Table | None, series: Series | None, limits: ResultLimits, why: str) -> str:
    notes: list[str] = []
    shown = text
    if table is not None and limits.max_rows and len(table.rows) > limits.max_rows:
        shown = table.head(limits.max_rows)
        notes.append(f"showing the first {limits.max_rows:,} of {len(table.rows):,} rows")
    if limits.max_chars and len(shown) > limits.max_chars:
        notes.append(f"cut to {limits.max_chars:,} of {len(shown):,} characters")
        shown = shown[: limits.max_chars]
    if series is not None:
        shown = f"{series.text(len(table.rows) if table else 0)}\n{SERIES_RULE}\n{shown}"
    if notes:
        shown += f"\n[Result truncated: {'; '.join(notes)}. {why}; narrow the call to see the rest.]"
    return shown


def parse_table(text: str) -> Table | None:
    """``text`` as rows, when it is a JSON list (or an object wrapping one list) or CSV/TSV; else None."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return None
        key = ""
        if isinstance(parsed, dict):
            lists = [(k, v) for k, v in parsed.items() if isinstance(v, list)]
            if len(lists) != 1:
                return None
            key, parsed = lists[0]
        if not isinstance(parsed, list):
            return None
        columns: dict[str, None] = {}
        for row in parsed:
            if isinstance(row, dict):
                columns.update(dict.fromkeys(str(k) for k in row))
        return Table("json", parsed, list(columns), key=key)
    return _csv_table(stripped)


def _csv_table(text: str) -> Table | None:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 3:
        return None
    for delimiter in ("\t", ",", ";", "|"):
        counts = {line.count(delimiter) for line in lines}
        if len(counts) == 1 and counts.pop() >= 1:
            reader = csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter)
            header = next(reader)
            columns = [c.strip() for c in header]
            if len(set(columns)) != len(columns) or any(not c or len(c) > 64 for c in columns):
                return None
            return Table("csv", lines[1:], columns, header=lines[0])
    return None


def detect_series(table: Table) -> Series | None:
    """The table as a metric time series (a time column and numeric columns), or None.

    Column kinds are judged on a sample of rows (the first and the last ones), so a large table costs one
    pass over its time column and its metrics, not one per column."""
    records = _records(table)
    if len(records) < MIN_SERIES_POINTS or not table.columns:
        return None
    sample = records if len(records) <= 2 * SAMPLE_ROWS else [*records[:SAMPLE_ROWS], *records[-SAMPLE_ROWS:]]

    def mostly(column: str, test: Callable[[Any], object]) -> bool:
        return sum(test(r.get(column)) is not None for r in sample) >= 0.9 * len(sample)

    named = [c for c in table.columns if _TIME_COLUMN.match(c)]
    time_column = next((c for c in named if mostly(c, lambda v: _as_time(v, named=True))), None)
    if time_column is None:
        time_column = next((c for c in table.columns if mostly(c, lambda v: _as_time(v, named=False))), None)
    if time_column is None:
        return None
    is_named = time_column in named
    metrics = [c for c in table.columns if c != time_column and mostly(c, _as_number)][:MAX_SUMMARISED_METRICS]
    if not metrics:
        return None
    dated = [(t, r) for r in records if (t := _as_time(r.get(time_column), named=is_named)) is not None]
    dated.sort(key=lambda pair: pair[0])
    labels = [_label(t) for t, _ in dated]
    lines = []
    for metric in metrics:
        kept = [
            (label, v)
            for label, (_, r) in zip(labels, dated, strict=True)
            if (v := _as_number(r.get(metric))) is not None
        ]
        if len(kept) >= MIN_SERIES_POINTS:
            summary = summarize_values([label for label, _ in kept], [v for _, v in kept])
            lines.append(summary.sentence(metric))
    if not lines:
        return None
    return Series(time_column, labels[0], labels[-1], tuple(lines))


def _records(table: Table) -> list[dict[str, Any]]:
    if table.format == "csv":
        delimiter = next(d for d in ("\t", ",", ";", "|") if d in table.header)
        reader = csv.reader(io.StringIO("\n".join(table.rows)), delimiter=delimiter)
        return [dict(zip(table.columns, (cell.strip() for cell in row), strict=False)) for row in reader]
    rows = [row for row in table.rows if isinstance(row, dict)]
    return rows if len(rows) == len(table.rows) else []


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.replace(",", "").strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _as_time(value: Any, *, named: bool) -> datetime | None:
    """A date or time: an ISO string, or (in a column named like time) epoch seconds or milliseconds."""
    if isinstance(value, str):
        text = value.strip()
        if not re.match(r"^\d{4}-\d{2}", text):
            return None
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            try:
                parsed = datetime.strptime(text[:7], "%Y-%m")
            except ValueError:
                return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if named and isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        if 3e8 < seconds < 5e9:
            return datetime.fromtimestamp(seconds, UTC)
    return None


def _label(moment: datetime) -> str:
    if (moment.hour, moment.minute, moment.second) == (0, 0, 0):
        return date(moment.year, moment.month, moment.day).isoformat()
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cut(text: str, limit: int) -> str:
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
