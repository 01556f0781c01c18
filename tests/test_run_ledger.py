"""A live run's ledger: what one process recorded, brought back by the process that resumes the run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
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
    evidence_namespace,
    forget_ledger,
    restore_ledger,
    save_ledger,
    stored_evidence,
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
