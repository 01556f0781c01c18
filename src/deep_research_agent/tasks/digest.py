"""The digest of a scheduled run: what changed since the task's last run, opening the run's report.

Contract:
- ``schedule_of(config)`` is the name of the schedule that started the run (``configurable.schedule``, set
  on every cron the server's schedule guard lets through, ``schedules/guard.py``), else None;
- ``material(diff)``: a new finding, a figure that moved or a source gone is material; a page whose text
  changed or a new page that changed no finding is not;
- ``digest_section(diff)`` is the report's opening section "## What changed since <date>": the figures that
  moved (both values and their source), the new findings, the sources gone (read before, not readable
  now, and why), then the pages changed or new; Markdown without citation markers, added inside the report
  gate, so the claim check has nothing to flag in it; ``first_section(task)`` opens a task's first run;
- every section is written in a ``wording`` (``tasks/wording.py``), English unless the run's report language
  is another (``TaskMiddleware`` translates it once and keeps it on the ``TaskContext``, so the report and the
  ``digest`` state key say the same); what comes from the run (findings, figures, sources) is as it was;
- ``opening_with(report, section)`` puts the section right after the report's title (its first ``# ``
  heading), or at the top of a report without one;
- ``unchanged_report(draft, section)`` is what a run that found nothing material delivers instead of
  repeating its report: the draft's title and the short "nothing material changed" section;
- ``Digest`` is the run's ``digest`` state key: the task, what the digest says (its Markdown, whether it
  is material, the changes), the run's end and outcome and a link to its report. LangGraph's run webhook
  sends the thread's values, so a scheduled run's webhook carries it. ``build_digest`` makes it from the
  run's task context once the run has ended, and ``headline`` says it in one line for the Watching list,
  in English whatever the report's language: it is text of the web UI, which is in English.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..domain.task_diff import MovedFigure
from .context import TaskContext
from .diff import TaskDiff
from .wording import ENGLISH_WORDING, DigestWording

# The Watching list's wording: the English web UI's, whatever the report's language.
NOTHING_MATERIAL = "Nothing material changed"
_TITLE = re.compile(r"^# .+$", re.MULTILINE)


def schedule_of(config: Mapping[str, Any] | None) -> str | None:
    """The schedule that started the run, or None for a run someone started by hand."""
    raw = ((config or {}).get("configurable") or {}).get("schedule")
    name = " ".join(str(raw).split()) if raw else ""
    return name or None


def readable_time(iso: str) -> str:
    """``2026-12-01T08:00:03Z`` as ``2026-12-01 08:00 UTC``; a text that is no such time as it is."""
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def material(diff: TaskDiff) -> bool:
    return bool(diff.new_findings or diff.moved_figures or diff.gone_sources)


def digest_section(diff: TaskDiff, wording: DigestWording = ENGLISH_WORDING) -> str:
    """The opening section of a re-run's report (see the module contract)."""
    lines = [f"## {wording.changed_since.format(since=readable_time(diff.previous_run_at))}", ""]
    if not material(diff):
        checked = len(diff.changed_sources) + len(diff.new_sources)
        lines.append(wording.nothing_material + (f" {wording.pages_checked.format(count=checked)}" if checked else ""))
        return "\n".join(lines)
    for title, entries in (
        (wording.figures_moved, [_moved(m) for m in diff.moved_figures]),
        (wording.new_findings, diff.new_findings),
        (wording.sources_gone, diff.gone_sources),
        (wording.pages_changed, diff.changed_sources),
        (wording.new_pages, diff.new_sources),
    ):
        if entries:
            lines += [f"**{title}:**", *(f"- {entry}" for entry in entries), ""]
    return "\n".join(lines).rstrip()


def _moved(figure: MovedFigure) -> str:
    return f"{figure.before} → {figure.after} ({figure.source})"


