"""A client command starts at once: it loads what it uses, never the agent's framework or its graph.

``python -m deep_research_agent.cli`` used to load langchain, langgraph, deepagents and the graph's modules
for every command, about four seconds here before ``corpus search`` ran its 9 ms query. Each test runs one
command in a fresh interpreter, as ``./run.sh`` does, and reads which modules it loaded. How long each
command takes to start is ``bench/cli_startup.py``'s to measure: a timing assertion here would measure how
busy the machine is.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.empty_server import empty_server

ROOT = Path(__file__).resolve().parents[1]

# The agent's framework and what only the agent calls: no client command needs any of it.
FRAMEWORK = frozenset(
    {
        "langchain",
        "langgraph",
        "deepagents",
        "langsmith",
        "langchain_openai",
        "openai",
        "mcp",
        "tavily",
        "trafilatura",
        "pypdf",
    }
)
# The graph and the layers that only wrap agents: a client command needs none of them either.
AGENT_MODULES = tuple(
    f"deep_research_agent.{unit}"
    for unit in ("graph", "lifecycle", "guards", "modelcalls", "handover", "delivery", "tools", "mcp", "extensions")
)
# The server's client and what it imports: loaded by a command once it talks to a server, never before.
SERVER_CLIENT = frozenset({"langgraph_sdk", "langchain_core", "httpx"})

# Runs the CLI's entry point as ``python -m`` would, then writes the exit status and every loaded module.
PROBE = """
import json, sys
from deep_research_agent.cli.__main__ import main

report, argv = sys.argv[1], sys.argv[2:]
try:
    status = main(argv)
except SystemExit as exit_:
    status = exit_.code
with open(report, "w", encoding="utf-8") as out:
    json.dump({"status": status, "modules": sorted(sys.modules)}, out)
"""


def command(tmp_path: Path, *argv: str, env: dict[str, str]) -> tuple[int, set[str], str]:
    """Run the CLI on ``argv``: its exit status, the modules it loaded (top-level and ours), its output."""
    report = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert report.exists(), result.stderr
    found = json.loads(report.read_text(encoding="utf-8"))
    modules = {m.split(".")[0] for m in found["modules"]} | {
        m for m in found["modules"] if m.startswith("deep_research_agent.")
    }
    return found["status"], modules, result.stdout + result.stderr


def agent_modules(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.startswith(AGENT_MODULES))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "DRA_DATA_DIR": str(tmp_path / "data"), "DRA_CORPORA": "", "COLUMNS": "200"}


@pytest.fixture
def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_corpus_list_and_search_load_neither_the_framework_nor_a_server_client(tmp_path, env):
    documents = tmp_path / "docs"
    documents.mkdir()
    (documents / "vacuum.md").write_text(
        "# VACUUM\n\nVACUUM reclaims storage occupied by dead tuples in PostgreSQL tables.\n", encoding="utf-8"
    )
    added = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "corpus", "add", "pg", str(documents)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr

    for argv, shown in ((("corpus", "list"), "pg (added)"), (("corpus", "search", "pg", "dead tuples"), "VACUUM")):
        status, modules, output = command(tmp_path, *argv, env=env)

        assert status == 0 and shown in output, output
        assert modules & (FRAMEWORK | SERVER_CLIENT) == set(), f"{' '.join(argv)} loaded them"
        assert agent_modules(modules) == [], f"{' '.join(argv)} loaded them"


@pytest.mark.parametrize(
    "argv",
    [
        ("ask", "How dense are sodium cells?"),
        ("steer", "thread-1", "also cover costs"),
        ("tasks",),
        ("kb", "list"),
        ("schedule", "list"),
    ],
    ids=lambda argv: argv[0],
)
def test_a_command_for_the_server_gets_as_far_as_finding_none_without_loading_the_framework(
    tmp_path, env, closed_url, argv
):
    status, modules, output = command(tmp_path, *argv, "--url", closed_url, env=env)

    assert status == 2 and closed_url in output, output
    assert modules & (FRAMEWORK | {"langgraph_sdk", "langchain_core"}) == set()
    assert agent_modules(modules) == []


@pytest.fixture
def store_server() -> Iterator[str]:
    with empty_server() as url:
        yield url


@pytest.mark.parametrize(
    ("argv", "shown"),
    [(("tasks",), "No tasks for user anonymous."), (("kb", "list"), "Dataset 'main' of user 'anonymous': 0 entries.")],
    ids=lambda value: value[0] if isinstance(value, tuple) else "",
)
def test_a_command_that_reaches_the_server_loads_its_client_and_still_none_of_the_framework(
    tmp_path, env, store_server, argv, shown
):
    status, modules, output = command(tmp_path, *argv, "--url", store_server, env=env)

    assert status == 0 and shown in output, output
    # The SDK imports langchain_core at its top level (its streaming types): that is the client's own cost.
    assert "langgraph_sdk" in modules
    assert modules & FRAMEWORK == set()
    assert agent_modules(modules) == []
