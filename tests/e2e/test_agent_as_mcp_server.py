"""The agent as an MCP server: LangGraph's ``/mcp`` endpoint (streamable HTTP, on the server's own port)
offers ``deep_research_agent`` as a tool, and a real MCP client (langchain-mcp-adapters) lists it, hands
it a question and gets the cited report back, against the scripted model."""

from __future__ import annotations

import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient

from testkit.scenarios import findings_json, orchestrator, plan_and_delegate, researcher, scenario, submit
from testkit.scripted_model import turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REPORT = "# Kelp carbon\n\nKelp forests store carbon in sediments.\n\n## Sources\n"


def mcp_client(agent_server) -> MultiServerMCPClient:
    return MultiServerMCPClient({"agent": {"transport": "streamable_http", "url": f"{agent_server.url}/mcp"}})


async def test_an_mcp_client_lists_the_research_tool_with_its_description_and_a_question_argument(agent_server):
    tools = {tool.name: tool for tool in await mcp_client(agent_server).get_tools(server_name="agent")}

    research = tools["deep_research_agent"]
    assert "cited report" in research.description
    assert research.args_schema["properties"]["messages"]["type"] == "string"


async def test_an_mcp_client_hands_it_a_question_and_gets_the_report_back(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Kelp forest carbon storage"), submit(REPORT)),
            researcher(turn(content=findings_json("Kelp stores carbon."))),
        )
    )
    [research] = [
        t for t in await mcp_client(agent_server).get_tools(server_name="agent") if t.name == "deep_research_agent"
    ]

    answer = await research.ainvoke(
        {"messages": "How much carbon do kelp forests store? Proceed on stated assumptions."}
    )

    text = answer if isinstance(answer, str) else " ".join(block.get("text", "") for block in answer)
    assert "Kelp forests store carbon in sediments." in text
    [first] = [r for r in scripted.requests() if r["agent"] == "orchestrator"][:1]
    assert "How much carbon do kelp forests store?" in str(first["body"]["messages"])
