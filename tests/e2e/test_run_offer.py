"""A run is offered only the tools it can use, decided once per run and announced in ``run_start``.

Through the session ``langgraph dev``: an untasked run whose user has no knowledge-base entries sees neither
the decision tools nor ``remember``/``query`` (nor the prompt text on them); a run that names a task sees
the decision tools and the task section; a user whose dataset has entries, or a run that remembers its
findings, gets the knowledge-base tools and section. Each model request carries exactly the tools
``run_start`` listed for its role.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langgraph_sdk import get_client

from deep_research_agent.knowledge.namespace import knowledge_namespace
from testkit.agent_server import RunResult, stream_run
from testkit.scenarios import (
    findings_json,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    scenario,
    submit,
    system_text,
)
from testkit.scripted_model import turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

DECISION_TOOLS = {"record_decision", "search_decisions"}
KNOWLEDGE_TOOLS = {"remember", "query"}
REPORT = "# Note\n\nNothing was found.\n\n## Sources\n"


def new_user() -> str:
    return f"offer.{uuid.uuid4().hex[:8]}@example.org"


def offered(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request["body"].get("tools") or ()]


async def research(server: str, scripted: Any, **configurable: Any) -> RunResult:
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Look for the note"), submit(REPORT)),
            researcher(turn(content=findings_json("Nothing found."))),
        )
    )
    return await stream_run(server, "What does the note say?", configurable=configurable, timeout=90)


def announced(run: RunResult) -> dict[str, list[str]]:
    [start] = run.of_type("run_start")
    return start["tools"]


def assert_requests_carry_the_announced_tools(run: RunResult, scripted: Any) -> None:
    tools = announced(run)
    for role in ("orchestrator", "research-subagent"):
        requests = requests_of(scripted, role)
        assert requests, role
        assert all(sorted(offered(r)) == sorted(tools[role]) for r in requests), role


async def test_an_untasked_run_without_knowledge_entries_is_offered_neither_and_run_start_says_so(
    agent_server, scripted
):
    run = await research(agent_server.url, scripted, user_id=new_user())

    tools = announced(run)
    assert set(tools) == {"orchestrator", "research-subagent"}, "no sandbox: no extract or coding roles"
    assert not DECISION_TOOLS & set(tools["orchestrator"])
    assert not KNOWLEDGE_TOOLS & set(tools["research-subagent"])
    assert "convert_units" not in {name for names in tools.values() for name in names}
    assert_requests_carry_the_announced_tools(run, scripted)
    assert "## Named tasks" not in system_text(requests_of(scripted, "orchestrator")[0]["body"])
    assert "## Knowledge base" not in system_text(requests_of(scripted, "research-subagent")[0]["body"])


async def test_a_run_that_names_a_task_is_offered_the_decision_tools_and_the_task_section(agent_server, scripted):
    run = await research(agent_server.url, scripted, user_id=new_user(), task=f"offer-{uuid.uuid4().hex[:6]}")

    assert DECISION_TOOLS <= set(announced(run)["orchestrator"])
    assert_requests_carry_the_announced_tools(run, scripted)
    assert "## Named tasks" in system_text(requests_of(scripted, "orchestrator")[0]["body"])
    assert not DECISION_TOOLS & set(announced(run)["research-subagent"])


async def test_a_user_whose_dataset_has_entries_is_offered_the_knowledge_base(agent_server, scripted):
    user = new_user()
    await get_client(url=agent_server.url).store.put_item(
        list(knowledge_namespace(user, "main")),
        "kb-offer",
        {"text": "The note moved the meeting to Thursday.", "source": "https://example.org/note"},
        index=False,
    )

    run = await research(agent_server.url, scripted, user_id=user)

    assert KNOWLEDGE_TOOLS <= set(announced(run)["research-subagent"])
    assert_requests_carry_the_announced_tools(run, scripted)
    assert "## Knowledge base" in system_text(requests_of(scripted, "research-subagent")[0]["body"])
    # Another user's entries offer this one nothing.
    other = await research(agent_server.url, scripted, user_id=new_user())
    assert not KNOWLEDGE_TOOLS & set(announced(other)["research-subagent"])


async def test_a_run_that_remembers_its_findings_is_offered_the_knowledge_base_on_an_empty_dataset(
    agent_server, scripted
):
    run = await research(agent_server.url, scripted, user_id=new_user(), remember_findings=True)

    assert KNOWLEDGE_TOOLS <= set(announced(run)["research-subagent"])
    assert_requests_carry_the_announced_tools(run, scripted)
    # With the knowledge base off, remembering offers nothing.
    off = await research(agent_server.url, scripted, user_id=new_user(), remember_findings=True, knowledge_base=False)
    assert not KNOWLEDGE_TOOLS & set(announced(off)["research-subagent"])
