"""MCP tools through ``langgraph dev`` and the SDK, against the MCP project's reference server
(``@modelcontextprotocol/server-everything`` in streamableHttp mode, on loopback).

A run's MCP servers are listed when its graph is built: each announces itself right after ``run_start``
as ``mcp_ready`` (its real tool list) or ``mcp_error`` (why not), and research sub-agents, not the
orchestrator, get the tools.
"""

from __future__ import annotations

import asyncio
import json
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
from tests.conftest import GUARD_BEARER

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

EVERYTHING_TOOLS = {"echo", "get-sum", "get-env", "get-tiny-image"}
HEADER_SECRET = "mcp-header-secret-0123456789"


def quiet_run() -> dict[str, Any]:
    """A scenario whose orchestrator delegates one unit whose researcher finds nothing, then reports."""
    return scenario(
        orchestrator(plan_and_delegate("Look around"), submit("# Nothing\n\nNothing found.\n\n## Sources\n")),
        researcher(turn(content=findings_json("Nothing found."))),
    )


def mcp_statuses(run: Any) -> list[dict[str, Any]]:
    return [e for e in run.statuses() if e["state"] in ("mcp_ready", "mcp_error")]


def offered_tools(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request["body"].get("tools") or ()}


async def test_a_research_sub_agent_calls_a_real_mcp_tool_and_the_report_cites_it_by_the_servers_label(
    agent_server, scripted, mcp_everything
):
    finding = {
        "finding": "The server echoed the phrase.",
        "evidence": "Echo: sodium glass 412",
        "source": "MCP: everything",
    }
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Echo a phrase through MCP"),
                submit(
                    '# Echo\n\nThe server echoed the phrase "sodium glass 412" [1].\n\n## Sources\n[1] MCP: everything\n'
                ),
            ),
            researcher(
                turn(tool_calls=[call("echo", message="sodium glass 412")]),
                turn(content=findings_json("The server echoed the phrase.", [finding])),
            ),
        )
    )

    run = await stream_run(
        agent_server.url,
        "Echo something.",
        configurable={"mcp_servers": [{"label": "everything", "url": mcp_everything.url}]},
    )

    [ready] = mcp_statuses(run)
    assert ready["state"] == "mcp_ready" and ready["label"] == "everything" and ready["server"] == mcp_everything.url
    assert EVERYTHING_TOOLS <= set(ready["tools"]) and ready["tool_count"] == len(ready["tools"])
    assert [e["type"] for e in run.events].index("run_start") < run.events.index(ready)

    first_research, after_echo = requests_of(scripted, "research-subagent")[:2]
    assert EVERYTHING_TOOLS <= offered_tools(first_research)
    assert "MCP: everything" in message_text(first_research["body"]["messages"][0])
    assert not EVERYTHING_TOOLS & set().union(*(offered_tools(r) for r in requests_of(scripted, "orchestrator")))
    echoed = [m for m in after_echo["body"]["messages"] if m["role"] == "tool"]
    assert "Echo: sodium glass 412" in message_text(echoed[-1])

    [called], [result] = run.of_type("mcp_call"), run.of_type("mcp_result")
    assert (called["tool"], called["server"], called["args"], called["role"]) == (
        "echo",
        "everything",
        {"message": "sodium glass 412"},
        "research-subagent",
    )
    assert (result["id"], result["ok"], result["summary"]) == (called["id"], True, "Echo: sodium glass 412")
    assert result["bytes"] == len("Echo: sodium glass 412") and "error_class" not in result

    [record] = [e for e in run.values["evidence"] if e["kind"] == "mcp_result"]
    assert record["url"] == "MCP: everything" and record["title"].startswith("echo ")
    assert "MCP: everything" in [source["url"] for source in run.values["sources"]]
    [citation] = run.values["cited_sources"]
    assert (citation["evidence_id"], citation["verified"]) == (record["id"], True)
    [claim] = run.values["citations"]
    assert (claim["verdict"], claim["sources"][0]["evidence_id"]) == ("supported", record["id"])
    assert "[1] MCP: everything" in run.values["final_report"]
    assert (run.end_statuses[0]["state"], run.end_statuses[0]["reason"]) == ("done", "report_delivered")


