"""What a run wrote to durable records (the knowledge base): writes still in flight, and writes that failed.

Contract:
- ``track(write)`` keeps a write that was queued without waiting for it (``remember`` with ``sync=false``);
  ``flush(timeout_s)`` waits for every tracked write, so a run never ends with its entries still queued
  (the lifecycle calls it before the run's end status); a write that is still not done after the timeout
  is recorded as failed, never left silently behind;
- ``record_failed_write(kind, what, detail)`` is the single place a failed durable write is recorded; it
  never raises. ``failed_writes`` lists them in the order they failed, so the run's outcome can say that
  recording failed (``recording_failed``) while the report is still delivered.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

from ..clock import utc_now_iso
from ..names import RecordKind


@dataclass(frozen=True)
class FailedWrite:
    kind: RecordKind
    what: str
    detail: str
    at: str


class RecordingLedger:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: set[asyncio.Task[object]] = set()
        self._failed: list[FailedWrite] = []

    def track(self, write: asyncio.Task[object]) -> None:
        with self._lock:
            self._pending.add(write)
        write.add_done_callback(self._forget)

    def _forget(self, write: asyncio.Task[object]) -> None:
        with self._lock:
            self._pending.discard(write)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    async def flush(self, timeout_s: float) -> None:
        """Wait for every queued write; one still running after ``timeout_s`` is recorded as failed."""
        with self._lock:
            pending = list(self._pending)
        if not pending:
            return
        # A tracked write records its own failure; here only the wait matters.
        _, late = await asyncio.wait(pending, timeout=timeout_s)
        for write in late:
            self.record_failed_write(RecordKind.KNOWLEDGE, write.get_name(), f"not confirmed within {timeout_s:g} s of the run's end; it may still be stored later")

    def record_failed_write(self, kind: RecordKind, what: str, detail: str) -> FailedWrite:
        failure = FailedWrite(kind=RecordKind(kind), what=what, detail=detail, at=utc_now_iso())
        with self._lock:
            self._failed.append(failure)
        return failure

    @property
    def failed_writes(self) -> list[FailedWrite]:
        with self._lock:
            return list(self._failed)
