"""The agent as an MCP server: the product's own ``/mcp`` (streamable HTTP, on the agent server's port),
driven by the real ``mcp`` Python client (and langchain-mcp-adapters) the way another agent uses it: the tools and their schemas, a
research call that answers the checked report with its counts and progress, follow-ups, reading a
thread's report and evidence back, cancellation, and each user seeing only their own threads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient

from testkit.agent_server import PROJECT_ROOT, AgentServer
from testkit.mcp_caller import Progress, mcp_session, research_then_cancel, text_of, what_others_get
from testkit.scenarios import (
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher_finds_then_hangs,
    researcher_reads,
    scenario,
    submit,
    would_ask_but_cannot,
)
from testkit.web import ARTICLES
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

QUESTION = "How dense are sodium-glass batteries?"
TOOLS = {"research", "follow_up", "get_report", "get_evidence"}


def cited_report(url: str, title: str = "Sodium-glass batteries") -> str:
    return f"# {title}\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] Halvorsen — {url}\n"


def research_turns(url: str, title: str = "Sodium-glass batteries") -> tuple[dict[str, Any], ...]:
    return plan_and_delegate("Find the energy density of sodium-glass batteries"), submit(cited_report(url, title))


def reads_halvorsen(url: str) -> dict[str, Any]:
    return researcher_reads(url, query="sodium glass battery", finding="412 Wh/kg", quote="412 Wh/kg")


async def test_the_server_lists_the_research_tools_with_schemas_and_descriptions_for_a_calling_model(agent_server):
    async with mcp_session(agent_server.url) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}

    assert set(tools) == TOOLS, "the built-in /mcp (one deep_research_agent tool) should be superseded"
    research = tools["research"]
    assert "cited" in research.description and "never asks" in research.description
    schema = research.inputSchema
    assert schema["required"] == ["question"]
    assert schema["properties"]["question"]["type"] == "string"
    assert set(schema["properties"]) == {"question", "tier", "corpora", "max_cost_usd", "max_minutes"}
    assert all(prop.get("description") for prop in schema["properties"].values())
    tier_options = [option for option in schema["properties"]["tier"]["anyOf"] if "enum" in option]
    assert tier_options[0]["enum"] == ["extra-low", "low", "mid", "high"]
    output = research.outputSchema
    assert output is not None
    assert {"report", "sources", "claims", "citation_accuracy", "outcome", "thread_id", "cost_usd"} <= set(
        output["properties"]
    )
    assert tools["follow_up"].inputSchema["required"] == ["thread_id", "question"]
    assert tools["get_report"].inputSchema["required"] == ["thread_id"]
    assert tools["get_evidence"].annotations.readOnlyHint is True


async def test_research_answers_the_checked_report_as_markdown_with_its_counts_and_reports_progress(
    agent_server, scripted, web
):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(scenario(orchestrator(*research_turns(url)), reads_halvorsen(url)))
    progress = Progress()

    async with mcp_session(agent_server.url) as session:
        result = await session.call_tool("research", {"question": QUESTION}, progress_callback=progress)

    assert not result.isError, text_of(result)
    report = result.content[0].text
    assert report.startswith("# Sodium-glass batteries") and "## Sources" in report and url in report
    assert "additional_kwargs" not in text_of(result) and "HumanMessage" not in text_of(result)
    facts = result.structuredContent
    assert facts["report"] == report
    assert facts["claims"]["claims"] == 1 and facts["claims"]["supported"] == 1
    assert facts["citation_accuracy"] == 1.0
    assert (facts["outcome"], facts["end"], facts["partial"]) == ("answered", "done/report_delivered", False)
    assert [source["url"] for source in facts["sources"]] == [url]
    assert facts["cost_usd"] is not None and facts["run_seconds"] > 0 and facts["run_id"]
    assert "claims: 1 of 1 claim checked; 1 supported (citation accuracy 100%)" in result.content[1].text
    assert any(m.startswith("Research started") and facts["thread_id"] in m for m in progress.messages)
    assert any(m.startswith("Research unit started") for m in progress.messages)
    assert any(m.startswith("Research unit done") for m in progress.messages)
    assert any(m.startswith("Source read") for m in progress.messages)
    first = requests_of(scripted, "orchestrator")[0]["body"]
    assert "request_clarification" not in {tool["function"]["name"] for tool in first["tools"]}
    [user_message] = [m for m in first["messages"] if m["role"] == "user"]
    assert message_text(user_message) == QUESTION


async def test_a_question_that_would_be_clarified_gets_a_report_on_stated_assumptions(agent_server, scripted):
    scripted.set_scenario(would_ask_but_cannot())

    async with mcp_session(agent_server.url) as session:
        result = await session.call_tool("research", {"question": "Tell me about kelp farms."})

    assert not result.isError, text_of(result)
    assert result.content[0].text.startswith("# Kelp farms\n\nAssumed: worldwide")
    assert "Which region?" not in text_of(result)
    assert result.structuredContent["end"] == "done/report_delivered"


async def test_follow_up_continues_the_thread_and_its_report_and_evidence_can_be_read_back(agent_server, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(*research_turns(url), *research_turns(url, "Sodium-glass batteries, revisited")),
            reads_halvorsen(url),
        )
    )

    async with mcp_session(agent_server.url) as session:
        first = await session.call_tool("research", {"question": QUESTION})
        thread_id = first.structuredContent["thread_id"]
        again = await session.call_tool("follow_up", {"thread_id": thread_id, "question": "And their cost?"})
        report = await session.call_tool("get_report", {"thread_id": thread_id})
        evidence = await session.call_tool("get_evidence", {"thread_id": thread_id})

    assert not again.isError, text_of(again)
    assert again.structuredContent["thread_id"] == thread_id
    assert again.content[0].text.startswith("# Sodium-glass batteries, revisited")
    follow_up_request = requests_of(scripted, "orchestrator")[2]["body"]["messages"]
    users = [message_text(m) for m in follow_up_request if m["role"] == "user"]
    assert users == [QUESTION, "And their cost?"], "the follow-up did not see the thread's earlier turn"
    assert report.content[0].text.startswith("# Sodium-glass batteries, revisited")
    assert report.structuredContent["claims"]["supported"] == 1
    records = evidence.structuredContent["records"]
    assert any(r["url"] == url and "412 Wh/kg" in r["text"] for r in records)
    assert url in text_of(evidence)


async def test_langchain_mcp_adapters_give_another_agent_the_research_tool_and_its_report(agent_server, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(scenario(orchestrator(*research_turns(url)), reads_halvorsen(url)))
    client = MultiServerMCPClient({"agent": {"transport": "streamable_http", "url": f"{agent_server.url}/mcp"}})
    tools = {tool.name: tool for tool in await client.get_tools(server_name="agent")}

    answer = await tools["research"].ainvoke({"question": QUESTION})

    assert set(tools) == TOOLS
    text = answer if isinstance(answer, str) else "\n".join(block.get("text", "") for block in answer)
    assert text.startswith("# Sodium-glass batteries") and "## Sources" in text
    assert "1 of 1 claim checked; 1 supported" in text


async def test_reading_a_thread_that_does_not_exist_is_a_tool_error(agent_server):
    async with mcp_session(agent_server.url) as session:
        result = await session.call_tool("get_report", {"thread_id": "00000000-0000-0000-0000-000000000000"})

    assert result.isError and "No thread" in text_of(result)


async def test_cancelling_a_research_call_stops_the_run_and_leaves_the_report_of_what_was_found(
    agent_server, scripted, web
):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass batteries"), submit("# Never\n")),
            researcher_finds_then_hangs(url),
        )
    )
    async with mcp_session(agent_server.url) as session:
        cancelled = await research_then_cancel(
            session, QUESTION, reached=lambda: len(requests_of(scripted, "research-subagent")) >= 3, timeout=60
        )

    assert cancelled.answer is None and "cancelled" in str(cancelled.error).lower()
    report = cancelled.report
    assert not report.isError, text_of(report)
    assert "412 Wh/kg" in report.content[0].text
    assert report.structuredContent["outcome"] is not None
    assert len(requests_of(scripted, "orchestrator")) == 1, "the stopped run went on to write its own report"


# --- each user sees only their own threads ------------------------------------------------------------------

USERS = ("alice", "bob")


def token(user: str) -> str:
    return f"tok-{user}-0123456789abcdef"


@pytest.fixture(scope="module")
def guarded_server(model_server, web_server):
    """A ``langgraph dev`` with bearer-token users whose threads are their own (``testkit/owner_auth.py``)."""
    env = {**agent_env(model_server, web_server), "DRA_AUTH_TOKENS": ",".join(f"{u}={token(u)}" for u in USERS)}
    auth_path = Path(PROJECT_ROOT) / "testkit" / "owner_auth.py"
    server = AgentServer(env, auth={"path": f"{auth_path}:auth"}).start(timeout=180)
    try:
        yield server
    finally:
        server.stop()


async def test_a_second_user_cannot_read_the_first_users_report_or_evidence(guarded_server, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(scenario(orchestrator(*research_turns(url)), reads_halvorsen(url)))

    async with mcp_session(guarded_server.url, token("alice")) as alice:
        mine = await alice.call_tool("research", {"question": QUESTION})
        assert not mine.isError, text_of(mine)
        thread_id = mine.structuredContent["thread_id"]
        again = await alice.call_tool("get_report", {"thread_id": thread_id})
    # Behind the deployment's auth, a caller without a token is refused before any MCP session opens.
    others = await what_others_get(
        thread_id, other_url=guarded_server.url, other_token=token("bob"), anonymous_url=guarded_server.url
    )

    assert not again.isError, text_of(again)
    assert again.content[0].text.startswith("# Sodium-glass batteries")
    for answer in others.tool_answers():
        assert answer.isError and f"No thread {thread_id}" in text_of(answer)
        assert "412 Wh/kg" not in text_of(answer)
    assert others.anonymous_status == 401
    assert token("alice") not in guarded_server.log()
