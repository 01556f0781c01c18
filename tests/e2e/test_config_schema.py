"""Per-run settings through ``langgraph dev`` and the SDK: a client discovers them from the assistant's
``config_schema``, the way Studio builds its assistant form, and a run that sets one gets it."""

from __future__ import annotations

import json

import pytest
from langgraph_sdk import get_client

from deep_research_agent.settings import MODEL_TIERS, TIER_ORDER, config_json_schema
from testkit.agent_server import GRAPH_ID, stream_run
from testkit.scenarios import orchestrator, scenario, submit
from tests.conftest import E2E_MODEL_KEY

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REPORT = "# Sodium batteries\n\nSodium cells are cheaper than lithium cells.\n"


async def schemas_of_the_assistant(url: str) -> dict:
    client = get_client(url=url)
    [assistant] = await client.assistants.search(graph_id=GRAPH_ID)
    return await client.assistants.get_schemas(assistant["assistant_id"])


async def test_the_assistants_config_schema_lists_the_per_run_settings(agent_server):
    schemas = await schemas_of_the_assistant(agent_server.url)

    config = schemas["config_schema"]
    assert config == config_json_schema()
    assert config["properties"]["model_tier"]["enum"] == list(TIER_ORDER) == list(MODEL_TIERS)
    max_tool_calls = config["properties"]["max_tool_calls"]
    assert (max_tool_calls["type"], max_tool_calls["default"], max_tool_calls["minimum"]) == ("integer", 200, 0)
    assert "max_react_tool_calls" in max_tool_calls["description"]
    api_keys = config["$defs"][config["properties"]["apiKeys"]["$ref"].rsplit("/", 1)[1]]
    for key in ("OPENAI_API_KEY", "TAVILY_API_KEY"):
        assert api_keys["properties"][key]["writeOnly"] is True and api_keys["properties"][key]["format"] == "password"
        assert "default" not in api_keys["properties"][key]
    # No context schema: langgraph-api would filter every run's context by it.
    assert schemas["context_schema"] is None


async def test_the_schemas_never_show_a_key_the_server_holds(agent_server):
    schemas = await schemas_of_the_assistant(agent_server.url)

    assert E2E_MODEL_KEY not in json.dumps(schemas)


async def test_a_run_that_sets_a_published_key_gets_it(agent_server, scripted):
    scripted.set_scenario(scenario(orchestrator(submit(REPORT))))

    run = await stream_run(agent_server.url, "How cheap are sodium batteries?", configurable={"model_tier": "low"})

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    assert run.statuses("warning") == []
    assert {r["body"]["model"] for r in scripted.requests()} == {MODEL_TIERS["low"].research.slug}