async def test_a_bad_argument_is_a_permanent_error_and_its_identical_retry_is_answered_from_the_memo(
    agent_server, scripted, mcp_everything
):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Echo a number"), submit("# Echo\n\nNothing echoed.\n\n## Sources\n")),
            researcher(
                turn(tool_calls=[call("echo", message=412)]),
                turn(tool_calls=[call("echo", message=412)]),
                turn(content=findings_json("The echo tool refused a number.")),
            ),
        )
    )

    run = await stream_run(
        agent_server.url,
        "Echo a number.",
        configurable={"mcp_servers": [{"label": "everything", "url": mcp_everything.url}]},
    )

    first, repeated = run.of_type("mcp_result")
    assert (first["ok"], first["error_class"], first.get("repeated")) == (False, "permanent", None)
    assert "validation" in first["summary"].lower()
    assert (repeated["ok"], repeated["error_class"], repeated["repeated"]) == (False, "permanent", True)
    after_first, after_retry = requests_of(scripted, "research-subagent")[1:3]
    first_text = message_text([m for m in after_first["body"]["messages"] if m["role"] == "tool"][-1])
    assert first_text.startswith("TOOL ERROR (echo, permanent):") and "do not retry" in first_text
    assert "Answered from memory" in message_text(
        [m for m in after_retry["body"]["messages"] if m["role"] == "tool"][-1]
    )
    assert (run.end_statuses[0]["state"], run.end_statuses[0]["reason"]) == ("done", "report_delivered")


async def test_a_real_server_behind_a_bearer_proxy_gives_401_without_the_token_and_its_tools_with_it(
    agent_server, scripted, guarded_everything
):
    echo_once = scenario(
        orchestrator(plan_and_delegate("Echo a word"), submit("# Echo\n\nEchoed.\n\n## Sources\n")),
        researcher(turn(tool_calls=[call("echo", message="guarded")]), turn(content=findings_json("Echoed."))),
    )
    guarded = {"label": "guarded", "url": guarded_everything.url()}
    scripted.set_scenario(quiet_run())
    without = await stream_run(agent_server.url, "Echo.", configurable={"mcp_servers": [guarded], "mcp_tools_ttl": 0})
    scripted.set_scenario(echo_once)
    with_it = await stream_run(
        agent_server.url,
        "Echo.",
        configurable={
            "mcp_servers": [{**guarded, "headers": {"Authorization": f"Bearer {GUARD_BEARER}"}}],
            "mcp_tools_ttl": 0,
        },
    )

    assert [(e["state"], e.get("detail")) for e in mcp_statuses(without)] == [("mcp_error", "HTTP 401 Unauthorized")]
    [ready] = mcp_statuses(with_it)
    assert ready["state"] == "mcp_ready" and EVERYTHING_TOOLS <= set(ready["tools"])
    [result] = with_it.of_type("mcp_result")
    assert result["ok"] and result["summary"] == "Echo: guarded"
    assert guarded_everything.stats["unauthorized"] >= 1 and guarded_everything.stats["forwarded"] >= 2
    assert GUARD_BEARER not in str(with_it.events) + (await agent_server.log_after_run(with_it.thread_id))
    assert (without.end_statuses[0]["state"], with_it.end_statuses[0]["state"]) == ("done", "done")


