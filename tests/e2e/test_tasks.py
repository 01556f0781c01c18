"""Named, resumable tasks through ``langgraph dev`` and the SDK: a task run, a follow-up that cites a page read
earlier without fetching it again, a re-run on a changed page that reports what changed, the decisions log
and ``./run.sh tasks``."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from langgraph_sdk import get_client

from testkit.agent_server import stream_run
from testkit.scenarios import (
    FARM_AFTER,
    FARM_BEFORE,
    end_of,
    farm_report,
    message_text,
    orchestrator,
    plan_and_delegate,
    reads_farm,
    requests_of,
    scenario,
    submit,
)
from testkit.scripted_model import call, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

TASK = "kelp-watch"
USER = "alice@example.org"
DECISION = "Count only carbon stored in the seabed, not in harvested kelp."


async def task_thread(client: Any) -> str:
    """The task's thread, found by its metadata as a client does, or created with it."""
    found = await client.threads.search(metadata={"task": TASK, "user_id": USER}, limit=2)
    assert len(found) <= 1
    if found:
        return found[0]["thread_id"]
    return (await client.threads.create(metadata={"task": TASK, "user_id": USER}))["thread_id"]


def fetches(web: Any) -> int:
    return web.page_requests().count("/edited/norre-bay")


async def test_a_task_resumes_with_its_evidence_and_a_re_run_reports_what_changed(agent_server, scripted, web):
    client = get_client(url=agent_server.url)
    config = {"task": TASK, "user_id": USER}
    url = web.set_page(
        "norre-bay", title="Norre Bay kelp farm", paragraphs=[FARM_BEFORE, "The farm covers 40 hectares."]
    )

    # 1. The task's first run: a decision, one research unit, a report.
    scripted.set_scenario(scenario(
        orchestrator(turn(tool_calls=[call("record_decision", text=DECISION, why="Harvested kelp is sold and burnt.")]),
                     plan_and_delegate("Find how much carbon the Norre Bay farm stored"), submit(farm_report("1,240 tonnes", url))),
        reads_farm(url, FARM_BEFORE),
    ))  # fmt: skip
    first = await stream_run(
        client,
        "How much carbon did the Norre Bay kelp farm store?",
        configurable=config,
        thread_id=await task_thread(client),
    )

    assert end_of(first) == ("done", "report_delivered")
    assert first.end_statuses[0]["outcome"] == "answered"
    assert fetches(web) == 1
    decided = [m for m in first.values["messages"] if m["type"] == "tool" and m["name"] == "record_decision"]
    assert decided and decided[0]["content"].startswith("Decision recorded")
    [first_read] = [e["retrieved_at"] for e in first.values["evidence"] if e["url"] == url]

    # 2. A follow-up on the same task cites the page read in run 1 without fetching it again.
    scripted.set_scenario(scenario(orchestrator(
        turn(tool_calls=[call("search_decisions", query="carbon seabed")]),
        submit(farm_report("1,240 tonnes", url)),
    )))  # fmt: skip
    thread_id = await task_thread(client)
    assert thread_id == first.thread_id, "the same task name continues the same thread"
    follow_up = await stream_run(
        client, "Remind me of the stored carbon figure.", configurable=config, thread_id=thread_id
    )

    assert end_of(follow_up) == ("done", "report_delivered")
    assert fetches(web) == 1, "the follow-up read no page"
    assert [c["verdict"] for c in follow_up.values["citations"]] == ["supported"]
    assert follow_up.end_statuses[0]["outcome"] == "answered"
    [entry] = [e for e in follow_up.values["evidence"] if e["url"] == url]
    assert entry["retrieved_at"] == first_read, "the cited text is marked with when run 1 fetched it"
    asked = requests_of(scripted, "orchestrator")[0]["body"]["messages"]
    texts = [message_text(m) for m in asked]
    [view] = [t for t in texts if t.startswith("<task_view")]
    assert (
        "How much carbon did the Norre Bay kelp farm store?" in view
        and f"(read {first_read})" in view
        and DECISION in view
    )
    assert not any("Report delivered to the user." in t for t in texts), "the old transcript is not sent"
    searched = [m for m in follow_up.values["messages"] if m["type"] == "tool" and m["name"] == "search_decisions"][-1]
    assert DECISION in searched["content"]
    assert not follow_up.of_type("task_diff")

    # 3. The page changed; re-running the task researches again and says what changed.
    web.set_page("norre-bay", title="Norre Bay kelp farm", paragraphs=[FARM_AFTER, "The farm covers 40 hectares."])
    scripted.set_scenario(scenario(
        orchestrator(plan_and_delegate("Find how much carbon the Norre Bay farm stored"), submit(farm_report("1,310 tonnes", url))),
        reads_farm(url, FARM_AFTER),
    ))  # fmt: skip
    rerun = await stream_run(client, "Run the task again.", configurable=config, thread_id=await task_thread(client))

    assert end_of(rerun) == ("done", "report_delivered")
    assert fetches(web) == 2
    [diff] = rerun.of_type("task_diff")
    assert diff["task"] == TASK and diff["changed_sources"] == [url] and diff["new_sources"] == []
    assert diff["moved_figures"] == [{"source": url, "before": "1,240 tonnes", "after": "1,310 tonnes"}]
    assert diff["new_findings"] == ["The Norre Bay farm stored 1,310 tonnes of carbon in its first year."]
    final = rerun.values["final_report"]
    assert "## What changed since the last run" in final and "1,240 tonnes → 1,310 tonnes" in final
    assert rerun.of_type("report")[-1]["markdown"] == final
    assert rerun.end_statuses[0]["outcome"] == "answered"

    # 4. ./run.sh tasks lists the user's task: its name, last run, status and cost so far.
    listing = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "tasks", "--url", agent_server.url, "--user", USER],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "160", "NO_COLOR": "1"},
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    [row] = [line for line in listing.stdout.splitlines() if TASK in line]
    assert "report_delivered" in row and "answered" in row and " 3 " in row and "$" in row
    other = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "tasks", "--url", agent_server.url, "--user", "bob"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert other.returncode == 0 and TASK not in other.stdout and "No tasks" in other.stdout
