"""Evidence storage: the thread state keeps summaries, the LangGraph store keeps the texts, the route serves them."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore
from starlette.testclient import TestClient

from deep_research_agent.evidence.store import EvidenceRecord, EvidenceStore
from deep_research_agent.routes import make_app
from deep_research_agent.run import (
    EVIDENCE_NAMESPACE,
    archive_evidence,
    evidence_namespace,
    evidence_summaries,
    stored_evidence,
)
from deep_research_agent.run.failures import RunFailures

pytestmark = pytest.mark.anyio

PAGE = "The Halvorsen cell reached an energy density of 412 Wh/kg in independent tests. " * 600


def records(*texts: str) -> list[EvidenceRecord]:
    store = EvidenceStore()
    for n, text in enumerate(texts, start=1):
        store.add_evidence(
            url=f"https://example.org/{n}", title=f"Page {n}", kind="page", text=text, agent="research-subagent"
        )
    return store.records()


def test_a_state_entry_is_the_record_without_its_text_and_with_its_length() -> None:
    [record] = records(PAGE)

    [entry] = evidence_summaries([record])

    assert entry == {
        "id": "ev1",
        "url": "https://example.org/1",
        "title": "Page 1",
        "kind": "page",
        "retrieved_at": record.retrieved_at,
        "agent": "research-subagent",
        "sha256": hashlib.sha256(PAGE.encode()).hexdigest(),
        "chars": len(PAGE),
    }


async def test_a_run_s_texts_are_stored_whole_in_one_batch_under_its_thread_and_run() -> None:
    class CountingStore(InMemoryStore):
        batches = 0

        async def abatch(self, ops: Any) -> Any:
            self.batches += 1
            return await super().abatch(ops)

    store = CountingStore()
    run_records = records(PAGE, "A search result.")

    await archive_evidence(store, thread_id="t1", run_id="r1", records=run_records, failures=RunFailures())

    assert store.batches == 1
    assert evidence_namespace("t1", "r1") == (*EVIDENCE_NAMESPACE, "t1", "r1")
    item = await store.aget(evidence_namespace("t1", "r1"), "ev1")
    assert item is not None and item.value == {**evidence_summaries(run_records)[0], "text": PAGE}
    assert [r["text"] for r in await stored_evidence(store, "t1", "r1")] == [PAGE, "A search result."]


async def test_a_thread_s_records_come_back_run_by_run_in_retrieval_order_across_pages_of_the_store() -> None:
    store = InMemoryStore()
    first = records(*(f"text {n}" for n in range(1, 131)))
    second = records("later run")
    await archive_evidence(store, thread_id="t1", run_id="r1", records=first, failures=RunFailures())
    await archive_evidence(store, thread_id="t1", run_id="r2", records=second, failures=RunFailures())
    await archive_evidence(
        store, thread_id="t2", run_id="r3", records=records("another thread"), failures=RunFailures()
    )

    found = await stored_evidence(store, "t1")

    assert [(r["run_id"], r["id"]) for r in found] == [("r1", f"ev{n}") for n in range(1, 131)] + [("r2", "ev1")]
    assert [r["text"] for r in await stored_evidence(store, "t1", "r2")] == ["later run"]
    assert await stored_evidence(store, "t1", "r9") == []


async def test_without_a_store_or_a_thread_nothing_is_kept_and_nothing_fails() -> None:
    await archive_evidence(None, thread_id="t1", run_id="r1", records=records(PAGE), failures=RunFailures())
    store = InMemoryStore()

    await archive_evidence(store, thread_id=None, run_id="r1", records=records(PAGE), failures=RunFailures())

    assert await store.asearch(EVIDENCE_NAMESPACE) == []


async def test_ids_that_cannot_name_a_namespace_keep_nothing_and_the_run_records_a_recording_failure(
    caplog, run
) -> None:
    store = InMemoryStore()

    with caplog.at_level(logging.WARNING):
        await archive_evidence(store, thread_id="my.thread", run_id="r1", records=records(PAGE), failures=run.failures)

    assert await store.asearch(EVIDENCE_NAMESPACE) == []
    assert "could not record the evidence texts" in caplog.text
    [failure] = run.failures.recording()
    assert failure.what == "evidence texts" and "InvalidNamespaceError" in failure.detail


async def test_a_failing_store_is_a_recording_failure_and_the_run_goes_on(caplog, run) -> None:
    class BrokenStore(InMemoryStore):
        async def abatch(self, ops: Any) -> Any:
            raise ConnectionError("store is down")

    with caplog.at_level(logging.WARNING):
        await archive_evidence(BrokenStore(), thread_id="t1", run_id="r1", records=records(PAGE), failures=run.failures)

    assert "could not record the evidence texts: ConnectionError: store is down" in caplog.text
    assert [f.what for f in run.failures.recording()] == ["evidence texts"]


@pytest.fixture
def served() -> tuple[InMemoryStore, TestClient]:
    store = InMemoryStore()
    return store, TestClient(make_app(lambda: store))


async def test_the_route_serves_a_thread_s_records_and_one_run_s(served) -> None:
    store, client = served
    await archive_evidence(store, thread_id="t1", run_id="r1", records=records(PAGE), failures=RunFailures())
    await archive_evidence(store, thread_id="t1", run_id="r2", records=records("later run"), failures=RunFailures())

    thread = client.get("/evidence/t1")
    run = client.get("/evidence/t1/r2")

    assert thread.status_code == 200 and [(r["run_id"], r["text"]) for r in thread.json()] == [
        ("r1", PAGE),
        ("r2", "later run"),
    ]
    assert run.status_code == 200 and [r["text"] for r in run.json()] == ["later run"]


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("/evidence/t1", "No evidence is stored for thread t1."),
        ("/evidence/t1/r1", "No evidence is stored for run r1 of thread t1."),
        ("/evidence/my.thread", "No evidence is stored for thread my.thread."),
    ],
)
def test_the_route_answers_404_with_a_detail_when_nothing_is_stored(served, path: str, detail: str) -> None:
    _, client = served

    answer = client.get(path)

    assert answer.status_code == 404 and answer.json() == {"detail": detail}
