"""A second, independent MCP client against the agent's ``/mcp``: the MCP inspector's CLI from npm
(``@modelcontextprotocol/inspector --cli``, pinned in ``tests/js/package-lock.json``, on the TypeScript
SDK), as a person checks a server from a shell: it lists the tools and calls ``research``."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from testkit.agent_server import PROJECT_ROOT
from testkit.scenarios import orchestrator, plan_and_delegate, researcher_reads, scenario, submit
from testkit.web import ARTICLES

pytestmark = pytest.mark.e2e

INSPECTOR = PROJECT_ROOT / "tests" / "js" / "node_modules" / ".bin" / "mcp-inspector"


def inspect(server_url: str, *args: str, timeout: float = 180) -> Any:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, and ./run.sh test could not install Debian's nodejs and npm packages")
    if not INSPECTOR.exists():
        pytest.fail("tests/js/node_modules has no MCP inspector: run `npm ci` in tests/js (./run.sh test does)")
    done = subprocess.run(
        [str(INSPECTOR), "--cli", f"{server_url}/mcp", "--transport", "http", *args],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_the_inspector_lists_the_research_tools_with_their_input_schemas(agent_server):
    listed = inspect(agent_server.url, "--method", "tools/list")

    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert set(tools) == {"research", "follow_up", "get_report", "get_evidence"}
    assert tools["research"]["inputSchema"]["required"] == ["question"]
    assert "never asks" in tools["research"]["description"]


def test_the_inspector_calls_research_and_gets_the_cited_report(agent_server, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the energy density of sodium-glass batteries"),
                submit(f"# Sodium-glass batteries\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] Halvorsen — {url}\n"),
            ),
            researcher_reads(url, query="sodium glass battery", finding="412 Wh/kg", quote="412 Wh/kg"),
        )
    )

    called = inspect(
        agent_server.url, "--method", "tools/call", "--tool-name", "research",
        "--tool-arg", "question=How dense are sodium-glass batteries?",
    )  # fmt: skip

    assert not called.get("isError"), called
    report = called["content"][0]["text"]
    assert report.startswith("# Sodium-glass batteries") and "## Sources" in report
    assert called["structuredContent"]["claims"]["supported"] == 1
