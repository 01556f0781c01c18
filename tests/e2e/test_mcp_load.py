"""MCP load and credentials through ``langgraph dev``, against a tiny MCP server of our own
(``testkit/mcp_stand_in.py``) that answers 429, hangs on demand and counts calls in flight."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.agent_server import stream_run
from testkit.scenarios import (
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    scenario,
    submit,
)
from testkit.scripted_model import call, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def researcher_calls(*calls: dict[str, Any]) -> dict[str, Any]:
    """A run whose one research sub-agent makes ``calls`` in parallel, then hands back nothing."""
    return scenario(
        orchestrator(plan_and_delegate("Query the stand-in"), submit("# Stand-in\n\nQueried.\n\n## Sources\n")),
        researcher(turn(tool_calls=list(calls)), turn(content=findings_json("Queried."))),
    )


def servers(stand_in: Any, **extra: Any) -> dict[str, Any]:
    return {"mcp_servers": [{"label": "stand", "url": stand_in.url, **extra}], "mcp_tools_ttl": 0}


async def test_thirty_parallel_calls_never_exceed_the_runs_concurrency_cap(agent_server, scripted, mcp_stand_in):
    scripted.set_scenario(researcher_calls(*(call("slow", n=i) for i in range(30))))
    mcp_stand_in.set_behaviour(slow_s=0.2)

    run = await stream_run(
        agent_server.url, "Query it.", configurable={**servers(mcp_stand_in), "mcp_max_concurrency": 4}
    )

    assert mcp_stand_in.stats["calls"] == 30
    assert mcp_stand_in.stats["max_in_flight"] == 4
    assert sum(r["ok"] for r in run.of_type("mcp_result")) == 30
    assert (run.end_statuses[0]["state"], run.end_statuses[0]["reason"]) == ("done", "report_delivered")


async def test_a_429_is_waited_out_with_retry_after_and_the_call_then_succeeds(agent_server, scripted, mcp_stand_in):
    scripted.set_scenario(researcher_calls(call("lookup", key="sodium")))
    mcp_stand_in.set_behaviour(rate_limit=2, retry_after="0.2")

    run = await stream_run(agent_server.url, "Query it.", configurable=servers(mcp_stand_in))

    waits = [e for e in run.statuses("rate_limited") if e.get("label") == "stand"]
    assert [w["attempt"] for w in waits] == [1, 2]
    assert all(0.2 <= w["wait_s"] <= 0.22 for w in waits), "never earlier than the server asked, a little spread"
    [result] = run.of_type("mcp_result")
    assert (result["ok"], result["summary"]) == (True, "sodium = 42")


async def test_a_429_past_the_wait_budget_is_a_transient_failure_and_the_run_goes_on(
    agent_server, scripted, mcp_stand_in
):
    scripted.set_scenario(researcher_calls(call("lookup", key="sodium")))
    mcp_stand_in.set_behaviour(rate_limit=-1, retry_after="1")

    run = await stream_run(
        agent_server.url, "Query it.", configurable={**servers(mcp_stand_in), "mcp_rate_limit_max_wait": 1.5}
    )

    assert len(run.statuses("rate_limited")) == 1 and mcp_stand_in.stats["rate_limited"] == 2
    [result] = run.of_type("mcp_result")
    assert (result["ok"], result["error_class"]) == (False, "transient") and "429" in result["summary"]
    assert (run.end_statuses[0]["state"], run.end_statuses[0]["reason"]) == ("done", "report_delivered")


async def test_a_call_the_server_never_answers_is_cut_off_as_transient_and_the_run_goes_on(
    agent_server, scripted, mcp_stand_in
):
    scripted.set_scenario(researcher_calls(call("slow", n=1)))
    mcp_stand_in.set_behaviour(slow_s=60)

    run = await stream_run(agent_server.url, "Query it.", configurable={**servers(mcp_stand_in), "mcp_call_timeout": 1})

    [result] = run.of_type("mcp_result")
    assert (result["ok"], result["error_class"]) == (False, "transient")
    assert result["summary"].startswith("the server did not answer within 1 s.")
    after = requests_of(scripted, "research-subagent")[1]
    assert message_text(after["body"]["messages"][-1]).startswith(
        "TOOL ERROR (slow, transient): the server did not answer"
    )
    assert (run.end_statuses[0]["state"], run.end_statuses[0]["reason"]) == ("done", "report_delivered")
