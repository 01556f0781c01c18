"""A question is checked at every entrance before anything runs, through the real ``langgraph dev``: an empty,
blank or over-long one costs no model call, whether it comes through the SDK (as generic UIs and the web UI
send it), ``./run.sh ask`` or the MCP tools, and the asker reads why; ``ask`` takes a question longer than
an argument may be from stdin or a file. The web UI's own check is in test_web_ui.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.agent_server import stream_run
from testkit.mcp_caller import mcp_session, text_of
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
from testkit.scripted_model import turn

pytestmark = pytest.mark.e2e

# The session server's DRA_MAX_QUESTION_CHARS: the default.
LIMIT = 200_000
BLANK = [pytest.param("", id="empty"), pytest.param("  \n\t  ", id="blank")]
REPORT = "# Sodium-glass batteries\n\nThey are dense.\n\n## Sources\n"


def research_scenario(brief: str = "Find the energy density of sodium-glass batteries") -> dict:
    """A full research run, so a question that got through would show as model calls."""
    return scenario(
        orchestrator(plan_and_delegate(brief), submit(REPORT)),
        researcher(turn(content=findings_json("They are dense.")), repeat_last=True),
    )


@pytest.mark.anyio
@pytest.mark.parametrize("question", BLANK)
async def test_a_blank_question_sent_through_the_sdk_ends_at_once_without_a_model_call(
    agent_server, scripted, question
):
    scripted.set_scenario(research_scenario())

    run = await stream_run(agent_server.url, question)

    [end] = run.end_statuses
    assert (end["state"], end["reason"]) == ("error", "invalid_question")
    assert end["detail"].startswith("The question is empty, so no research was started")
    assert scripted.requests() == [], "a blank question made model calls"
    last = run.values["messages"][-1]
    assert last["type"] == "ai" and last["content"].startswith("The question is empty"), "generic UIs show why"
    assert not run.values.get("final_report") and run.values.get("outcome") is None


@pytest.mark.anyio
async def test_a_question_over_the_servers_limit_ends_at_once_saying_how_long_it_may_be(agent_server, scripted):
    scripted.set_scenario(research_scenario())

    run = await stream_run(agent_server.url, "Compare: " + "x" * LIMIT)

    [end] = run.end_statuses
    assert (end["state"], end["reason"]) == ("error", "invalid_question")
    assert f"The question is {LIMIT + 9:,} characters long and this server takes at most {LIMIT:,}" in end["detail"]
    assert scripted.requests() == []


def ask(url: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "ask", "--url", url, *args],
        input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"},
    )  # fmt: skip


def test_ask_refuses_a_blank_question_before_sending_anything(agent_server, scripted):
    # One case: the empty one is read_question's unit test (tests/test_questions.py), and each CLI start costs seconds.
    scripted.set_scenario(research_scenario())

    done = ask(agent_server.url, "  \n\t  ")

    assert done.returncode == 2, done.stdout + done.stderr
    assert "The question is empty, so no research was started" in done.stdout
    assert scripted.requests() == []


def test_ask_takes_a_question_longer_than_an_argument_may_be_from_a_file_or_from_stdin(
    agent_server, scripted, tmp_path: Path
):
    # Linux refuses one argument over 128 KiB; the question goes as typed, paragraphs and all.
    question = "Given these notes:\n\n" + "A measured cell. " * 9_000 + "\n\nHow dense are sodium-glass batteries?"
    assert len(question.encode()) > 131_072
    path = tmp_path / "question.txt"
    path.write_text(question + "\n", encoding="utf-8")

    for args, stdin in (((f"--question-file={path}",), None), (("-",), question)):
        scripted.set_scenario(research_scenario())

        done = ask(agent_server.url, "--no-clarify", *args, stdin=stdin)

        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        [first, *_] = requests_of(scripted, "orchestrator")
        [asked] = [m for m in first["body"]["messages"] if m["role"] == "user"]
        assert message_text(asked) == question, f"{args}: the question did not arrive as written"
        assert "Sodium-glass batteries" in done.stdout


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "extra"), [("research", {}), ("follow_up", {"thread_id": "no-such-thread"})])
@pytest.mark.parametrize("question", BLANK)
async def test_the_mcp_tools_refuse_a_blank_question_before_any_run(agent_server, scripted, tool, extra, question):
    scripted.set_scenario(research_scenario())

    async with mcp_session(agent_server.url) as session:
        result = await session.call_tool(tool, {**extra, "question": question})

    assert result.isError and "The question is empty, so no research was started" in text_of(result)
    assert scripted.requests() == []


@pytest.mark.anyio
async def test_the_mcp_research_tool_states_the_limit_in_its_schema_and_refuses_a_longer_question(
    agent_server, scripted
):
    scripted.set_scenario(research_scenario())

    async with mcp_session(agent_server.url) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        result = await session.call_tool("research", {"question": "x" * 1_000_000})

    for name in ("research", "follow_up"):
        schema = tools[name].inputSchema["properties"]["question"]
        assert (schema["minLength"], schema["maxLength"], schema["pattern"]) == (1, LIMIT, r"\S"), name
    assert result.isError
    assert f"The question is 1,000,000 characters long and this server takes at most {LIMIT:,}" in text_of(result)
    assert scripted.requests() == []
