"""A live run's ledger in the LangGraph store, so the process that resumes a run goes on where the dead one stopped.

A server that hands a run on (Aegra's lease reaper, after the worker running it died) resumes it from
its last checkpoint in another process, whose run stores start empty. Without this, that run would report
only the usage and run time after the resume, and the texts and findings gathered before it would no
longer be citable.

Contract:
- ``save_ledger`` writes, in one batch, each evidence text not yet saved (one item per evidence id under
  ``evidence_namespace(thread_id, run_id)``, the namespace ``archive.py`` fills at the end, so the end
  writes nothing new twice) and one item under ``LEDGER_NAMESPACE`` keyed by the run id: the start time,
  the usage, sources, hand-overs, citations, control signals, and each attachment whose type a feature
  registered with ``@kept_in_ledger`` (the skills applied). The lifecycle calls it at
  the end of each of the orchestrator's model and tool calls, before the result reaches the checkpoint, so
  the ledger is never behind the checkpoint it resumes from (a planning call whose step was checkpointed
  before any of its tool calls ended is counted after the resume) (a call of a step with parallel calls is
  checkpointed on its own, as a pending write, so saves cannot wait for the step's end). A save that would
  write what the store already holds (no new text, the same ledger item) writes nothing;
- ``unsaved_records`` are the records whose texts no save wrote yet: what the run's archive still has to
  write at its end (``archive.py``), so a text is written once per run;
- ``restore_ledger`` reads both back into a fresh run in the resuming process, before that process
  records anything: the run time counts from the original start, the usage from what was spent before,
  and hand-overs, sources and texts are there for the report's citation checks. Work in flight at the
  crash is redone and counted again, as it was spent again;
- ``forget_ledger`` deletes the ledger item when the run ends (the texts stay: they are the archive);
- a run that pauses for the user (an interrupt: the plan review) ends its server run there, and the answer
  resumes the thread as a run of its own, with a new run id: ``keep_paused_usage`` keeps what the paused run
  spent under the thread (``PAUSED_NAMESPACE``, and forgets its ledger), and ``adopt_paused_usage`` adds it to
  the run that resumes the thread, once, so that run's usage counts the calls before the pause (the one
  that proposed the plan). Only usage: the run time of the resumed run starts at the resume, since the
  wait for the user is no research time and must not use up ``max_run_seconds``;
- a store that fails is logged and the run goes on; a run without a store or a thread keeps no ledger.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from langgraph.store.base import BaseStore, Item, PutOp

from ..evidence.store import EvidenceRecord
from .archive import evidence_namespace, evidence_record, evidence_summary

if TYPE_CHECKING:
    from .registry import Run

logger = logging.getLogger(__name__)

LEDGER_NAMESPACE = ("deep_research_agent", "ledgers")
# What a run paused for the user had spent, keyed by thread id, for the run that resumes the thread.
PAUSED_NAMESPACE = ("deep_research_agent", "paused_usage")
_PAGE = 100


@dataclass
class SavedTexts:
    """The ledger's attachment to a run: the evidence ids whose texts the store already holds, and the
    digest of the ledger item it holds (None before the first save)."""

    ids: set[str] = field(default_factory=set)
    digest: str | None = None


class LedgerPart(Protocol):
    """A feature's per-run attachment that the ledger keeps too, under ``LEDGER_KEY``.

    Its type makes an empty one with no arguments; ``snapshot()`` is what the ledger stores (JSON), and
    ``restore(value)`` adds a stored snapshot to it in the process that resumes the run."""

    LEDGER_KEY: ClassVar[str]

    def __init__(self) -> None: ...

    def snapshot(self) -> Any: ...

    def restore(self, value: Any) -> None: ...


P = TypeVar("P", bound=type[LedgerPart])
_parts: list[type[LedgerPart]] = []


def kept_in_ledger(kind: P) -> P:
    """Class decorator: a run's attachment of type ``kind`` is saved with the run's ledger and restored with it."""
    if kind not in _parts:
        _parts.append(kind)
    return kind


async def save_ledger(store: BaseStore | None, run: Run, *, thread_id: str | None) -> None:
    if store is None or not thread_id:
        return
    saved = run.attachments.setdefault(SavedTexts, SavedTexts)
    records = unsaved_records(run, run.evidence.records())
    # Adopted texts are kept under this run too, so a resume restores them, marked so that the thread's
    # archive lists each text once, under the run that read it (``archive.stored_evidence``).
    own = {record.id for record in run.evidence.own_records()}
    texts = [
        PutOp(
            evidence_namespace(thread_id, run.key),
            r.id,
            {**evidence_summary(r), "text": r.text, **({} if r.id in own else {"adopted": True})},
            index=False,
        )
        for r in records
    ]
    value = {
        "started_at": run.started_at,
        "usage": run.usage.snapshot(),
        "evidence": run.evidence.snapshot(),
        "control": run.control.snapshot(),
        **{kind.LEDGER_KEY: (run.attachments.get(kind) or kind()).snapshot() for kind in _parts},
    }
    digest = hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()
    if not texts and digest == saved.digest:
        return
    try:
        await store.abatch([*texts, PutOp(LEDGER_NAMESPACE, run.key, value, index=False)])
    except Exception:  # noqa: BLE001 - a missed save costs a resumed run its earlier work, never this run
        logger.warning("could not save the ledger of run %s", run.key, exc_info=True)
        return
    saved.ids.update(record.id for record in records)
    saved.digest = digest


def unsaved_records(run: Run, records: Sequence[EvidenceRecord]) -> list[EvidenceRecord]:
    """Those of ``records`` whose texts no ledger save of the run (in this process or before a resume) wrote."""
    saved = run.attachments.get(SavedTexts)
    return list(records) if saved is None else [record for record in records if record.id not in saved.ids]


async def restore_ledger(store: BaseStore | None, run: Run, *, thread_id: str | None) -> bool:
    """Load the run's ledger into ``run``; True when there was one."""
    if store is None or not thread_id:
        return False
    try:
        item = await store.aget(LEDGER_NAMESPACE, run.key)
        if item is None:
            return False
        texts = await _texts(store, thread_id, run.key)
    except Exception:  # noqa: BLE001 - the run goes on with what this process sees
        logger.warning("could not read the ledger of run %s", run.key, exc_info=True)
        return False
    value: dict[str, Any] = item.value
    if started_at := value.get("started_at"):
        run.started_at = started_at
        run.started_monotonic = time.monotonic() - _seconds_since(started_at)
    run.usage.restore(value.get("usage") or {})
    run.evidence.restore(value.get("evidence") or {}, texts)
    run.control.restore(value.get("control") or {})
    for kind in _parts:
        if kind.LEDGER_KEY in value:
            run.attachments.setdefault(kind, kind).restore(value[kind.LEDGER_KEY])
    run.attachments.setdefault(SavedTexts, SavedTexts).ids.update(record.id for record in texts)
    return True


