"""Skills and custom tools through ``langgraph dev`` and the SDK: what each role is offered (custom tools:
every role, the extract and coding sub-agents on a sandboxed server too), what it reads, the events, the
warnings, and the operator's say over which folders a run may load."""

from __future__ import annotations

import json

import pytest

from testkit.agent_server import stream_run
from testkit.scenarios import (
    coder,
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
from tests.conftest import EXTENSION_FIXTURES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REPORT = "# Options\n\nOption A is cheaper than option B.\n"
SKILL_PATH = "/skills/cited-table/SKILL.md"
FIXTURE_TOOLS = {"catalog_rows", "greeting", "explode", "hang", "country_code"}
SANDBOX_TOOLS = {"read_file", "write_file", "edit_file", "execute"}


def tool_names(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request["body"].get("tools") or ()}


def tool_messages(request: dict) -> list[str]:
    return [message_text(m) for m in request["body"]["messages"] if m["role"] == "tool"]


def done(run) -> None:
    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]


async def test_a_sub_agent_reads_the_skill_its_brief_names_and_the_run_announces_it_once(agent_server, scripted):
    briefs = (
        "Compare option prices. Apply the skill `cited-table`.",
        "Compare option lifetimes. Apply the skill `cited-table`.",
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate(*briefs), submit(REPORT)),
            researcher(
                turn(tool_calls=[call("read_file", file_path=SKILL_PATH, limit=1000)]),
                turn(content=findings_json("Option A is cheaper.")),
            ),
        )
    )

    run = await stream_run(
        agent_server.url, "Compare the options.", configurable={"skills_dir": str(EXTENSION_FIXTURES / "skills")}
    )

    done(run)
    [skill] = run.of_type("skill")
    assert (skill["name"], skill["path"], skill["state"]) == ("cited-table", SKILL_PATH, "applied")
    assert skill["role"] == "research-subagent" and skill["task_id"]

    planner = requests_of(scripted, "orchestrator")[0]
    assert "`cited-table`: Build a comparison table with a citation in every cell." in system_text(planner["body"])
    assert "BODY-MARKER" not in json.dumps(planner["body"]), "the orchestrator never sees a skill's body"
    assert "read_file" not in tool_names(planner), "the orchestrator holds no file tools"

    researchers = requests_of(scripted, "research-subagent")
    assert len(researchers) == 4, "two sub-agents, two steps each"
    assert {"read_file", "web_search", "web_fetch"} <= tool_names(researchers[0])
    assert not {"write_file", "edit_file", "ls", "glob", "grep", "execute"} & tool_names(researchers[0])
    assert SKILL_PATH in system_text(researchers[0]["body"])
    after_reading = [r for r in researchers if tool_messages(r)]
    assert len(after_reading) == 2
    assert all("BODY-MARKER-cited-table" in tool_messages(r)[-1] for r in after_reading)


async def test_a_sub_agent_that_reads_a_web_address_as_a_skill_file_is_told_to_read_it_with_web_fetch(
    agent_server, scripted
):
    page = "https://example.org/pharos"
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find who built the Pharos."), submit(REPORT)),
            researcher(
                turn(tool_calls=[call("read_file", file_path=page)]),
                turn(content=findings_json("Nothing was read.", [])),
            ),
        )
    )

    run = await stream_run(
        agent_server.url, "Who built the Pharos?", configurable={"skills_dir": str(EXTENSION_FIXTURES / "skills")}
    )

    done(run)
    [answered] = tool_messages(requests_of(scripted, "research-subagent")[1])
    assert answered == (
        f"TOOL ERROR (read_file, permanent): {page} is a web address, and read_file opens only the skill files "
        "under /skills/: read it with web_fetch."
    )
    assert run.of_type("skill") == []


