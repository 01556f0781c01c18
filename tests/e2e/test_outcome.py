"""The outcome a caller can act on, through ``langgraph dev`` and the SDK: each value from one scripted run,
on the end status, on the ``usage`` event and in the thread state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testkit.agent_server import PROJECT_ROOT, AgentServer, RunResult, stream_run
from testkit.scenarios import end_of, findings_json, orchestrator, plan_and_delegate, researcher, scenario, submit
from testkit.scripted_model import call, turn
from testkit.web import ARTICLES
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

UNIT = "Find the height of the Lighthouse of Alexandria"
QUESTION = "How tall was the Lighthouse of Alexandria?"
HEIGHT_CLAIM = "The lighthouse stood over 100 metres tall [1]."
FAILING_STORE = {"path": f"{PROJECT_ROOT / 'testkit' / 'failing_store.py'}:make_store"}


def pharos(web: Any) -> str:
    return web.url(ARTICLES["pharos-lighthouse"].path)


def reads(*urls: str, cite: str) -> dict[str, Any]:
    finding = {
        "finding": "The lighthouse stood over 100 metres tall.",
        "evidence": "stood over 100 metres tall",
        "source": cite,
    }
    return researcher(
        turn(tool_calls=[call("web_fetch", url=url) for url in urls]),
        turn(content=findings_json("The lighthouse's height.", [finding])),
    )


def report(body: str, url: str) -> str:
    return f"# The Lighthouse of Alexandria\n\n{body}\n\n## Sources\n[1] The Lighthouse of Alexandria — {url}\n"


def outcome_of(run: RunResult) -> str | None:
    """The outcome, checked to be the same on the end status, the usage event and in state."""
    [usage] = run.of_type("usage")
    [end] = run.end_statuses
    assert end.get("outcome") == usage.get("outcome") == run.values.get("outcome"), (
        end,
        usage.get("outcome"),
        run.values.get("outcome"),
    )
    return end.get("outcome")


async def research(
    server: AgentServer, scripted: Any, researcher_agent: dict[str, Any], *then: dict[str, Any], **options: Any
) -> RunResult:
    scripted.set_scenario(scenario(orchestrator(plan_and_delegate(UNIT), *then, repeat_last=True), researcher_agent))
    return await stream_run(server.url, QUESTION, timeout=90, **options)


async def test_a_report_whose_every_claim_checks_out_is_answered(agent_server, scripted, web):
    url = pharos(web)
    run = await research(agent_server, scripted, reads(url, cite=url), submit(report(HEIGHT_CLAIM, url)))

    assert end_of(run) == ("done", "report_delivered")
    assert outcome_of(run) == "answered"
    assert [c["verdict"] for c in run.values["citations"]] == ["supported"]


async def test_a_report_saying_the_evidence_does_not_answer_the_question_is_insufficient_evidence(
    agent_server, scripted, web
):
    url = pharos(web)
    body = (
        "The sources read do not say when the lighthouse was destroyed, so this question cannot be answered from the evidence. "
        + HEIGHT_CLAIM
    )
    delivery = turn(tool_calls=[call("submit_report", report_markdown=report(body, url), evidence_insufficient=True)])

    run = await research(agent_server, scripted, reads(url, cite=url), delivery)

    assert end_of(run) == ("done", "report_delivered")
    assert outcome_of(run) == "insufficient_evidence"
    assert "cannot be answered from the evidence" in run.values["final_report"]


async def test_a_report_delivered_with_a_flagged_claim_is_partial(agent_server, scripted, web):
    url = pharos(web)
    invented = report("The lighthouse stood 300 metres tall [1].", url)

    run = await research(agent_server, scripted, reads(url, cite=url), submit(invented))

    assert end_of(run) == ("done", "report_delivered")
    assert "[unverified]" in run.values["final_report"]
    assert outcome_of(run) == "partial"
    assert [c["verdict"] for c in run.values["citations"]] == ["unsupported_number"]


async def test_a_page_that_could_not_be_read_makes_the_report_partial_retrieval(agent_server, scripted, web):
    url, missing = pharos(web), web.url("/articles/no-such-article")

    run = await research(agent_server, scripted, reads(url, missing, cite=url), submit(report(HEIGHT_CLAIM, url)))

    assert end_of(run) == ("done", "report_delivered")
    assert sorted((p["url"], p["ok"]) for p in run.of_type("page_fetched")) == sorted([(url, True), (missing, False)])
    assert outcome_of(run) == "partial_retrieval"


async def test_a_ceiling_that_ends_the_run_is_budget_exhausted(agent_server, scripted, web):
    url = pharos(web)
    searches = [turn(tool_calls=[call("web_search", query=f"pharos height {n}")]) for n in range(12)]

    run = await research(
        agent_server,
        scripted,
        researcher(*searches),
        submit(report(HEIGHT_CLAIM, url)),
        configurable={"max_tool_calls": 6},
    )

    assert end_of(run) == ("error", "budget_exhausted")
    assert run.of_type("report")[-1]["partial"] is True
    assert outcome_of(run) == "budget_exhausted"


async def test_a_run_that_only_asks_clarifying_questions_has_no_outcome_yet(agent_server, scripted):
    scripted.set_scenario(
        scenario(orchestrator(turn(tool_calls=[call("request_clarification", questions=["Which lighthouse?"])])))
    )

    run = await stream_run(agent_server.url, "How tall was it?", timeout=60)

    assert end_of(run) == ("done", "awaiting_clarification")
    assert outcome_of(run) is None


@pytest.fixture(scope="module")
def write_failing_server(model_server, web_server) -> Iterator[AgentServer]:
    """A second ``langgraph dev`` whose store refuses every write (reads still work)."""
    server = AgentServer(agent_env(model_server, web_server), jobs=2, store=FAILING_STORE).start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_store_that_refuses_writes_gives_recording_failed_and_the_report_is_still_delivered(
    write_failing_server, scripted, web
):
    url = pharos(web)
    decide = turn(
        tool_calls=[call("record_decision", text="Use the ancient accounts' height.", why="No modern survey exists.")]
    )
    scripted.set_scenario(
        scenario(orchestrator(decide, plan_and_delegate(UNIT), submit(report(HEIGHT_CLAIM, url))), reads(url, cite=url))
    )

    run = await stream_run(
        write_failing_server.url, QUESTION, configurable={"task": "pharos", "user_id": "carol"}, timeout=90
    )

    assert end_of(run) == ("done", "report_delivered")
    assert outcome_of(run) == "recording_failed"
    [decision] = [m for m in run.values["messages"] if m["type"] == "tool" and m["name"] == "record_decision"]
    assert "NOT recorded" in decision["content"], "a decision counts only when the write confirms"
    assert HEIGHT_CLAIM in run.values["final_report"] and len(run.of_type("report")) == 1
    assert [e["url"] for e in run.values["evidence"] if e["kind"] == "page"] == [url], (
        "the state keeps what the store could not"
    )
