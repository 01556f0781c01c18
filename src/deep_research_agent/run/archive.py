"""Where a finished run's evidence texts live: the LangGraph store, not the thread state.

Why: the thread state is what every client reads, in the final ``values`` event, on every state poll and
in every checkpoint; twenty article pages are about a megabyte each time. So the state keeps one short
entry per evidence record (``evidence_summaries``) and the full texts are written once, at the end of the
run, to the store (``archive_evidence``), where a client reads them when it wants them (``stored_evidence``,
served by ``routes.py`` as ``GET /evidence/{thread_id}[/{run_id}]``).

Contract:
- a state entry is ``id, url, title, kind, retrieved_at, agent, sha256, chars``: no text, ``chars`` its
  length, ``sha256`` the hex digest of its UTF-8 bytes, so a client can check a text it reads back; a
  corpus passage (``kind: corpus``) adds ``corpus``: ``{name, path, anchor, page, file_sha256}``;
- the texts of one run are stored under ``evidence_namespace(thread_id, run_id)``, one item per evidence id
  (the key), whose value is the state entry plus ``text``; all in one batch, not indexed for search;
- a run with no store (the graph run in-process without one) or without a thread id keeps nothing; a
  write that fails (ids that cannot name a store namespace, the store raising) is a recording failure of the run (``run/recording.py``) and the run
  ends as usual, with its report;
- ``stored_evidence`` returns a thread's records (or one run's), each with its ``run_id``, in the order
  the runs stored them and, within a run, the order the run retrieved them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import BaseStore, Item, PutOp

from ..evidence.store import CorpusLocation, EvidenceRecord
from .failures import RunFailures
from .recording import record_ops

EVIDENCE_NAMESPACE = ("deep_research_agent", "evidence")
_PAGE = 100


def evidence_namespace(thread_id: str, run_id: str | None = None) -> tuple[str, ...]:
    """The store namespace of one run's texts, or with no ``run_id`` the prefix of all a thread's runs."""
    return (*EVIDENCE_NAMESPACE, thread_id, *([run_id] if run_id else []))


def evidence_summary(record: EvidenceRecord) -> dict[str, Any]:
    """What the thread state keeps of one record: everything but the text, and the text's length."""
    summary: dict[str, Any] = {
        "id": record.id,
        "url": record.url,
        "title": record.title,
        "kind": record.kind,
        "retrieved_at": record.retrieved_at,
        "agent": record.agent,
        "sha256": record.sha256,
        "chars": len(record.text),
    }
    if record.backend:
        summary["backend"] = record.backend
    if record.location is not None:
        where = record.location
        summary["corpus"] = {
            "name": where.corpus,
            "path": where.path,
            "anchor": where.anchor,
            "page": where.page,
            "file_sha256": where.file_sha256,
        }
    return summary


def evidence_record(value: dict[str, Any]) -> EvidenceRecord:
    """The record a stored item (``evidence_summary`` plus ``text``) was written from."""
    where = value.get("corpus")
    location = (
        CorpusLocation(
            corpus=where["name"],
            path=where["path"],
            anchor=where.get("anchor"),
            page=where.get("page"),
            file_sha256=where["file_sha256"],
        )
        if where
        else None
    )
    fields = ("id", "url", "title", "kind", "retrieved_at", "agent", "sha256", "text")
    return EvidenceRecord(
        **{name: value[name] for name in fields}, location=location, backend=str(value.get("backend") or "")
    )


def evidence_summaries(records: Sequence[EvidenceRecord]) -> list[dict[str, Any]]:
    return [evidence_summary(record) for record in records]


async def archive_evidence(
    store: BaseStore | None,
    *,
    thread_id: str | None,
    run_id: str,
    records: Sequence[EvidenceRecord],
    failures: RunFailures,
) -> None:
    """Write the run's full records to ``store`` in one batch (a failed write lands in the run's ``failures``);
    keeps nothing without a store or a thread."""
    if store is None or not thread_id or not records:
        return
    namespace = evidence_namespace(thread_id, run_id)
    ops = [
        PutOp(namespace, record.id, {**evidence_summary(record), "text": record.text}, index=False)
        for record in records
    ]
    await record_ops(store, ops, what="evidence texts", failures=failures)


async def stored_evidence(
    store: BaseStore, thread_id: str, run_id: str | None = None, *, adopted: bool = True
) -> list[dict[str, Any]]:
    """A thread's stored records (or one run's), each with its ``run_id``; empty when there are none. With
    ``adopted=False``, each text once, under the run that read it: the copies later runs adopted are left out.

    Raises ``InvalidNamespaceError`` for an id that cannot name a namespace (nothing can be stored there).
    """
    prefix = evidence_namespace(thread_id, run_id)
    items: list[Item] = []
    while True:
        page = await store.asearch(prefix, limit=_PAGE, offset=len(items))
        items += page
        if len(page) < _PAGE:
            break
    # A store may give the items of one batch the same time; ids are "ev<n>", so length then text is
    # their numeric order.
    items.sort(key=lambda item: (item.created_at, len(item.key), item.key))
    return [{"run_id": item.namespace[-1], **item.value} for item in items if adopted or not item.value.get("adopted")]
