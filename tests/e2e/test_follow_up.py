"""Follow-ups on a finished thread, through ``langgraph dev`` and the SDK: the pages the earlier run read are
the follow-up's evidence, cited and checked without fetching them again; only a gap is researched anew."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import get_client

from testkit.agent_server import RunResult, stream_run
from testkit.scenarios import (
    end_of,
    findings_json,
    orchestrator,
    plan_and_delegate,
    researcher,
    scenario,
    submit,
)
from testkit.scripted_model import call, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CAPACITY = "The Tidewater plant stores 300 megawatt-hours of heat in molten salt."
COST = "The Tidewater plant cost 410 million euros to build."


def reads(url: str, finding: str, quote: str) -> dict[str, Any]:
    """A research sub-agent that reads one page and hands back one quoted finding."""
    return researcher(
        turn(tool_calls=[call("web_fetch", url=url)]),
        turn(content=findings_json(finding, [{"finding": finding, "evidence": quote, "source": url}])),
    )


def earlier_turns(run: RunResult) -> list[dict[str, Any]]:
    """Turns the scripted orchestrator never plays: it counts the thread's earlier replies as turns played."""
    replies = [m for m in run.values["messages"] if m["type"] == "ai" and m.get("name") != "dra_deliverable"]
    return [turn(content="(an earlier turn)")] * len(replies)


async def first_run(agent_server, scripted, web) -> tuple[RunResult, str]:
    url = web.set_page("tidewater", title="Tidewater heat storage", paragraphs=[CAPACITY, "It opened in 2025."])
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the storage capacity of the Tidewater plant"),
                submit(
                    f"# Tidewater\n\nThe Tidewater plant stores 300 megawatt-hours of heat [1].\n\n## Sources\n[1] {url}\n"
                ),
            ),
            reads(url, "The plant stores 300 megawatt-hours of heat.", "300 megawatt-hours"),
        )
    )
    run = await stream_run(get_client(url=agent_server.url), "How much heat can the Tidewater plant store?")
    assert end_of(run) == ("done", "report_delivered")
    assert web.page_requests().count("/edited/tidewater") == 1
    return run, url


async def test_a_follow_up_the_earlier_evidence_answers_fetches_nothing_and_cites_the_earlier_source(
    agent_server, scripted, web
):
    first, url = await first_run(agent_server, scripted, web)
    pages_before, searches_before = len(web.page_requests()), len(web.tavily_requests())
    answer = (
        "# Tidewater capacity\n\nFrom the earlier research: the Tidewater plant stores 300 megawatt-hours of heat "
        f"in molten salt [1].\n\n## Sources\n[1] {url}\n"
    )
    scripted.set_scenario(scenario(orchestrator(*earlier_turns(first), submit(answer))))

    follow_up = await stream_run(
        get_client(url=agent_server.url), "What does it store the heat in?", thread_id=first.thread_id
    )

    assert end_of(follow_up) == ("done", "report_delivered")
    assert len(web.page_requests()) == pages_before and len(web.tavily_requests()) == searches_before, (
        "the follow-up fetched or searched again"
    )
    assert [c["verdict"] for c in follow_up.values["citations"]] == ["supported"], "the claim was not checked"
    [earlier] = [e for e in first.values["evidence"] if e["url"] == url]
    [cited] = [e for e in follow_up.values["evidence"] if e["url"] == url]
    assert cited["retrieved_at"] == earlier["retrieved_at"], "the cited text is marked with when run 1 read it"
    assert cited["agent"] == f"earlier:{first.run_id}"
    assert not follow_up.statuses("subagent_start"), "a research unit started for a question already answered"


async def test_a_follow_up_the_evidence_cannot_answer_researches_only_the_gap(agent_server, scripted, web):
    first, url = await first_run(agent_server, scripted, web)
    cost_url = web.set_page("tidewater-cost", title="Tidewater cost", paragraphs=[COST])
    answer = (
        "# Tidewater capacity and cost\n\nFrom the earlier research: the plant stores 300 megawatt-hours of heat "
        f"[1]. From new research: it cost 410 million euros to build [2].\n\n## Sources\n[1] {url}\n[2] {cost_url}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(
                *earlier_turns(first), plan_and_delegate("Find what the Tidewater plant cost"), submit(answer)
            ),
            reads(cost_url, "The plant cost 410 million euros.", "410 million euros"),
        )
    )

    follow_up = await stream_run(
        get_client(url=agent_server.url), "How much heat, and what did it cost?", thread_id=first.thread_id
    )

    assert end_of(follow_up) == ("done", "report_delivered")
    assert [f["unit"] for f in follow_up.of_type("subagent_findings")] == ["Find what the Tidewater plant cost"]
    assert web.page_requests().count("/edited/tidewater") == 1, "the earlier page was fetched again"
    assert web.page_requests().count("/edited/tidewater-cost") == 1
    assert [c["verdict"] for c in follow_up.values["citations"]] == ["supported", "supported"]
