"""The one way this product writes to the LangGraph store: every write either confirms or is recorded as a
recording failure of the run, which ends the run's outcome as ``recording_failed``.

Contract:
- ``record_ops(store, ops, what=...)`` writes ``ops`` in one batch and returns True only when the store
  confirmed it; any failure (no store, a namespace the store refuses, the store raising) is logged, kept
  in the run's ``failures`` under ``what`` (a short noun, e.g. "evidence texts", "decision") and
  returns False; it never raises, so a failed write never costs the run its report;
- ``note_recording_failure(what, detail)`` records a failure found some other way (a write that returned
  but could not be read back); every store writer goes through one of the two.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from langgraph.store.base import BaseStore, PutOp, validate_op_namespace

from ..protocol.secrets import redact
from .registry import NoRunError, current_run

logger = logging.getLogger(__name__)


def note_recording_failure(what: str, detail: str) -> None:
    """Keep one failed write in the current run's failures (nowhere, outside a run: the log has it)."""
    logger.warning("could not record the %s: %s", what, detail)
    try:
        current_run().failures.recording_failed(what, redact(detail))
    except NoRunError:
        pass


async def record_ops(store: BaseStore | None, ops: Sequence[PutOp], *, what: str) -> bool:
    """Write ``ops`` in one batch; True only when the store confirmed every one."""
    if not ops:
        return True
    if store is None:
        note_recording_failure(what, "the server provides no store")
        return False
    try:
        for op in ops:
            validate_op_namespace(op)
        await store.abatch(list(ops))
    except Exception as exc:  # noqa: BLE001 - a failed write is recorded, never raised into the run
        note_recording_failure(what, f"{type(exc).__name__}: {exc}"[:300])
        return False
    return True
