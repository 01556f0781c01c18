"""Secrets through ``langgraph dev`` and the SDK: a key a provider echoes back stays in the process.

A provider that rejects a key often quotes it (``401 Incorrect API key provided: sk-…``). Each test sends a
run its own key, which the stand-in echoes in its error, and looks for that key in everything a user or an
operator sees: the server's log, every streamed part (custom, updates, messages) and the thread state.
The keys are not shaped like keys, so only their registration for the run can scrub them.
"""

from __future__ import annotations

import json

import pytest

from deep_research_agent.domain.names import Role
from testkit.agent_server import RunResult, stream_run
from testkit.scenarios import (
    end_of,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    scenario,
    submit,
)
from testkit.scripted_model import agent, call, error, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

MODEL_KEY = "model-key-e2e-Qm4Vx8Rt2Lw6"
SEARCH_KEY = "search-key-e2e-Jd3Np7Kc5Hs9"
# The scripted model server puts the key it received where ``{api_key}`` stands.
REJECTED = turn(error=error(401, "Incorrect API key provided: {api_key}"))


def thread_state_without_recorded_keys(run: RunResult) -> str:
    """The thread state as JSON, less the ``apiKeys`` the LangGraph server copies from the run's
    ``configurable`` into checkpoint metadata (the README's "Keys and privacy" says so)."""
    metadata = {k: v for k, v in run.state["metadata"].items() if k != "apiKeys"}
    return json.dumps({**run.state, "metadata": metadata})


async def test_a_model_key_the_provider_echoes_back_is_in_no_log_line_event_or_state(agent_server, scripted):
    scripted.set_scenario(scenario(agent(Role.TRIAGE, REJECTED), orchestrator(REJECTED)))

    run = await stream_run(
        agent_server.url,
        "How cheap are sodium batteries?",
        configurable={"apiKeys": {"OPENAI_API_KEY": MODEL_KEY}},
        timeout=60,
    )

    assert end_of(run) == ("error", "model_error")
    assert [(r["agent"], r["status"]) for r in scripted.requests()] == [("triage", 401), ("orchestrator", 401)]
    log = await agent_server.log_after_run(run.thread_id)
    assert MODEL_KEY not in log
    [triage_warning] = [line for line in log.splitlines() if "triage call failed" in line and run.thread_id in line]
    assert "Incorrect API key provided: [redacted]" in triage_warning
    assert MODEL_KEY not in json.dumps(run.parts)
    assert MODEL_KEY not in thread_state_without_recorded_keys(run)


async def test_a_model_key_echoed_to_a_research_sub_agent_is_in_no_log_line_event_or_state(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find kelp carbon figures"), submit("# Kelp\n\nThe research failed.\n")),
            researcher(REJECTED),
        )
    )

    run = await stream_run(
        agent_server.url, "Kelp?", configurable={"apiKeys": {"OPENAI_API_KEY": MODEL_KEY}}, timeout=60
    )

    assert end_of(run) == ("done", "report_delivered")
    [failed] = run.statuses("subagent_failed")
    assert "Incorrect API key provided: [redacted]" in failed["detail"]
    log = await agent_server.log_after_run(run.thread_id)
    assert MODEL_KEY not in log
    assert any("sub-agent research-subagent" in line and run.thread_id in line for line in log.splitlines())
    assert MODEL_KEY not in json.dumps(run.parts)
    assert MODEL_KEY not in thread_state_without_recorded_keys(run)


async def test_a_search_key_the_search_api_echoes_back_is_in_no_log_line_event_or_state(agent_server, scripted, web):
    web.tavily_configure(
        replies=[
            {"status": 401, "error": "Unauthorized: invalid API key {api_key}"},
            {"status": 400, "error": "Query refused for API key {api_key}"},
        ]
    )
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find kelp carbon figures"), submit("# Kelp\n\nNo source could be searched.\n")
            ),
            researcher(
                turn(tool_calls=[call("web_search", query="kelp carbon")]),
                turn(tool_calls=[call("web_search", query="kelp farm")]),
                turn(content=findings_json("Search failed twice.", gaps=["no search results"])),
            ),
        )
    )

    run = await stream_run(
        agent_server.url, "Kelp?", configurable={"apiKeys": {"TAVILY_API_KEY": SEARCH_KEY}}, timeout=60
    )

    assert end_of(run) == ("done", "report_delivered")
    assert [r["auth_present"] for r in web.tavily_requests()] == [True, True]
    assert [e["ok"] for e in run.of_type("search_results")] == [False, False]
    sent = [
        message_text(m)
        for m in requests_of(scripted, "research-subagent")[-1]["body"]["messages"]
        if m["role"] == "tool"
    ]
    assert "Query refused for API key [redacted]" in sent[1], "the search API did not echo the key"
    assert SEARCH_KEY not in await agent_server.log_after_run(run.thread_id)
    assert SEARCH_KEY not in json.dumps(run.parts)
    assert SEARCH_KEY not in thread_state_without_recorded_keys(run)
