"""What a run has spent: model calls, tool calls, tokens and dollars, per role and per ``task`` call.

Contract: every count goes through ``UsageMeter``'s methods, under its lock; readers get snapshots
(``RoleUsage`` copies), never the live counters. ``RoleUsage`` is also the per-role payload of the
``usage`` event, so the event carries exactly what the run counted. ``snapshot``/``restore`` carry the
counts through the run's ledger to the process that resumes the run.
"""

from __future__ import annotations

import threading
from typing import Any

from ..domain.usage import RoleUsage


class UsageMeter:
    """Counts every role's calls as they happen, so sub-agents and work later compacted away count too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_role: dict[str, RoleUsage] = {}
        self._by_task: dict[str, RoleUsage] = {}
        self.compactions = 0
        self.messages_summarized = 0

    def count_model_call(self, role: str, task_id: str | None, spent: RoleUsage) -> None:
        """One model call of ``role`` (inside the ``task`` call ``task_id``, if any) and its tokens and cost."""
        call = spent.model_copy(update={"model_calls": 1, "tool_calls": 0})
        with self._lock:
            for counters in self._counters(role, task_id):
                counters._add(call)

    def count_tool_call(self, role: str, task_id: str | None) -> None:
        with self._lock:
            for counters in self._counters(role, task_id):
                counters.tool_calls += 1

    def count_compaction(self, messages_summarized: int) -> None:
        """One context compaction; the summarized work keeps counting against the budget."""
        with self._lock:
            self.compactions += 1
            self.messages_summarized += messages_summarized

    def of_role(self, role: str) -> RoleUsage:
        with self._lock:
            return (self._by_role.get(role) or RoleUsage()).model_copy()

    def of_task(self, task_id: str) -> RoleUsage:
        with self._lock:
            return (self._by_task.get(task_id) or RoleUsage()).model_copy()

    def per_role(self) -> dict[str, RoleUsage]:
        with self._lock:
            return {role: counters.model_copy() for role, counters in self._by_role.items()}

    def totals(self) -> RoleUsage:
        # Summed under the lock, without a copy per role: the budget reads this at every model and tool call.
        total = RoleUsage()
        with self._lock:
            for counters in self._by_role.values():
                total._add(counters)
        return total

    def _counters(self, role: str, task_id: str | None) -> list[RoleUsage]:
        counters = [self._by_role.setdefault(role, RoleUsage())]
        if task_id:
            counters.append(self._by_task.setdefault(task_id, RoleUsage()))
        return counters

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "by_role": {role: c.model_dump() for role, c in self._by_role.items()},
                "by_task": {task: c.model_dump() for task, c in self._by_task.items()},
                "compactions": self.compactions,
                "messages_summarized": self.messages_summarized,
            }

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Add what another process counted for this run before it stopped."""
        with self._lock:
            for role, counters in (snapshot.get("by_role") or {}).items():
                self._by_role.setdefault(role, RoleUsage())._add(RoleUsage.model_validate(counters))
            for task, counters in (snapshot.get("by_task") or {}).items():
                self._by_task.setdefault(task, RoleUsage())._add(RoleUsage.model_validate(counters))
            self.compactions += int(snapshot.get("compactions") or 0)
            self.messages_summarized += int(snapshot.get("messages_summarized") or 0)
