"""A scheduled run's digest: what changed since the task's last run, at the top of its report, and the task
record that keeps each scheduled run for the Watching list."""

from __future__ import annotations

import asyncio

from langgraph.store.memory import InMemoryStore

from deep_research_agent.domain.findings import Finding, Findings
from deep_research_agent.evidence.store import HandOver
from deep_research_agent.tasks.context import TaskContext
from deep_research_agent.tasks.diff import task_diff
from deep_research_agent.tasks.digest import (
    digest_section,
    material,
    opening_with,
    readable_time,
    schedule_of,
    unchanged_report,
)
from deep_research_agent.tasks.middleware import finish_task
from deep_research_agent.tasks.store import TaskFinding, TaskRecord, TaskSource, load_task

URL = "https://farms.example/norre-bay"
GONE = "https://farms.example/old-survey"
BEFORE = TaskFinding(finding="The farm stored 1,240 tonnes of carbon.", source=URL)
REPORT = "# Norre Bay kelp\n\nThe farm stored 1,310 tonnes of carbon [1].\n\n## Sources\n[1] Norre Bay — " + URL + "\n"


def record(**changes) -> TaskRecord:
    sources = [
        TaskSource(url=u, sha256=f"sha-{u}", retrieved_at="2026-12-01T08:00:00Z", thread_id="t0", run_id="r0", evidence_id=f"e-{u}")
        for u in (URL, GONE)
    ]  # fmt: skip
    base = dict(
        name="kelp", user_id="ada", thread_id="t0", created_at="2026-12-01T08:00:00Z",
        last_run_at="2026-12-02T08:00:09Z", last_run_id="r0", last_delivered_at="2026-12-01T08:00:05Z",
        findings=[BEFORE], sources=sources,
    )  # fmt: skip
    return TaskRecord(**{**base, **changes})


def test_a_figure_that_moved_a_new_finding_and_a_source_gone_are_material_and_open_the_report():
    after = Finding(finding="The farm stored 1,310 tonnes of carbon.", source=URL)
    diff = task_diff(record(), [after], [], failed={GONE: "HTTP 404 (page not found)"})
    assert diff.previous_run_at == "2026-12-01T08:00:05Z", "compared with the last run that delivered a report"
    assert material(diff) and diff.gone_sources == [f"{GONE} (HTTP 404 (page not found))"]

    report = opening_with(REPORT, digest_section(diff))

    assert report.startswith(
        "# Norre Bay kelp\n\n## What changed since 2026-12-01 08:00 UTC\n\n**Figures that moved:**\n"
        f"- 1,240 tonnes → 1,310 tonnes ({URL})\n\n**New findings:**\n- The farm stored 1,310 tonnes of carbon.\n\n"
        f"**Sources gone:**\n- {GONE} (HTTP 404 (page not found))\n\nThe farm stored 1,310 tonnes of carbon [1]."
    )


def test_a_page_that_changed_without_changing_a_finding_is_nothing_material():
    same = Finding(finding="The farm stored 1,240 tonnes of carbon.", source=URL)
    diff = task_diff(record(), [same], [])
    assert not material(diff)
    short = unchanged_report(REPORT, digest_section(diff), "kelp")
    assert short == (
        "# Norre Bay kelp\n\n## What changed since 2026-12-01 08:00 UTC\n\n"
        "Nothing material changed: no new findings, no figure moved and no source is gone.\n"
    )
    assert unchanged_report("No title here.", digest_section(diff), "kelp").startswith("# kelp\n\n## What changed")


def test_a_report_without_a_title_opens_with_the_digest():
    assert opening_with("Plain text.", "## What changed") == "## What changed\n\nPlain text."


def test_a_run_is_scheduled_when_its_config_names_a_schedule():
    assert schedule_of({"configurable": {"schedule": " kelp  watch "}}) == "kelp watch"
    assert schedule_of({"configurable": {"task": "kelp"}}) is None
    assert readable_time("2026-12-01T08:00:05Z") == "2026-12-01 08:00 UTC" and readable_time("soon") == "soon"


def scheduled(run, store, *, previous: TaskRecord | None) -> TaskContext:
    context = TaskContext(name="kelp", user="ada", thread_id="t9", previous=previous, schedule="kelp")
    run.attachments.attach(context)
    return context


def test_each_scheduled_run_is_kept_on_the_task_with_its_headline_and_its_digest_returned(run):
    store = InMemoryStore()
    asyncio.run(store.aput(("deep_research_agent", "tasks", "ada"), "kelp", record().model_dump(mode="json")))
    scheduled(run, store, previous=asyncio.run(load_task(store, "ada", "kelp")))
    run.evidence.add_handover(
        HandOver(
            "call-1",
            "Find the carbon",
            Findings(findings=[Finding(finding="The farm stored 1,310 tonnes of carbon.", source=URL)]),
        )
    )
    run.control.mark_report_delivered()

    digest = asyncio.run(
        finish_task(store, run, {"final_report": REPORT}, run_id="r9", status="report_delivered", outcome="answered")
    )

    assert digest is not None and digest.material and not digest.failed and digest.since == "2026-12-01T08:00:05Z"
    assert digest.report_url == "/reports/t9" and digest.thread_id == "t9"
    saved = asyncio.run(load_task(store, "ada", "kelp"))
    assert saved is not None and saved.last_delivered_at == digest.finished_at
    [entry] = saved.digests
    assert entry.run_id == "r9" and entry.headline == "1 figure moved, 1 new finding since 2026-12-01 08:00 UTC"


def test_a_scheduled_run_that_failed_before_its_task_was_opened_is_still_kept_as_failed(run):
    store = InMemoryStore()
    config = {"configurable": {"task": "kelp", "schedule": "kelp", "user_id": "ada", "thread_id": "t3"}}

    digest = asyncio.run(
        finish_task(store, run, {}, run_id="r3", status="config_error", outcome=None, failed=True, config=config)
    )

    assert digest is not None and digest.failed and digest.report_url is None
    assert digest.markdown.startswith("## This run failed\n\nThe run ended with config_error")
    saved = asyncio.run(load_task(store, "ada", "kelp"))
    assert saved is not None and saved.digests[0].failed and saved.digests[0].headline == "Failed: config_error"
    assert saved.last_delivered_at == "", "a failed run is never what the next digest compares with"
    assert asyncio.run(finish_task(store, run, {}, run_id="r4", status="config_error", outcome=None)) is None
