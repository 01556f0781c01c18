"""stdio MCP servers through ``langgraph dev``: started by the agent when the operator configures them,
or reached over HTTP behind ``mcp-proxy``'s named-server endpoint; never started for a run's configurable
(``test_mcp_tools.py`` covers that refusal). The stdio server is ``mcp-server-time`` (PyPI)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from testkit.agent_server import AgentServer, stream_run
from testkit.mcp_proxy import BIN, TIME_SERVER, McpProxy
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
from tests.conftest import GUARD_BEARER, agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

TIME_TOOLS = {"get_current_time", "convert_time"}


@pytest.fixture(scope="module")
def operator_agent_server(model_server, web_server, guarded_everything) -> Iterator[AgentServer]:
    """A second ``langgraph dev`` whose operator configuration names a stdio server and, with
    ``DRA_MCP_BEARER``, server-everything behind a bearer-checking proxy."""
    servers = [
        {"label": "clock", "command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        {"label": "guarded", "url": guarded_everything.url()},
    ]
    env = {
        **agent_env(model_server, web_server),
        "DRA_MCP_SERVERS": json.dumps(servers),
        "DRA_MCP_BEARER": GUARD_BEARER,
    }
    server = AgentServer(env).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def proxy() -> Iterator[McpProxy]:
    server = McpProxy({"time": TIME_SERVER}).start()
    try:
        yield server
    finally:
        server.stop()


def asks_the_time(*calls: dict[str, Any]) -> dict[str, Any]:
    return scenario(
        orchestrator(plan_and_delegate("What time is it in Sofia?"), submit("# Time\n\nAsked.\n\n## Sources\n")),
        researcher(*(turn(tool_calls=[c]) for c in calls), turn(content=findings_json("Asked the clock."))),
    )


async def test_a_stdio_server_from_the_operators_config_is_started_and_called(operator_agent_server, scripted):
    scripted.set_scenario(asks_the_time(call("get_current_time", timezone="Europe/Sofia")))

    run = await stream_run(operator_agent_server.url, "What time is it in Sofia?")

    [ready] = [e for e in run.statuses() if e["state"] == "mcp_ready" and e["label"] == "clock"]
    assert set(ready["tools"]) == TIME_TOOLS
    assert ready["server"].startswith("stdio: ") and ready["server"].endswith("mcp-server-time --local-timezone UTC")
    [result] = run.of_type("mcp_result")
    assert result["ok"] and "Europe/Sofia" in result["summary"]


async def test_the_operator_bearer_reaches_the_operators_server_and_never_a_runs(
    operator_agent_server, scripted, guarded_everything
):
    scripted.set_scenario(asks_the_time(call("echo", message="operator")))

    operators = await stream_run(operator_agent_server.url, "Look it up.", configurable={"mcp_tools_ttl": 0})
    scripted.set_scenario(asks_the_time())
    runs = await stream_run(
        operator_agent_server.url,
        "Look it up.",
        configurable={"mcp_servers": [{"label": "mine", "url": guarded_everything.url()}], "mcp_tools_ttl": 0},
    )

    assert [(r["ok"], r["summary"]) for r in operators.of_type("mcp_result")] == [(True, "Echo: operator")]
    assert [(e["state"], e.get("detail")) for e in runs.statuses() if e.get("label") == "mine"] == [
        ("mcp_error", "HTTP 401 Unauthorized")
    ]
    assert GUARD_BEARER not in str(operators.events) + str(runs.events)


async def test_a_runs_own_servers_replace_the_operators_stdio_server(operator_agent_server, scripted, proxy):
    scripted.set_scenario(asks_the_time())

    run = await stream_run(
        operator_agent_server.url,
        "What time is it?",
        configurable={"mcp_servers": [{"label": "gw", "url": proxy.url("time")}]},
    )

    assert [e["label"] for e in run.statuses() if e["state"] == "mcp_ready"] == ["gw"]


async def test_stdio_servers_behind_mcp_proxy_are_reached_over_http_and_a_bad_value_is_permanent(
    agent_server, scripted, proxy
):
    scripted.set_scenario(
        asks_the_time(call("get_current_time", timezone="Europe/Sofia"), call("get_current_time", timezone="Not/AZone"))
    )

    run = await stream_run(
        agent_server.url,
        "What time is it?",
        configurable={"mcp_servers": [{"label": "time", "url": proxy.url("time")}]},
    )

    [ready] = [e for e in run.statuses() if e["state"] == "mcp_ready"]
    assert ready["server"] == proxy.url("time") and set(ready["tools"]) == TIME_TOOLS
    good, bad = run.of_type("mcp_result")
    assert good["ok"] and "Europe/Sofia" in good["summary"]
    assert (bad["ok"], bad["error_class"]) == (False, "permanent") and "Invalid timezone" in bad["summary"]
    after_bad = requests_of(scripted, "research-subagent")[2]
    assert message_text(after_bad["body"]["messages"][-1]).startswith("TOOL ERROR (get_current_time, permanent):")


async def test_an_unknown_named_server_on_the_proxy_is_an_mcp_error(agent_server, scripted, proxy):
    scripted.set_scenario(asks_the_time())

    run = await stream_run(
        agent_server.url,
        "What time is it?",
        configurable={"mcp_servers": [{"label": "nope", "url": proxy.url("nope")}]},
    )

    [error] = [e for e in run.statuses() if e["state"] == "mcp_error"]
    assert error["label"] == "nope" and "\n" not in error["detail"]
