"""A JS frontend against the real dev server: the LangGraph JS SDK streams a run and Ajv checks every event.

``tests/js/stream_run.mjs`` is the client, with pinned dependencies from ``tests/js/package-lock.json``.
``./run.sh test`` installs node when it is missing and the dependencies with ``npm ci``; these tests are
skipped only when no node that ``tests/js/package.json``'s engines accept could be installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

import pytest

from testkit.agent_server import GRAPH_ID, PROJECT_ROOT
from testkit.scenarios import orchestrator, plan_and_delegate, requests_of, researcher_reads, scenario, submit
from testkit.web import ARTICLES

pytestmark = pytest.mark.e2e

JS_DIR = PROJECT_ROOT / "tests" / "js"
QUESTION = "How dense are sodium-glass batteries?"


@pytest.fixture
def node() -> str:
    """The node executable; skips when none fits the engines of ``tests/js/package.json`` (``>=MAJOR``)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, and ./run.sh test could not install Debian's nodejs and npm packages")
    need = int(json.loads((JS_DIR / "package.json").read_text())["engines"]["node"].removeprefix(">="))
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.removeprefix("v").split(".")[0]) < need:
        pytest.skip(f"node {version} is older than the {need} tests/js needs, and no newer node could be installed")
    if not (JS_DIR / "node_modules").is_dir():
        pytest.fail("tests/js/node_modules is missing: run `npm ci` in tests/js (./run.sh test does)")
    return node


@pytest.fixture
def happy_path(scripted, web) -> None:
    """One research unit reads one page; the orchestrator delivers a report citing it."""
    article = ARTICLES["halvorsen-cell"]
    url = web.url(article.path)
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the energy density of sodium-glass batteries"),
                submit(
                    f"# Sodium-glass batteries\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] {article.title} — {url}\n"
                ),
            ),
            researcher_reads(url, query="sodium glass battery", finding="They reach 412 Wh/kg.", quote="412 Wh/kg"),
        )
    )


def stream_with_js(node: str, url: str, mode: str) -> dict[str, Any]:
    """Run the JS client in ``mode`` (``values``, ``custom`` or ``rejoin``) against the server and return its report."""
    done = subprocess.run(
        [node, str(JS_DIR / "stream_run.mjs"), mode, url, GRAPH_ID, QUESTION],
        cwd=JS_DIR, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def task_call_ids(scripted) -> set[str]:
    """The ids of the orchestrator's ``task`` calls, as the model server handed them out."""
    return {
        call["id"]
        for request in requests_of(scripted, "orchestrator")
        for message in request["body"]["messages"]
        if message["role"] == "assistant"
        for call in message.get("tool_calls") or ()
        if call["function"]["name"] == "task"
    }


def test_every_custom_event_validates_in_ajv_strict_mode_and_sub_agent_events_are_namespaced(
    node, agent_server, scripted, happy_path
):
    report = stream_with_js(node, agent_server.url, "custom")

    assert "error" not in report["parts"]
    assert report["untyped_definitions"] == []
    assert report["validated"] > 0
    assert report["failures"] == []
    assert {"run_start", "status", "report"} <= set(report["types"])
    from_subagents = report["subagent_events"]
    assert from_subagents
    assert all(event["namespace"].startswith("tools:") for event in from_subagents)
    assert {event["role"] for event in from_subagents} == {"research-subagent"}
    assert {event["task_id"] for event in from_subagents} == task_call_ids(scripted)


def test_a_finished_run_joined_from_its_start_replays_every_event_and_message_as_the_web_ui_rejoins_it(
    node, agent_server, scripted, happy_path
):
    report = stream_with_js(node, agent_server.url, "rejoin")

    assert report["failures"] == []
    types = [event["type"] for event in report["live"]]
    assert types[0] == "run_start" and {"search_query", "subagent_findings", "report", "usage"} <= set(types)
    assert report["replayed"] == report["live"], "a reloaded page would not see the run it missed"
    assert report["live_messages"] > 0 and report["replayed_messages"] == report["live_messages"]


def test_streaming_like_deep_agents_ui_ends_with_the_messages_and_the_final_report_in_the_values(
    node, agent_server, scripted, happy_path
):
    report = stream_with_js(node, agent_server.url, "values")

    assert "error" not in report["parts"]
    assert {"messages", "final_report"} <= set(report["keys"])
    first, *rest = report["messages"]
    assert (first["type"], first["content"]) == ("human", QUESTION)
    answer = [message for message in rest if message["type"] == "ai"][-1]
    body = report["final_report"].partition("## Sources")[0]
    assert re.sub(r"\[\[(\d+)\]\]\([^)\s]+\)", r"[\1]", answer["content"]).startswith(body), (
        "the report must be the last AI message a UI renders"
    )
    assert report["parts"]["values"] >= 1
