"""Runs that share one server at once stay apart: each delivers its own report with exactly one end status."""

from __future__ import annotations

import asyncio

import pytest
from langgraph_sdk import get_client

from testkit.agent_server import stream_run
from testkit.scenarios import findings_json, orchestrator, plan_and_delegate, researcher, scenario, submit
from testkit.scripted_model import call, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REPORT = "# Sodium\n\nSodium cells are cheaper than lithium cells.\n"


async def test_ten_concurrent_runs_each_deliver_with_exactly_one_end_status(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find sodium prices"), submit(REPORT)),
            researcher(
                turn(tool_calls=[call("web_search", query="sodium battery")], delay_s=0.1),
                turn(content=findings_json("Cheap."), delay_s=0.1),
            ),
        )
    )
    client = get_client(url=agent_server.url)

    runs = await asyncio.gather(*(stream_run(client, f"How cheap are sodium batteries? ({n})") for n in range(10)))

    assert len({run.thread_id for run in runs}) == 10
    for run in runs:
        assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
        assert run.state["values"]["final_report"].startswith("# Sodium")
        assert len(run.of_type("run_start")) == 1
