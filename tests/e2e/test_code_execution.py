"""Code execution end to end: ``langgraph dev`` with the real sandbox service (``python -m dra_sandbox``,
bubblewrap) as its ``LLM_SANDBOX_URL``, runs streamed through the SDK, models scripted.

- the coding sub-agent writes, fixes and runs one script; its output reaches the report, and a ``script``
  event carries the final code;
- an MCP result over the row limit is offloaded to the sandbox, the research sub-agent hands the file to an
  extract sub-agent that reads it with ``execute``, its findings pass the findings gate and the report
  cites them, verified;
- the sandbox session is killed behind the agent's back mid-run: the next call opens a fresh one,
  ``status: sandbox_reset`` fires once, the model is told, and the run delivers;
- with no sandbox (the suite's shared server), neither sub-agent is offered and the prompts say execution
  is unavailable.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import Any

import pytest
from langgraph_sdk import get_client

from testkit.agent_server import stream_run
from testkit.mcp_stand_in import cities_text
from testkit.sandbox_service import SandboxService
from testkit.scenarios import (
    coder,
    end_of,
    extractor,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    scenario,
    submit,
    system_text,
)
from testkit.scripted_model import call, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CODING_MODEL = "z-ai/glm-5.3-flash"
UTILITY_MODEL = "deepseek/deepseek-v4-flash-0731"
SANDBOX_TOOLS = {"read_file", "write_file", "edit_file", "execute"}


def delegate(brief: str, subagent: str) -> dict[str, Any]:
    todos = [{"content": brief, "status": "in_progress"}, {"content": "Write the report", "status": "pending"}]
    return turn(tool_calls=[call("write_todos", todos=todos), call("task", description=brief, subagent_type=subagent)])


def offered(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request["body"].get("tools") or ()}


def tool_description(request: dict[str, Any], name: str) -> str:
    return next(t["function"]["description"] for t in request["body"]["tools"] if t["function"]["name"] == name)


def tool_results(request: dict[str, Any]) -> list[str]:
    return [message_text(m) for m in request["body"]["messages"] if m["role"] == "tool"]


def live_sessions(service: SandboxService) -> set[str]:
    return set(service.session_ids())


async def sessions_gone(service: SandboxService, before: set[str]) -> bool:
    for _ in range(100):
        if live_sessions(service) <= before:
            return True
        await asyncio.sleep(0.05)
    return False


MEAN_V1 = "prices = [3, 5, 10]\nprint('mean=' + str(sum(prices) / len(prices)))\n"
MEAN_FINAL = "prices = [3, 5, 10]\nprint('mean=' + f'{sum(prices) / len(prices):.2f}')\n"


async def test_the_coding_sub_agent_writes_fixes_and_runs_one_script_and_its_output_reaches_the_report(
    sandbox_agent, scripted, sandbox_service
):
    before = live_sessions(sandbox_service)
    report = "# Mean price\n\nThe mean of the three prices is 6.00 [1].\n\n## Sources\n[1] Script: mean.py\n"
    scripted.set_scenario(
        scenario(
            orchestrator(
                delegate("Compute the mean of the prices 3, 5 and 10 to two decimals.", "coding-subagent"),
                submit(report),
            ),
            coder(
                turn(tool_calls=[call("execute", command="python3 -c 'print(6)'")]),
                turn(tool_calls=[call("write_file", file_path="/workspace/mean.py", content=MEAN_V1)]),
                turn(tool_calls=[call("execute", command="python3 /workspace/mean.py")]),
                turn(
                    tool_calls=[
                        call(
                            "edit_file",
                            file_path="/workspace/mean.py",
                            old_string="str(sum(prices) / len(prices))",
                            new_string="f'{sum(prices) / len(prices):.2f}'",
                        )
                    ]
                ),  # fmt: skip
                turn(tool_calls=[call("execute", command="python3 /workspace/mean.py")]),
                turn(
                    content="STATUS: ok\nSCRIPT: /workspace/mean.py\nOUTPUT:\nmean=6.00\nNOTES: The mean of the three prices in the brief."
                ),
            ),
        )
    )

    run = await stream_run(sandbox_agent.url, "What is the mean of the prices 3, 5 and 10?")

    assert end_of(run) == ("done", "report_delivered")
    [script] = run.of_type("script")
    assert (script["role"], script["path"], script["status"], script["output"]) == (
        "coding-subagent",
        "/workspace/mean.py",
        "ok",
        "mean=6.00",
    )
    assert script["code"] == MEAN_FINAL and script["bytes"] == len(MEAN_FINAL.encode())
    [start] = [s for s in run.statuses("subagent_start") if s["subagent"] == "coding-subagent"]
    assert start["model"] == CODING_MODEL and start["task_id"] == script["task_id"]

    requests = requests_of(scripted, "coding-subagent")
    assert all(offered(r) == SANDBOX_TOOLS for r in requests)
    refusal, v1, _, final = (tool_results(requests[n])[-1] for n in (1, 3, 4, 5))
    assert refusal.startswith("TOOL ERROR (execute, permanent): `python -c` one-liners are not run here")
    assert v1.startswith("mean=6.0\n") and "[Command succeeded with exit code 0]" in v1
    assert final.startswith("mean=6.00\n")

    [first, after_task] = requests_of(scripted, "orchestrator")
    assert "A sandbox is attached to this run" in system_text(first["body"])
    assert {"research-subagent", "extract-subagent", "coding-subagent"} <= set(
        re.findall(r"[a-z]+-subagent", tool_description(first, "task"))
    )
    assert not SANDBOX_TOOLS & offered(first)
    handed = tool_results(after_task)[-1]
    assert "STATUS: ok" in handed and "mean=6.00" in handed

    # What a generic client shows: the hand-over and the report in messages, the report in state.
    messages = run.values["messages"]
    assert any(m["type"] == "tool" and "mean=6.00" in str(m["content"]) for m in messages)
    assert "6.00" in run.values["final_report"] and "6.00" in str(messages[-1]["content"])
    assert await sessions_gone(sandbox_service, before), "the run's sandbox session outlived the run"


async def test_an_offloaded_mcp_result_is_read_by_an_extract_sub_agent_whose_findings_the_report_cites(
    sandbox_agent, scripted, mcp_stand_in
):
    text = cities_text(1500)
    path = f"/workspace/data/mcp-standin-cities-{hashlib.sha256(text.encode()).hexdigest()[:10]}.json"
    quote = '{"id": 1234, "city": "city-1234", "population": 2468}'
    finding = {"finding": "city-1234 has a population of 2468.", "evidence": quote, "source": "MCP: standin"}
    brief = f'File: {path}. Question: what is the population of city-1234? Cite it as "MCP: standin".'
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the population of city-1234"),
                submit("# City 1234\n\ncity-1234 has a population of 2468 [1].\n\n## Sources\n[1] MCP: standin\n"),
            ),
            researcher(
                turn(tool_calls=[call("cities", count=1500)]),
                turn(tool_calls=[call("task", description=brief, subagent_type="extract-subagent")]),
                turn(content=findings_json("city-1234 has a population of 2468.", [finding])),
            ),
            extractor(
                turn(tool_calls=[call("execute", command=f"grep -o '{{\"id\": 1234, [^}}]*}}' {path}")]),
                turn(content=findings_json("The register lists city-1234 with 2468 people.", [finding])),
            ),
        )
    )

    run = await stream_run(
        sandbox_agent.url,
        "How many people live in city-1234?",
        configurable={"mcp_servers": [{"label": "standin", "url": mcp_stand_in.url}]},
    )

    assert end_of(run) == ("done", "report_delivered")
    stub = tool_results(requests_of(scripted, "research-subagent")[1])[-1]
    assert "[Offloaded to the sandbox: 1,500 rows (limit 1,000)" in stub and f"file: {path}" in stub
    assert "rows: 1,500" in stub and "columns: id, city, population" in stub and '{"id": 4, "city": "city-4"' in stub
    assert '"id": 1234' not in stub and len(stub) < 3_000
    [result] = run.of_type("mcp_result")
    assert result["ok"] and result["bytes"] == len(text.encode())

    [read] = requests_of(scripted, "extract-subagent")[1:]
    assert offered(read) == {"execute"} and tool_results(read)[-1].startswith(quote)
    starts = {s["subagent"]: s for s in run.statuses("subagent_start")}
    assert (
        starts["extract-subagent"]["model"] == UTILITY_MODEL
        and starts["extract-subagent"]["role"] == "extract-subagent"
    )
    handed = run.of_type("subagent_findings")
    assert [h["role"] for h in handed] == ["extract-subagent", "research-subagent"]
    assert handed[0]["findings"] == [finding] and handed[0]["task_id"] == starts["extract-subagent"]["task_id"]
    researcher_saw = tool_results(requests_of(scripted, "research-subagent")[2])[-1]
    assert json.loads(researcher_saw)["findings"] == [finding]

    [citation] = run.values["cited_sources"]
    assert citation["verified"] is True
    assert [claim["verdict"] for claim in run.values["citations"]] == ["supported"]
    assert "[1] MCP: standin" in run.values["final_report"] and "[unverified]" not in run.values["final_report"]
    assert len(run.values["findings"]) == 1, "only the research unit is a hand-over of the run"


async def test_a_sandbox_session_killed_mid_run_is_replaced_once_and_the_run_still_delivers(
    sandbox_agent, scripted, sandbox_service
):
    before = live_sessions(sandbox_service)
    log_start = len(sandbox_service.log())
    script = "print('rows', 3)\n"
    scripted.set_scenario(
        scenario(
            orchestrator(
                delegate("Count the rows with a script.", "coding-subagent"),
                submit("# Rows\n\nThere are 3 rows [1].\n\n## Sources\n[1] Script: count.py\n"),
            ),
            coder(
                turn(tool_calls=[call("write_file", file_path="/workspace/count.py", content=script)]),
                turn(tool_calls=[call("execute", command="python3 /workspace/count.py")]),
                turn(tool_calls=[call("execute", command="python3 /workspace/count.py")], delay_s=5),
                turn(tool_calls=[call("write_file", file_path="/workspace/count.py", content=script)]),
                turn(tool_calls=[call("execute", command="python3 /workspace/count.py")]),
                turn(
                    content="STATUS: ok\nSCRIPT: /workspace/count.py\nOUTPUT:\nrows 3\nNOTES: Written again after the sandbox reset."
                ),
            ),
        )
    )
    client = get_client(url=sandbox_agent.url)
    streaming = asyncio.create_task(stream_run(client, "How many rows are there?", timeout=120))

    # The coder's write (a preflight exec) and its first run are in; kill the session while it waits on its model.
    execs = re.compile(r"/exec session=([0-9a-f]{16}) -> 200")
    for _ in range(600):
        found = execs.findall(sandbox_service.log()[log_start:])
        if len(found) >= 2 or streaming.done():
            break
        await asyncio.sleep(0.05)
    assert len(found) >= 2, sandbox_service.log()[log_start:]
    assert live_sessions(sandbox_service) - before == {found[0]}
    assert sandbox_service.delete_session(found[0]) == 200
    run = await streaming

    assert end_of(run) == ("done", "report_delivered")
    [reset] = run.statuses("sandbox_reset")
    assert reset["role"] == "coding-subagent" and "files written before are gone" in reset["detail"]
    after_kill = tool_results(requests_of(scripted, "coding-subagent")[3])[-1]
    assert (
        after_kill.startswith("[Sandbox reset: the sandbox session ended unexpectedly")
        and "can't open file" in after_kill
    )
    [shown] = run.of_type("script")
    assert (shown["code"], shown["output"]) == (script, "rows 3")
    assert "3 rows" in run.values["final_report"]
    log = await sandbox_agent.log_after_run(run.thread_id)
    assert sandbox_service.token not in json.dumps(run.parts) + json.dumps(run.state) + log
    created = re.findall(r"POST /sessions session=- -> 200", sandbox_service.log()[log_start:])
    assert len(created) == 2
    assert await sessions_gone(sandbox_service, before)


async def test_without_a_sandbox_neither_sub_agent_is_offered_and_the_prompts_say_execution_is_unavailable(
    agent_server, scripted
):
    scripted.set_scenario(
        scenario(
            orchestrator(
                delegate("Compute the mean of 3, 5 and 10.", "coding-subagent"),
                plan_and_delegate("Find the prices"),
                submit("# Prices\n\nNothing was computed.\n\n## Sources\n"),
            ),
            researcher(turn(content=findings_json("Nothing found."))),
        )
    )

    run = await stream_run(agent_server.url, "What is the mean price?")

    assert end_of(run) == ("done", "report_delivered")
    first, refused, _ = requests_of(scripted, "orchestrator")
    [research] = requests_of(scripted, "research-subagent")
    for request in (first, research):
        assert "No code execution in this run" in system_text(request["body"])
        assert "A sandbox is attached" not in system_text(request["body"])
    listed = set(re.findall(r"[a-z]+-subagent", tool_description(first, "task")))
    assert listed == {"research-subagent"}
    # read_file is the skills reader every research sub-agent has; the sandbox's tools are missing.
    assert not {"execute", "task", "write_file", "edit_file"} & offered(research)
    assert "coding-subagent because it does not exist" in tool_results(refused)[-1]
    assert not run.of_type("script") and not run.statuses("sandbox_reset")
    assert not [s for s in run.statuses("subagent_start") if s["subagent"] != "research-subagent"]