async def forget_ledger(store: BaseStore | None, run: Run) -> None:
    if store is None:
        return
    try:
        await store.adelete(LEDGER_NAMESPACE, run.key)
    except Exception:  # noqa: BLE001 - a leftover ledger is only read by a resume of this run
        logger.warning("could not delete the ledger of run %s", run.key, exc_info=True)


async def keep_paused_usage(store: BaseStore | None, run: Run, *, thread_id: str | None) -> None:
    """Keep what ``run``, paused for the user, spent, for the run that resumes ``thread_id``."""
    if store is None or not thread_id:
        return
    try:
        await store.aput(PAUSED_NAMESPACE, thread_id, {"run_id": run.key, "usage": run.usage.snapshot()}, index=False)
    except Exception:  # noqa: BLE001 - a missed save costs the resumed run's usage the calls before the pause
        logger.warning("could not keep the usage of paused run %s", run.key, exc_info=True)
    await forget_ledger(store, run)


async def adopt_paused_usage(store: BaseStore | None, run: Run, *, thread_id: str | None) -> bool:
    """Add what the run paused on ``thread_id`` spent to ``run``, which resumes it; True when there was some."""
    if store is None or not thread_id:
        return False
    try:
        item = await store.aget(PAUSED_NAMESPACE, thread_id)
        if item is None or item.value.get("run_id") == run.key:
            return False
        await store.adelete(PAUSED_NAMESPACE, thread_id)
    except Exception:  # noqa: BLE001 - the run goes on counting from the resume
        logger.warning("could not read the usage paused on thread %s", thread_id, exc_info=True)
        return False
    run.usage.restore(item.value.get("usage") or {})
    return True


async def _texts(store: BaseStore, thread_id: str, run_id: str) -> list[EvidenceRecord]:
    namespace = evidence_namespace(thread_id, run_id)
    items: list[Item] = []
    while True:
        page = await store.asearch(namespace, limit=_PAGE, offset=len(items))
        items += page
        if len(page) < _PAGE:
            break
    return [evidence_record(item.value) for item in items if item.namespace == namespace]


def _seconds_since(iso: str) -> float:
    try:
        started = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return max(0.0, (datetime.now(UTC) - started).total_seconds())