def recalled_section(since: str, wording: DigestWording = ENGLISH_WORDING) -> str:
    """The digest of a run that answered from the task's memory without reading anything again."""
    return f"## {wording.changed_since.format(since=readable_time(since))}\n\n{wording.recalled}"


def first_section(task: str, wording: DigestWording = ENGLISH_WORDING) -> str:
    return f"## {wording.first_heading}\n\n{wording.first_run.format(task=task)}"


def opening_with(report: str, section: str) -> str:
    """``report`` with ``section`` right after its title, or at its top."""
    title = _TITLE.search(report)
    if title is None:
        return f"{section}\n\n{report.lstrip()}"
    head, rest = report[: title.end()], report[title.end() :].lstrip("\n")
    return f"{head}\n\n{section}\n\n{rest}"


def unchanged_report(draft: str, section: str, task: str) -> str:
    """The short report of a run that found nothing material: the draft's title and the section."""
    title = _TITLE.search(draft)
    return f"{title.group(0) if title else f'# {task}'}\n\n{section}\n"


class Digest(BaseModel):
    """A scheduled run's digest, as its ``digest`` state key (and so its webhook) carries it."""

    task: str
    schedule: str
    since: str | None = Field(description="UTC ISO-8601 time of the run compared with; None on the first run.")
    material: bool = Field(description="A new finding, a figure that moved or a source gone.")
    markdown: str = Field(description="The digest: the report's opening section, or what went wrong.")
    new_findings: list[str] = Field(default_factory=list)
    moved_figures: list[MovedFigure] = Field(default_factory=list)
    gone_sources: list[str] = Field(default_factory=list)
    status: str = Field(description="The run's end reason.")
    outcome: str | None = None
    failed: bool = Field(default=False, description="The run ended in error.")
    thread_id: str
    run_id: str
    report_url: str | None = Field(description="Where the run's report is: GET /reports/{thread_id} (its own thread).")
    cost_usd: float = 0.0
    finished_at: str


def failed_section(reason: str, wording: DigestWording = ENGLISH_WORDING) -> str:
    return f"## {wording.failed_heading}\n\n{wording.failed.format(reason=reason)}"


def build_digest(
    context: TaskContext,
    *,
    run_id: str,
    status: str,
    outcome: str | None,
    failed: bool,
    cost: float,
    finished_at: str,
    report_url: str | None,
) -> Digest:
    """The digest of the scheduled run ``context`` belongs to (see the module contract)."""
    previous, diff, wording = context.previous, context.diff, context.wording or ENGLISH_WORDING
    since = (previous.last_delivered_at or previous.last_run_at) if previous else None
    if failed:
        markdown, is_material = failed_section(status, wording), False
    elif previous is None:
        markdown, is_material = first_section(context.name, wording), True
    elif diff is None:
        markdown, is_material = recalled_section(since or "", wording), False
    else:
        markdown, is_material = digest_section(diff, wording), material(diff)
    return Digest(
        task=context.name, schedule=context.schedule or context.name, since=since, material=is_material,
        markdown=markdown, new_findings=diff.new_findings if diff else [], moved_figures=diff.moved_figures if diff else [],
        gone_sources=diff.gone_sources if diff else [], status=status, outcome=outcome, failed=failed,
        thread_id=context.thread_id, run_id=run_id, report_url=report_url, cost_usd=cost, finished_at=finished_at,
    )  # fmt: skip


def headline(digest: Digest) -> str:
    """The digest in one line: why it failed, a first run, nothing material, or what changed and since when."""
    if digest.failed:
        return f"Failed: {digest.status}"
    if digest.since is None:
        return "First run: nothing to compare with yet"
    if not digest.material:
        return f"{NOTHING_MATERIAL} since {readable_time(digest.since)}"
    counts = [
        (len(digest.moved_figures), "figure moved", "figures moved"),
        (len(digest.new_findings), "new finding", "new findings"),
        (len(digest.gone_sources), "source gone", "sources gone"),
    ]
    said = ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts if n)
    return f"{said} since {readable_time(digest.since)}"