async def test_a_dead_server_gives_mcp_error_and_the_live_one_and_the_run_go_on(agent_server, scripted, mcp_everything):
    scripted.set_scenario(quiet_run())
    servers = [{"label": "dead", "url": "http://127.0.0.1:9/mcp"}, {"label": "live", "url": mcp_everything.url}]

    run = await stream_run(agent_server.url, "Look around.", configurable={"mcp_servers": servers})

    by_label = {e["label"]: e for e in mcp_statuses(run)}
    assert by_label["dead"]["state"] == "mcp_error" and by_label["dead"]["server"] == "http://127.0.0.1:9/mcp"
    assert "cannot connect" in by_label["dead"]["detail"] and "TaskGroup" not in by_label["dead"]["detail"]
    assert by_label["live"]["state"] == "mcp_ready"
    assert (run.end_statuses[0]["state"], run.end_statuses[0]["reason"]) == ("done", "report_delivered")


async def test_a_wrong_path_is_an_mcp_error_in_one_line(agent_server, scripted, mcp_everything):
    scripted.set_scenario(quiet_run())
    url = mcp_everything.url.replace("/mcp", "/servers/nope/mcp")

    run = await stream_run(
        agent_server.url, "Look around.", configurable={"mcp_servers": [{"label": "nope", "url": url}]}
    )

    [error] = mcp_statuses(run)
    assert error["state"] == "mcp_error" and "\n" not in error["detail"] and "TaskGroup" not in error["detail"]


async def test_mcp_config_takes_a_base_url_and_gets_mcp_appended(agent_server, scripted, mcp_everything):
    scripted.set_scenario(quiet_run())
    base = mcp_everything.url.removesuffix("/mcp")

    run = await stream_run(
        agent_server.url, "Look around.", configurable={"mcp_config": {"url": base, "tools": ["echo"]}}
    )

    [ready] = mcp_statuses(run)
    assert (ready["state"], ready["server"], ready["tools"]) == ("mcp_ready", mcp_everything.url, ["echo"])


async def test_the_listing_is_cached_for_its_ttl_and_listed_on_every_run_with_ttl_zero(
    agent_server, scripted, mcp_everything
):
    scripted.set_scenario(quiet_run())

    async def cached(label: str, ttl: float) -> bool:
        servers = [{"label": label, "url": mcp_everything.url}]
        run = await stream_run(
            agent_server.url, "Look around.", configurable={"mcp_servers": servers, "mcp_tools_ttl": ttl}
        )
        [ready] = mcp_statuses(run)
        assert ready["state"] == "mcp_ready"
        return ready["cached"]

    assert [await cached("ttl-long", 600), await cached("ttl-long", 600)] == [False, True]
    assert [await cached("ttl-zero", 0), await cached("ttl-zero", 0)] == [False, False]
    assert await cached("ttl-short", 1) is False
    await asyncio.sleep(1.2)
    assert await cached("ttl-short", 1) is False


async def test_a_stdio_server_sent_in_the_configurable_is_refused_and_never_run(agent_server, scripted, tmp_path):
    scripted.set_scenario(quiet_run())
    marker = tmp_path / "ran"
    spec = {"label": "sh", "transport": "stdio", "command": "touch", "args": [str(marker)]}

    run = await stream_run(agent_server.url, "Look around.", configurable={"mcp_servers": [spec]})

    assert not mcp_statuses(run) and not marker.exists()
    assert any("stdio" in e.get("detail", "") for e in run.statuses("warning"))


async def test_header_values_never_reach_events_the_state_values_or_the_server_log(
    agent_server, scripted, mcp_everything
):
    scripted.set_scenario(quiet_run())
    servers = [{"label": "keyed", "url": mcp_everything.url, "headers": {"x-api-key": HEADER_SECRET}}]

    run = await stream_run(agent_server.url, "Look around.", configurable={"mcp_servers": servers})

    assert mcp_statuses(run)[0]["state"] == "mcp_ready"
    assert HEADER_SECRET not in json.dumps(run.events) and HEADER_SECRET not in json.dumps(run.values)
    assert HEADER_SECRET not in (await agent_server.log_after_run(run.thread_id))
