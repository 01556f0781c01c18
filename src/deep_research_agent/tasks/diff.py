"""What changed since a task's last run: new or changed findings and sources, and figures that moved.

Contract: ``task_diff(previous, findings, pages, failed)`` compares the task's record with this run's findings
and the pages (and MCP results) this run retrieved itself, as of the task's last run that delivered a report:
- a source is ``new`` when the task never read its URL, ``changed`` when its text's sha256 differs, ``gone``
  when the task had read it and this run tried to read it again and could not (``failed``: URL → why);
- a finding is new when its text (whitespace and case aside) is not among the task's findings;
- a figure moved when a new finding and an earlier finding cite the same source and state figures of the
  same measure (unit and kind) with different values: ``{source, before, after}`` as written;
- ``section(diff, wording)`` is the report's "What changed since the last run" section (Markdown, no citation
  markers, so the claim check has nothing to flag in it), in the run's ``wording`` (``tasks/wording.py``,
  English by default); an empty diff says nothing changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from ..domain.findings import Finding
from ..domain.task_diff import MovedFigure
from ..evidence.figures import figures_in
from ..evidence.store import EvidenceRecord
from .store import TaskRecord
from .wording import ENGLISH_WORDING, DigestWording


class TaskDiff(BaseModel):
    """The ``task_diff`` event's payload, without the event's own keys."""

    task: str
    previous_run_at: str
    new_findings: list[str] = Field(default_factory=list)
    new_sources: list[str] = Field(default_factory=list)
    changed_sources: list[str] = Field(default_factory=list)
    moved_figures: list[MovedFigure] = Field(default_factory=list)
    gone_sources: list[str] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.new_findings or self.new_sources or self.changed_sources or self.moved_figures or self.gone_sources
        )


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def task_diff(
    previous: TaskRecord,
    findings: Sequence[Finding],
    pages: Sequence[EvidenceRecord],
    failed: Mapping[str, str] | None = None,
) -> TaskDiff:
    known = {source.url: source for source in previous.sources}
    read = {p.url for p in pages}
    gone = sorted(f"{url} ({why})" for url, why in (failed or {}).items() if url in known and url not in read)
    new_sources = sorted({p.url for p in pages if p.url not in known})
    changed = sorted({p.url for p in pages if p.url in known and known[p.url].sha256 != p.sha256})
    old_keys = {_key(f.finding) for f in previous.findings}
    fresh = [f for f in findings if _key(f.finding) not in old_keys]
    moved: list[MovedFigure] = []
    for finding in fresh:
        after = figures_in(finding.finding)
        for earlier in (f for f in previous.findings if f.source == finding.source):
            for old in figures_in(earlier.finding):
                for new in after:
                    if (old.unit, old.kind) == (new.unit, new.kind) and old.value != new.value:
                        entry = MovedFigure(source=finding.source, before=old.text, after=new.text)
                        if entry not in moved:
                            moved.append(entry)
    return TaskDiff(
        task=previous.name,
        previous_run_at=previous.last_delivered_at or previous.last_run_at,
        new_findings=list(dict.fromkeys(f.finding for f in fresh)),
        new_sources=new_sources,
        changed_sources=changed,
        moved_figures=moved,
        gone_sources=gone,
    )


def section(diff: TaskDiff, wording: DigestWording = ENGLISH_WORDING) -> str:
    lines = [f"## {wording.since_last_run}", "", wording.compared_with.format(since=diff.previous_run_at)]
    if diff.empty:
        return "\n".join([*lines, "", wording.nothing_changed])
    for title, entries in (
        (wording.figures_moved, [f"{m.before} → {m.after} ({m.source})" for m in diff.moved_figures]),
        (wording.sources_gone, diff.gone_sources),
        (wording.changed_sources, diff.changed_sources),
        (wording.new_sources, diff.new_sources),
        (wording.new_findings, diff.new_findings),
    ):
        if entries:
            lines += ["", f"**{title}:**", *(f"- {entry}" for entry in entries)]
    return "\n".join(lines)
