"""The one way this product writes durable records to the LangGraph store: every write either confirms or
is kept as a recording failure of the run (``failures.py``), which ends the run's outcome as
``recording_failed`` while the report is still delivered.

Contract:
- ``record_ops(store, ops, what=..., failures=run.failures)`` writes ``ops`` in one batch and returns True
  only when the store confirmed it; any failure (no store, a namespace the store refuses, the store
  raising) is logged, kept in the run's ``failures`` under ``what`` (a short noun, e.g. "evidence texts",
  "decision") and returns False; it never raises, so a failed write never costs the run its report;
- ``note_recording_failure(failures, what, detail)`` records a failure found some other way (a write that
  returned but could not be read back);
- a run's ``RecordingLedger`` holds the writes queued without waiting for them (``remember`` with
  ``sync=false``): ``track(write)`` keeps one, ``flush(timeout_s)`` waits for all, so a run never ends with
  its entries still queued (the lifecycle calls it before the run's end status); a write still not done
  after the timeout, or one that failed (``record_failed_write``), lands in the run's ``failures``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence

from langgraph.store.base import BaseStore, PutOp, validate_op_namespace

from ..domain.names import RecordKind
from ..domain.secrets import redact
from .failures import RecordingFailure, RunFailures

logger = logging.getLogger(__name__)


def note_recording_failure(failures: RunFailures, what: str, detail: str) -> None:
    """Keep one failed write in the run's ``failures`` (and the log)."""
    logger.warning("could not record the %s: %s", what, detail)
    failures.recording_failed(what, redact(detail))


async def record_ops(store: BaseStore | None, ops: Sequence[PutOp], *, what: str, failures: RunFailures) -> bool:
    """Write ``ops`` in one batch; True only when the store confirmed every one, else the failure is in ``failures``."""
    if not ops:
        return True
    if store is None:
        note_recording_failure(failures, what, "the server provides no store")
        return False
    try:
        for op in ops:
            validate_op_namespace(op)
        await store.abatch(list(ops))
    except Exception as exc:  # noqa: BLE001 - a failed write is recorded, never raised into the run
        note_recording_failure(failures, what, f"{type(exc).__name__}: {exc}"[:300])
        return False
    return True


class RecordingLedger:
    """One run's queued durable writes; their failures go to the run's ``failures``."""

    def __init__(self, failures: RunFailures) -> None:
        self._lock = threading.Lock()
        self._pending: set[asyncio.Task[object]] = set()
        self._failures = failures

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
            self.record_failed_write(
                RecordKind.KNOWLEDGE,
                write.get_name(),
                f"not confirmed within {timeout_s:g} s of the run's end; it may still be stored later",
            )

    def record_failed_write(self, kind: RecordKind, what: str, detail: str) -> RecordingFailure:
        logger.warning("could not record the %s %s: %s", kind, what, detail)
        failure = RecordingFailure(what=f"{RecordKind(kind)} {what}", detail=redact(detail))
        self._failures.recording_failed(failure.what, failure.detail)
        return failure