@pytest.mark.parametrize(
    ("folder", "warning"),
    [("absent", "does not exist"), ("skills_broken", "'no-front-matter' is skipped")],
    ids=["missing-folder", "broken-front-matter"],
)
async def test_a_missing_skills_folder_or_a_broken_skill_leaves_the_run_working_and_is_reported_once(
    agent_server, scripted, folder, warning
):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Compare option prices."), submit(REPORT)),
            researcher(turn(content=findings_json("Option A is cheaper."))),
        )
    )

    run = await stream_run(
        agent_server.url, "Compare the options.", configurable={"skills_dir": str(EXTENSION_FIXTURES / folder)}
    )

    done(run)
    [reported] = [w["detail"] for w in run.statuses("warning") if w["detail"].startswith(("Skill ", "Skills folder"))]
    assert warning in reported
    assert "BODY-MARKER-broken" not in json.dumps(scripted.requests())


async def test_custom_tools_are_offered_to_every_role_called_and_their_events_carry_their_fields(
    agent_server, scripted
):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(tool_calls=[call("catalog_rows", count=2)]),
                plan_and_delegate("List the catalog."),
                submit(REPORT),
            ),
            researcher(
                turn(tool_calls=[call("catalog_rows", count=200, prefix="item")]),
                turn(tool_calls=[call("explode", reason="test")]),
                turn(content=findings_json("The catalog has 200 items.")),
            ),
        )
    )

    run = await stream_run(
        agent_server.url,
        "What is in the catalog?",
        configurable={"custom_tools_dir": str(EXTENSION_FIXTURES / "tools"), "max_result_chars": 300},
    )

    done(run)
    for role in ("orchestrator", "research-subagent"):
        offered = tool_names(requests_of(scripted, role)[0])
        assert FIXTURE_TOOLS <= offered, role
        assert not {"switched_off", "private_tool", "convert_units"} & offered, role

    calls, results = run.of_type("tool_call"), run.of_type("tool_result")
    assert [(c["role"], c["tool"], c["args"]) for c in calls] == [
        ("orchestrator", "catalog_rows", {"count": 2, "prefix": "row"}),
        ("research-subagent", "catalog_rows", {"count": 200, "prefix": "item"}),
        ("research-subagent", "explode", {"reason": "test"}),
    ]
    assert [r["id"] for r in results] == [c["id"] for c in calls]
    small, large, failed = results
    assert small["ok"] and small["bytes"] == len(json.dumps([{"id": 0, "label": "row-0"}, {"id": 1, "label": "row-1"}]))
    assert large["ok"] and large["bytes"] > 300 and "error_class" not in large
    assert (
        not failed["ok"]
        and failed["error_class"] == "unknown"
        and failed["summary"].startswith("TOOL ERROR (explode, unknown)")
    )

    seen_by_orchestrator = tool_messages(requests_of(scripted, "orchestrator")[1])[-1]
    body = seen_by_orchestrator.split("<tool_result>\n", 1)[1].rsplit("\n</tool_result>", 1)[0]
    assert json.loads(body) == [{"id": 0, "label": "row-0"}, {"id": 1, "label": "row-1"}], "a list is JSON-encoded"
    seen_by_researcher = tool_messages(requests_of(scripted, "research-subagent")[1])[-1]
    assert (
        f"[Result truncated: cut to 300 of {large['bytes']:,} characters. No sandbox is attached" in seen_by_researcher
    )

    [broken] = [w for w in run.statuses("warning") if "broken.py" in w["detail"]]
    assert "ModuleNotFoundError" in broken["detail"]


