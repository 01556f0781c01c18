"""One run's view of its named task: who, which task, what the task held when the run started."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .diff import TaskDiff
from .store import TaskRecord
from .wording import DigestWording


@dataclass
class TaskContext:
    name: str
    user: str
    thread_id: str
    previous: TaskRecord | None = None
    """The task as its last run left it; None on the task's first run."""
    decisions: list[dict[str, Any]] = field(default_factory=list)
    adopted: int = 0
    """Evidence texts of earlier runs taken into this run's evidence."""
    schedule: str | None = None
    """The schedule that started the run (``digest.schedule_of``), else None."""
    diff: TaskDiff | None = None
    """What changed, once the run's report was delivered after researching again."""
    public_url: str = ""
    """Where users reach this server, for the digest's link to the report (``TaskMiddleware``)."""
    wording: DigestWording | None = None
    """The digest's wording in the run's language, once the report needed it (``TaskMiddleware``); None:
    English (a run that failed before it delivered spends no call on it)."""
