"""The compact task view the orchestrator reads when a run continues a named task, instead of the old transcript.

Contract: ``render_view(record, decisions)`` is one data block, ``<task_view ...>...</task_view>``: what
was asked, what was found (each finding with its source), the sources read with when they were read (they
can be cited without reading them again), the open gaps, the decisions and the head of the last report.
Every list is capped, so the view stays small however long the task runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from .store import TaskRecord

MAX_ITEMS = 30
REPORT_HEAD_CHARS = 3000


def _listed(title: str, entries: Sequence[str], empty: str) -> str:
    shown = [f"- {e}" for e in entries[-MAX_ITEMS:]]
    more = len(entries) - len(shown)
    return f"{title}:\n" + ("\n".join(shown) + (f"\n- … {more} earlier" if more > 0 else "") if shown else f"- {empty}")


def render_view(record: TaskRecord, decisions: Sequence[dict[str, Any]]) -> str:
    report = record.last_report[:REPORT_HEAD_CHARS] + ("…" if len(record.last_report) > REPORT_HEAD_CHARS else "")
    parts = [
        f'<task_view name="{escape(record.name)}" runs="{record.runs}" last_run="{record.last_run_at}" last_status="{record.status}">',
        _listed("Asked", record.questions, "nothing yet"),
        _listed("Found", [f"{f.finding} (source: {f.source})" for f in record.findings], "nothing yet"),
        _listed(
            "Sources read (citable as they are, without reading them again)",
            [f"{s.title or s.url} — {s.url} (read {s.retrieved_at})" for s in record.sources],
            "none",
        ),
        _listed("Open gaps", record.gaps, "none recorded"),
        _listed(
            "Decisions", [f"{d['text']} (why: {d['why']}; {d['recorded_at']})" for d in decisions], "none recorded"
        ),
        f"Last report:\n{report or '(none)'}",
        "</task_view>",
    ]
    return "\n\n".join(parts)
