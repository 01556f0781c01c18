"""A live run's ledger: what one process recorded, brought back by the process that resumes the run."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph.store.base import Op, PutOp
from langgraph.store.memory import InMemoryStore

from deep_research_agent.domain.findings import Finding, Findings
from deep_research_agent.domain.names import Ceiling, HaltedBy
from deep_research_agent.domain.stops import StopCause
from deep_research_agent.domain.usage import RoleUsage
from deep_research_agent.evidence.store import HandOver
from deep_research_agent.extensions.skills import SkillsApplied
from deep_research_agent.run import (
    LEDGER_NAMESPACE,
    Halt,
    Run,
    archive_evidence,
    evidence_namespace,
    forget_ledger,
    restore_ledger,
    save_ledger,
    stored_evidence,
    unsaved_records,
)
from deep_research_agent.run.ledger import SavedTexts

pytestmark = pytest.mark.anyio

THREAD = "thread-1"


def worked_run() -> Run:
    """A run some minutes in: a page read, a unit handed over, calls counted, a wrap-up requested."""
    run = Run(key="run-1", started_at=(datetime.now(UTC) - timedelta(minutes=3)).isoformat())
    run.evidence.add_source("https://example.org/sodium", "Sodium cells")
    run.evidence.add_evidence(
        url="https://example.org/sodium",
        title="Sodium cells",
        kind="page",
        text="412 Wh/kg " * 50,
        agent="research-subagent",
    )
    run.evidence.add_evidence(
        url="https://example.org/lithium",
        title="Lithium",
        kind="search_result",
        text="Lithium costs more.",
        agent="research-subagent",
    )
    findings = Findings(
        summary="Dense.",
        findings=[Finding(finding="412 Wh/kg", evidence="412 Wh/kg", source="https://example.org/sodium")],
    )
    run.evidence.add_handover(HandOver(task_id="call-1", unit="Find density", findings=findings))
    run.usage.count_model_call("orchestrator", None, RoleUsage(input_tokens=1000, output_tokens=100, cost_usd=0.01))
    run.usage.count_model_call("research-subagent", "call-1", RoleUsage(input_tokens=500, output_tokens=50))
    run.usage.count_tool_call("research-subagent", "call-1")
    run.control.mark_research_started()
    run.control.request_wrap_up()
    run.control.enter_budget_soft_stage(Ceiling.TOOL_CALLS)
    run.control.mark_task_halted("call-1", HaltedBy.BUDGET)
    run.attachments.setdefault(SkillsApplied, SkillsApplied).names.add("cited-table")
    return run


async def test_a_resuming_process_gets_the_run_time_usage_texts_findings_and_signals_recorded_before():
    store, before = InMemoryStore(), worked_run()
    await save_ledger(store, before, thread_id=THREAD)

    after = Run(key="run-1")
    assert await restore_ledger(store, after, thread_id=THREAD)

    assert after.started_at == before.started_at and after.elapsed_s >= 180
    assert after.usage.totals() == before.usage.totals()
    assert after.usage.of_task("call-1") == before.usage.of_task("call-1")
    assert after.evidence.records() == before.evidence.records()
    assert after.evidence.sources() == before.evidence.sources()
    assert after.evidence.handovers() == before.evidence.handovers()
    assert after.control.wrap_up_requested and after.control.research_started
    assert after.control.budget_soft == Ceiling.TOOL_CALLS and after.control.halted_by("call-1") == HaltedBy.BUDGET
    assert (skills := after.attachments.get(SkillsApplied)) is not None and skills.names == {"cited-table"}
    record = after.evidence.add_evidence(
        url="https://example.org/new", title="New", kind="page", text="new", agent="research-subagent"
    )
    assert record.id == "ev3", "numbering restarted after the resume"


async def test_texts_are_saved_once_where_the_finished_runs_archive_lives():
    store, run = InMemoryStore(), worked_run()
    await save_ledger(store, run, thread_id=THREAD)
    await save_ledger(store, run, thread_id=THREAD)

    stored = await stored_evidence(store, THREAD, run.key)
    assert [r["id"] for r in stored] == ["ev1", "ev2"] and stored[0]["text"].startswith("412 Wh/kg")
    assert (saved := run.attachments.get(SavedTexts)) is not None and saved.ids == {"ev1", "ev2"}
    assert (
        await store.asearch(evidence_namespace(THREAD, run.key))
        and len(await store.asearch(evidence_namespace(THREAD, run.key))) == 2
    )


async def test_a_halt_survives_the_resume_and_a_unit_redone_after_it_counts_once():
    store, before = InMemoryStore(), worked_run()
    before.control.halt_run(Halt(cause=StopCause.USER, detail="the user asked the run to stop"))
    await save_ledger(store, before, thread_id=THREAD)

    after = Run(key="run-1")
    await restore_ledger(store, after, thread_id=THREAD)
    after.evidence.add_handover(HandOver(task_id="call-1", unit="Find density", findings=Findings(summary="Redone.")))

    assert after.control.halt == before.control.halt
    assert [h.findings.summary for h in after.evidence.handovers()] == ["Redone."]


async def test_a_run_without_a_ledger_starts_fresh_and_an_ended_run_leaves_none():
    store, run = InMemoryStore(), worked_run()
    assert not await restore_ledger(store, Run(key="run-1"), thread_id=THREAD)

    await save_ledger(store, run, thread_id=THREAD)
    await forget_ledger(store, run)

    assert await store.aget(LEDGER_NAMESPACE, run.key) is None
    assert len(await stored_evidence(store, THREAD, run.key)) == 2, "the texts are the archive and stay"


class CountingStore(InMemoryStore):
    """An in-memory store that keeps every batch of puts it was sent, and refuses them while ``refusing``."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[list[PutOp]] = []
        self.refusing = False

    async def abatch(self, ops: Iterable[Op]) -> list[Any]:
        ops = list(ops)
        if puts := [op for op in ops if isinstance(op, PutOp)]:
            if self.refusing:
                raise ConnectionError("the store is away")
            self.puts.append(puts)
        return await super().abatch(ops)