async def test_the_extract_and_coding_sub_agents_are_offered_the_custom_tools_and_each_sub_agent_calls_them_with_events(
    sandbox_agent, scripted
):
    briefs = {
        "research-subagent": "Find the country code of France.",
        "extract-subagent": 'File: /workspace/data/none.json. Question: anything? Cite it as "ISO 3166".',
        "coding-subagent": "Print France's country code with a script.",
    }
    plan = turn(
        tool_calls=[call("write_todos", todos=[{"content": "Find the code", "status": "in_progress"}])]
        + [call("task", description=brief, subagent_type=role) for role, brief in briefs.items()]
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan, submit(REPORT)),
            researcher(
                turn(tool_calls=[call("country_code", country="France")]),
                turn(tool_calls=[call("catalog_rows", count=1500)]),
                turn(content=findings_json("France's code is FR.")),
            ),
            extractor(
                turn(tool_calls=[call("explode", reason="extract")]),
                turn(content=findings_json("The file does not say.")),
            ),
            coder(
                turn(tool_calls=[call("country_code", country="France")]),
                turn(tool_calls=[call("write_file", file_path="/workspace/code.py", content="print('FR')\n")]),
                turn(tool_calls=[call("execute", command="python3 /workspace/code.py")]),
                turn(
                    content="STATUS: ok\nSCRIPT: /workspace/code.py\nOUTPUT:\nFR\nNOTES: The code the country_code tool gave."
                ),
            ),
        )
    )

    run = await stream_run(
        sandbox_agent.url,
        "What is France's country code?",
        configurable={"custom_tools_dir": str(EXTENSION_FIXTURES / "tools")},
    )

    done(run)
    offered = {
        role: tool_names(requests_of(scripted, role)[0])
        for role in ("orchestrator", "research-subagent", "extract-subagent", "coding-subagent")
    }
    assert all(FIXTURE_TOOLS <= tools for tools in offered.values()), offered
    # Each sandbox role keeps its own sandbox tools, and no more of them, beside the custom tools.
    assert offered["extract-subagent"] == {"execute"} | FIXTURE_TOOLS
    assert offered["coding-subagent"] == SANDBOX_TOOLS | FIXTURE_TOOLS

    calls = {c["id"]: c for c in run.of_type("tool_call")}
    results = {r["id"]: r for r in run.of_type("tool_result")}
    assert calls.keys() == results.keys()
    assert sorted((c["role"], c["tool"]) for c in calls.values()) == [
        ("coding-subagent", "country_code"),
        ("extract-subagent", "explode"),
        ("research-subagent", "catalog_rows"),
        ("research-subagent", "country_code"),
    ]
    for call_id, result in results.items():
        assert (result["role"], result["tool"]) == (calls[call_id]["role"], calls[call_id]["tool"])
        assert result["ok"] is (result["tool"] != "explode")
    [failed] = [r for r in results.values() if not r["ok"]]
    assert failed["error_class"] == "unknown" and failed["summary"].startswith("TOOL ERROR (explode, unknown)")

    researcher_saw = [tool_messages(r)[-1] for r in requests_of(scripted, "research-subagent")[1:]]
    assert "France: FR (tier extra-low)" in researcher_saw[0], "build_tool's tool sees the run's config"
    assert "[Offloaded to the sandbox: 1,500 rows (limit 1,000)" in researcher_saw[1], "a large row list is offloaded"
    assert tool_messages(requests_of(scripted, "extract-subagent")[1])[-1].startswith("TOOL ERROR (explode, unknown)")
    assert "France: FR" in tool_messages(requests_of(scripted, "coding-subagent")[1])[-1]


async def test_a_custom_tools_dir_outside_the_allowed_roots_ends_the_run_with_config_error_and_loads_nothing(
    agent_server, scripted, tmp_path
):
    marker = tmp_path / "imported"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    scripted.set_scenario(scenario(orchestrator(submit(REPORT))))

    run = await stream_run(agent_server.url, "Anything", configurable={"custom_tools_dir": str(tmp_path)}, timeout=60)

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("error", "config_error")]
    assert "custom_tools_dir" in run.end_statuses[0]["detail"]
    assert "DRA_ALLOWED_EXTENSION_ROOTS" in run.end_statuses[0]["detail"]
    assert scripted.requests() == []
    assert not marker.exists(), "the client's plugin was never imported"
