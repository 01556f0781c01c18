"""Run control: the signals that steer a whole run, orchestrator and sub-agents alike.

Also which research units are running (by ``task`` call id, with their briefs) and which of them a steering
message dropped: the unit's next model call stops it (``guards/budget.py``). Neither is kept in the ledger: a
sub-agent is never resumed midway.

Contract: each signal is set by one method, under the lock, and read through a property; a signal that
stays set once set (a halt, the wrap-up request, the budget's soft stage) returns True only to its
first setter, whose event is the one sent. Reasons are typed (``names``), never bare strings.
``snapshot``/``restore`` carry the signals (not the say-it-once notices) through the run's ledger to the
process that resumes the run; a restored signal sends no event again.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

from ..domain.names import Ceiling, EndReason, HaltedBy
from ..domain.stops import StopCause


@dataclass(frozen=True)
class Halt:
    """Why the whole run stopped early: its cause (which names its end reason) and a detail for the reader."""

    cause: StopCause
    detail: str
    ceiling: Ceiling | None = None

    @property
    def reason(self) -> EndReason:
        """The end-status reason of the run this halt ends."""
        return self.cause.end_reason


class RunControl:
    """Halt, stop, wrap-up, steering and drop requests, the budget's soft stage, and what the run has delivered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._halt: Halt | None = None
        self._budget_soft: Ceiling | None = None
        self._wrap_up_requested = False
        self._research_started = False
        self._report_delivered = False
        self._evidence_insufficient = False
        self._clarification_requested = False
        self._questions: tuple[str, ...] = ()
        self._steering: tuple[str, ...] = ()
        self._halted_tasks: dict[str, HaltedBy] = {}
        self._running_units: dict[str, str] = {}
        self._dropped_units: dict[str, str] = {}
        self._notices: set[str] = set()
        self._closed = False
        self._stop = asyncio.Event()

    @property
    def halt(self) -> Halt | None:
        return self._halt

    @property
    def budget_soft(self) -> Ceiling | None:
        return self._budget_soft

    @property
    def wrap_up_requested(self) -> bool:
        return self._wrap_up_requested

    @property
    def research_started(self) -> bool:
        return self._research_started

    @property
    def report_delivered(self) -> bool:
        return self._report_delivered

    @property
    def evidence_insufficient(self) -> bool:
        """The delivered report says the evidence does not answer the question."""
        return self._evidence_insufficient

    @property
    def clarification_requested(self) -> bool:
        return self._clarification_requested

    @property
    def questions(self) -> tuple[str, ...]:
        """The clarifying questions the run asked, once it asked."""
        return self._questions

    @property
    def steering(self) -> tuple[str, ...]:
        """The user's steering messages so far, oldest first."""
        return self._steering

    @property
    def closed(self) -> bool:
        return self._closed

    def halt_run(self, halt: Halt) -> bool:
        """Stop the whole run; True only for the first halt, so its event is sent once."""
        with self._lock:
            if self._halt is not None:
                return False
            self._halt = halt
            return True

    def request_stop(self, halt: Halt) -> bool:
        """Halt the run at the user's request and wake every call racing ``stop_requested``."""
        first = self.halt_run(halt)
        self._stop.set()
        return first

    async def stop_requested(self) -> None:
        """Returns once the user asked the run to stop; calls in flight race it."""
        await self._stop.wait()

    def request_wrap_up(self) -> bool:
        """The user asked the run to finish with what it has; True only the first time."""
        with self._lock:
            first, self._wrap_up_requested = not self._wrap_up_requested, True
            return first

    def add_steering(self, message: str) -> int:
        """Take one steering message from the user; returns how many the run has taken."""
        with self._lock:
            self._steering = (*self._steering, message)
            return len(self._steering)

    @property
    def running_units(self) -> dict[str, str]:
        """The research units running now: each ``task`` call id with its brief."""
        with self._lock:
            return dict(self._running_units)

    def unit_started(self, task_id: str, brief: str) -> None:
        with self._lock:
            self._running_units[task_id] = brief

    def unit_ended(self, task_id: str) -> None:
        with self._lock:
            self._running_units.pop(task_id, None)

    def drop_units(self, task_ids: list[str], message: str) -> list[str]:
        """The user's steering ``message`` dropped these running units; returns those it newly dropped."""
        with self._lock:
            dropped = [t for t in task_ids if t in self._running_units and t not in self._dropped_units]
            self._dropped_units.update(dict.fromkeys(dropped, message))
            return dropped

    def dropped_by(self, task_id: str) -> str | None:
        """The steering message that dropped the unit of this ``task`` call, if one did."""
        with self._lock:
            return self._dropped_units.get(task_id)

    def enter_budget_soft_stage(self, ceiling: Ceiling) -> bool:
        """A ceiling passed its wrap-up mark; True only the first time in the run."""
        with self._lock:
            if self._budget_soft is not None:
                return False
            self._budget_soft = ceiling
            return True

    def mark_research_started(self) -> None:
        with self._lock:
            self._research_started = True

    def mark_report_delivered(self, *, evidence_insufficient: bool = False) -> None:
        with self._lock:
            self._report_delivered = True
            self._evidence_insufficient = evidence_insufficient

    def mark_clarification_requested(self, questions: list[str]) -> None:
        with self._lock:
            self._clarification_requested = True
            self._questions = tuple(questions)

    def mark_task_halted(self, task_id: str, by: HaltedBy) -> None:
        """A guard stopped the sub-agent of this ``task`` call; the first guard to do so is kept."""
        with self._lock:
            self._halted_tasks.setdefault(task_id, by)

    def halted_by(self, task_id: str) -> HaltedBy | None:
        with self._lock:
            return self._halted_tasks.get(task_id)

    def first_notice(self, key: str) -> bool:
        """True the first time ``key`` is noticed in this run (for say-it-once messages)."""
        with self._lock:
            if key in self._notices:
                return False
            self._notices.add(key)
            return True

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                # The ledger keeps a halt by its end reason, the name every reader of the ledger knows.
                "halt": (
                    {"reason": self._halt.reason, "detail": self._halt.detail, "ceiling": self._halt.ceiling}
                    if self._halt
                    else None
                ),
                "budget_soft": self._budget_soft,
                "wrap_up_requested": self._wrap_up_requested,
                "research_started": self._research_started,
                "report_delivered": self._report_delivered,
                "clarification_requested": self._clarification_requested,
                "questions": list(self._questions),
                "steering": list(self._steering),
                "halted_tasks": dict(self._halted_tasks),
            }

    def restore(self, snapshot: dict[str, Any]) -> None:
        with self._lock:
            if (halt := snapshot.get("halt")) and self._halt is None:
                ceiling = halt.get("ceiling")
                self._halt = Halt(
                    cause=StopCause.halting(EndReason(halt["reason"])),
                    detail=halt["detail"],
                    ceiling=Ceiling(ceiling) if ceiling else None,
                )
            if (soft := snapshot.get("budget_soft")) and self._budget_soft is None:
                self._budget_soft = Ceiling(soft)
            self._wrap_up_requested |= bool(snapshot.get("wrap_up_requested"))
            self._research_started |= bool(snapshot.get("research_started"))
            self._report_delivered |= bool(snapshot.get("report_delivered"))
            if snapshot.get("clarification_requested") and not self._clarification_requested:
                self._clarification_requested = True
                self._questions = tuple(snapshot.get("questions") or ())
            if not self._steering:
                self._steering = tuple(snapshot.get("steering") or ())
            for task_id, by in (snapshot.get("halted_tasks") or {}).items():
                self._halted_tasks.setdefault(task_id, HaltedBy(by))