def ledger_puts(store: CountingStore) -> int:
    return sum(op.namespace == LEDGER_NAMESPACE for batch in store.puts for op in batch)


async def test_a_save_that_would_change_nothing_writes_nothing_and_the_next_change_is_saved():
    store, run = CountingStore(), worked_run()
    await save_ledger(store, run, thread_id=THREAD)
    await save_ledger(store, run, thread_id=THREAD)  # a tool call that changed nothing the ledger keeps
    assert len(store.puts) == 1

    run.usage.count_model_call("orchestrator", None, RoleUsage(input_tokens=10, output_tokens=1))
    await save_ledger(store, run, thread_id=THREAD)

    assert len(store.puts) == 2 and ledger_puts(store) == 2
    assert not any(op.namespace != LEDGER_NAMESPACE for op in store.puts[1]), "a text was written twice"
    resumed = Run(key="run-1")
    assert await restore_ledger(store, resumed, thread_id=THREAD)
    assert resumed.usage.totals() == run.usage.totals(), "the resumed run lost the last model call"


async def test_a_save_the_store_refused_is_made_again_at_the_next_call_even_if_nothing_changed_since():
    store, run = CountingStore(), worked_run()
    store.refusing = True
    await save_ledger(store, run, thread_id=THREAD)
    store.refusing = False
    await save_ledger(store, run, thread_id=THREAD)

    assert ledger_puts(store) == 1 and len(await stored_evidence(store, THREAD, run.key)) == 2
    assert await restore_ledger(store, Run(key="run-1"), thread_id=THREAD)


async def test_a_stopped_runs_end_archives_only_the_texts_no_save_wrote_and_keeps_every_text():
    store, run = CountingStore(), worked_run()
    await save_ledger(store, run, thread_id=THREAD)
    run.evidence.add_evidence(
        url="https://example.org/late", title="Late", kind="page", text="Read after the last save.", agent="r"
    )
    run.control.halt_run(Halt(cause=StopCause.USER, detail="the user asked the run to stop"))

    late = unsaved_records(run, run.evidence.own_records())
    await archive_evidence(store, thread_id=THREAD, run_id=run.key, records=late, failures=run.failures)
    await forget_ledger(store, run)

    assert [record.id for record in late] == ["ev3"]
    written = [op.key for batch in store.puts for op in batch if op.namespace == evidence_namespace(THREAD, run.key)]
    assert written == ["ev1", "ev2", "ev3"], "each text is written once"
    stored = await stored_evidence(store, THREAD, run.key)
    assert [r["id"] for r in stored] == ["ev1", "ev2", "ev3"] and stored[2]["text"] == "Read after the last save."
