"""The walking skeleton through ``langgraph dev`` and the SDK: handshake, delegation, report, end state."""

from __future__ import annotations

import re

import pytest

from testkit.agent_server import stream_run
from testkit.scenarios import (
    direct_answerer,
    findings_json,
    orchestrator,
    plan_and_delegate,
    researcher,
    scenario,
    submit,
    triage,
)
from testkit.scripted_model import error, turn
from tests.conftest import E2E_MODEL_KEY

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

RUN_TIME = re.compile(r"Run time \d+m \d+s\.$")
# Cites nothing: a citation of a page the run never fetched would be sent back by the report gate.
REPORT = "# Sodium batteries\n\nSodium cells are cheaper than lithium cells.\n"


async def test_a_run_streams_handshake_subagent_report_usage_and_one_done_status(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the cost of sodium cells"), submit(REPORT)),
            researcher(turn(content=findings_json("Sodium cells cost less than lithium cells."))),
        )
    )

    run = await stream_run(agent_server.url, "How cheap are sodium batteries?")

    types = [e["type"] for e in run.events]
    assert types[0] == "run_start"
    assert run.events[0]["protocol_version"] >= 1 and run.events[0]["started_at"].endswith("Z")
    assert types.count("report") == 1 and types.count("usage") == 1
    assert types.index("report") < types.index("usage")
    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    assert run.events[-1] == run.end_statuses[0]
    assert RUN_TIME.search(run.end_statuses[0]["detail"])

    start, done = run.statuses("subagent_start"), run.statuses("subagent_done")
    assert len(start) == len(done) == 1
    task_call_ids = [
        tc["id"]
        for m in run.values["messages"]
        if m["type"] == "ai"
        for tc in m.get("tool_calls", [])
        if tc["name"] == "task"
    ]
    assert start[0]["role"] == done[0]["role"] == "research-subagent"
    assert start[0]["task_id"] == done[0]["task_id"] == task_call_ids[0]
    assert done[0]["model_calls"] == 1 and done[0]["total_tokens"] > 0

    usage = run.of_type("usage")[0]
    assert usage["model_calls"] == 4, "triage verdict, two orchestrator steps, one sub-agent step"
    assert set(usage["per_role"]) == {"triage", "orchestrator", "research-subagent"}
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert usage["cost_usd"] > 0 and re.fullmatch(r"\d+m \d+s", usage["elapsed"])

    assert run.values["final_report"] == REPORT.strip()
    assert run.of_type("report")[0]["markdown"] == REPORT.strip()
    assert run.stream_errors() == []


async def test_an_untasked_orchestrator_sees_only_its_own_tools_with_no_example_tool(agent_server, scripted):
    scripted.set_scenario(scenario(orchestrator(submit(REPORT))))

    await stream_run(agent_server.url, "Summarise sodium batteries.")

    first = next(r for r in scripted.requests() if r["agent"] == "orchestrator")["body"]
    tool_names = {t["function"]["name"] for t in first["tools"]}
    # No decision tools without a named task, and the example custom tool is not on by default.
    assert tool_names == {"write_todos", "task", "submit_report", "request_clarification"}
    task_tool = next(t for t in first["tools"] if t["function"]["name"] == "task")
    assert "research-subagent" in task_tool["function"]["description"]
    assert "general-purpose" not in task_tool["function"]["description"]


async def test_a_rejected_model_key_ends_the_run_with_one_error_that_says_what_to_fix(agent_server, scripted):
    scripted.set_scenario(scenario(orchestrator(turn(error=error(401, "Incorrect API key provided: sk-e2e***789")))))

    run = await stream_run(agent_server.url, "How cheap are sodium batteries?", timeout=60)

    assert run.events[0]["type"] == "run_start"
    assert len(run.end_statuses) == 1
    end = run.end_statuses[0]
    assert end["state"] == "error" and end["reason"] == "model_error"
    assert "401" in end["detail"] and "OPENAI_API_KEY" in end["detail"]
    assert RUN_TIME.search(end["detail"])
    assert len(run.of_type("usage")) == 1
    assert run.stream_errors() == []
    assert E2E_MODEL_KEY not in str(run.parts) and E2E_MODEL_KEY not in str(run.values)


async def test_a_base_url_not_on_the_allowlist_is_refused_before_any_model_call(agent_server, scripted):
    scripted.set_scenario(scenario(orchestrator(submit(REPORT))))

    run = await stream_run(
        agent_server.url, "Anything", configurable={"base_url": "http://attacker.example/v1"}, timeout=60
    )

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("error", "config_error")]
    assert "DRA_ALLOWED_BASE_URLS" in run.end_statuses[0]["detail"]
    assert scripted.requests() == []


async def test_an_unknown_tier_warns_and_the_run_proceeds_on_the_default(agent_server, scripted):
    scripted.set_scenario(scenario(orchestrator(submit(REPORT))))

    run = await stream_run(agent_server.url, "Anything", configurable={"model_tier": "platinum"})

    warnings = run.statuses("warning")
    assert any("platinum" in w["detail"] and "extra-low" in w["detail"] for w in warnings)
    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    assert {r["body"]["model"] for r in scripted.requests()} == {"deepseek/deepseek-v4-flash"}


async def test_a_plain_answer_without_research_ends_as_a_direct_answer(agent_server, scripted):
    # A turn routed to research must call a tool (tests/e2e/test_local_model_servers.py): a greeting is SIMPLE.
    scripted.set_scenario(scenario(triage("SIMPLE"), direct_answerer("Hello! Ask me a research question.")))

    run = await stream_run(agent_server.url, "hi")

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "direct_answer")]
    assert "final_report" not in run.values


async def test_the_server_publishes_what_studio_needs_to_open_the_graph(agent_server):
    from langgraph_sdk import get_client

    client = get_client(url=agent_server.url)
    [assistant] = await client.assistants.search(graph_id="deep_research_agent")

    drawing = await client.assistants.get_graph(assistant["assistant_id"], xray=True)
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])

    assert {"model", "tools"} <= {node["id"] for node in drawing["nodes"]}
    state_fields = schemas["state_schema"]["properties"]
    assert {"messages", "final_report", "sources"} <= set(state_fields)
