"""The knowledge base end to end: ``remember`` and ``query`` through ``langgraph dev``, its store and the SDK.

Research sub-agents remember snippets of the pages they read into the user's dataset in the server's
LangGraph store; a later run queries them and cites the snippet's original source, verified against the
stored text. Users are kept apart by namespace; operators list, export and delete a dataset with
``python -m deep_research_agent.cli kb`` (what ``./run.sh kb`` runs). A second server with a store that
fails or delays marked writes shows that a failed write never fails the run and that queued writes are
stored before the run ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client

from deep_research_agent.knowledge.namespace import knowledge_namespace
from testkit.agent_server import PROJECT_ROOT, AgentServer, RunResult, stream_run
from testkit.flaky_store import FAILING_MARK, SLOW_MARK, SLOW_S
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
from testkit.scripted_model import call, turn
from testkit.web import ARTICLES
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

QUOTE = "reached an energy density of 412 Wh/kg in independent tests"
SNIPPET = f"The sodium-glass Halvorsen cell of the Nordlys Institute {QUOTE} (March 2024)."
QUESTION = "What energy density did the Halvorsen cell reach?"
UNIT = "Find the energy density of the Halvorsen cell"


def new_user() -> str:
    # A period and an @, as in an e-mail address: a store label may hold neither period nor be empty.
    return f"ada.{uuid.uuid4().hex[:8]}@example.org"


def halvorsen(web: Any) -> str:
    return web.url(ARTICLES["halvorsen-cell"].path)


def report_citing(url: str) -> dict[str, Any]:
    return submit(
        f"# Halvorsen cell\n\nThe Halvorsen cell reached 412 Wh/kg in independent tests [1].\n\n## Sources\n[1] Halvorsen cell — {url}\n"
    )


def finding(url: str) -> list[dict[str, str]]:
    return [{"finding": "The Halvorsen cell reached 412 Wh/kg.", "evidence": QUOTE, "source": url}]


def tool_results(scripted: Any, tool: str) -> list[str]:
    """What the research sub-agent read back from ``tool``, in order (from its last model request)."""
    messages = requests_of(scripted, "research-subagent")[-1]["body"]["messages"]
    names = {
        c["id"]: c["function"]["name"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []
    }
    return [message_text(m) for m in messages if m["role"] == "tool" and names.get(m.get("tool_call_id")) == tool]


async def dataset_items(url: str, user: str, dataset: str = "main") -> list[dict[str, Any]]:
    found = await get_client(url=url).store.search_items(list(knowledge_namespace(user, dataset)), limit=100)
    return found["items"]


async def research(
    server: str, scripted: Any, researcher_agent: dict[str, Any], *then: dict[str, Any], user: str, **configurable: Any
) -> RunResult:
    scripted.set_scenario(scenario(orchestrator(plan_and_delegate(UNIT), *then), researcher_agent))
    return await stream_run(server, QUESTION, configurable={"user_id": user, **configurable}, timeout=90)


async def remember_snippet(server_url: str, scripted, url: str, *, user: str) -> None:
    """A run whose researcher stores SNIPPET from ``url`` in ``user``'s knowledge base and waits for it."""
    await research(
        server_url,
        scripted,
        researcher(
            turn(tool_calls=[call("remember", text=SNIPPET, source=url, sync=True)]),
            turn(content=findings_json("Stored.")),
        ),
        submit("# Stored\n\nNothing to report.\n\n## Sources\n"),
        user=user,
    )


async def test_a_snippet_remembered_in_one_run_is_queried_there_and_cited_from_the_knowledge_base_in_the_next(
    agent_server, scripted, web
):
    url, user = halvorsen(web), new_user()

    first = await research(
        agent_server.url,
        scripted,
        researcher(
            turn(tool_calls=[call("web_fetch", url=url)]),
            turn(tool_calls=[call("remember", text=SNIPPET, source=url, sync=True)]),
            turn(tool_calls=[call("query", question="Halvorsen cell energy density")]),
            turn(content=findings_json("412 Wh/kg.", finding(url))),
        ),
        report_citing(url),
        user=user,
    )

    assert end_of(first) == ("done", "report_delivered")
    [remembered] = tool_results(scripted, "remember")
    assert remembered.startswith("remembered (entry kb-") and "searchable now" in remembered
    [answer] = tool_results(scripted, "query")
    # The server embeds with the bundled model, so the entry is found by meaning and by its words.
    assert answer.startswith("Knowledge base (dataset 'main', search by meaning and words over 1 entry): 1 entry for")
    assert f'source="{url}"' in answer and SNIPPET in answer
    [item] = await dataset_items(agent_server.url, user)
    assert (item["value"]["text"], item["value"]["source"], item["value"]["run_id"]) == (SNIPPET, url, first.run_id)
    assert item["value"]["remembered_at"]

    second = await research(
        agent_server.url,
        scripted,
        researcher(
            turn(tool_calls=[call("query", question="What energy density did the Halvorsen cell reach?")]),
            turn(content=findings_json("412 Wh/kg, from the knowledge base.", finding(url))),
        ),
        report_citing(url),
        user=user,
    )

    assert end_of(second) == ("done", "report_delivered")
    assert second.of_type("page_fetched") == [], "the second run reads no page: the knowledge base answers it"
    [evidence] = second.values["evidence"]
    assert (evidence["kind"], evidence["url"], evidence["chars"]) == ("knowledge", url, len(SNIPPET))
    [claim] = second.values["citations"]
    assert claim["verdict"] == "supported"
    [source] = claim["sources"]
    assert source["url"] == url and source["evidence_id"] == evidence["id"] and QUOTE in source["sentence"]
    assert [(c["url"], c["verified"]) for c in second.values["cited_sources"]] == [(url, True)]
    assert [s["url"] for s in second.values["sources"]] == [url]


async def test_an_invented_figure_cited_to_a_knowledge_entry_is_checked_against_the_stored_snippet(
    agent_server, scripted, web
):
    url, user = halvorsen(web), new_user()
    await remember_snippet(agent_server.url, scripted, url, user=user)
    invented = "The Halvorsen cell reached 530 Wh/kg in independent tests [1]."

    run = await research(
        agent_server.url,
        scripted,
        researcher(
            turn(tool_calls=[call("query", question="Halvorsen energy density")]),
            turn(content=findings_json("412 Wh/kg.", finding(url))),
        ),
        submit(f"# Halvorsen cell\n\n{invented}\n\n## Sources\n[1] Halvorsen cell — {url}\n"),
        submit(f"# Halvorsen cell\n\n{invented}\n\n## Sources\n[1] Halvorsen cell — {url}\n"),
        user=user,
    )

    [claim] = run.values["citations"]
    assert (claim["verdict"], claim["tokens"]) == ("unsupported_number", ["530 Wh/kg"])
    assert claim["sources"][0]["url"] == url and QUOTE in claim["sources"][0]["sentence"]


async def test_one_user_never_reads_another_user_s_entries(agent_server, scripted, web):
    url, alice, bob = halvorsen(web), new_user(), new_user()
    await remember_snippet(agent_server.url, scripted, url, user=alice)

    run = await research(
        agent_server.url,
        scripted,
        researcher(
            turn(tool_calls=[call("query", question="Halvorsen cell energy density")]),
            turn(content=findings_json("Nothing known.", gaps=["the energy density"])),
        ),
        submit("# Halvorsen cell\n\nThe knowledge base held nothing on it.\n\n## Sources\n"),
        user=bob,
    )

    [answer] = tool_results(scripted, "query")
    assert (
        answer
        == "The knowledge base (dataset 'main') is empty: nothing has been remembered in it yet. Research on the web."
    )
    assert run.values["evidence"] == []
    assert len(await dataset_items(agent_server.url, alice)) == 1 and await dataset_items(agent_server.url, bob) == []


async def test_an_oversized_snippet_is_refused_with_guidance_and_nothing_is_stored(agent_server, scripted, web):
    url, user = halvorsen(web), new_user()

    run = await research(
        agent_server.url,
        scripted,
        researcher(
            turn(tool_calls=[call("remember", text="x" * 20_001, source=url)]),
            turn(content=findings_json("Nothing stored.")),
        ),
        submit("# Nothing\n\nNothing to report.\n\n## Sources\n"),
        user=user,
    )

    assert end_of(run) == ("done", "report_delivered")
    [refusal] = tool_results(scripted, "remember")
    assert refusal.startswith("TOOL ERROR (remember, permanent): the text has 20,001 characters, over the 20,000")
    assert "Store only the important part" in refusal
    assert await dataset_items(agent_server.url, user) == []


def kb(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "kb", *args, "--url", url],
        capture_output=True, text=True, timeout=60, env=env, cwd=PROJECT_ROOT,
    )  # fmt: skip


async def test_kb_lists_exports_and_deletes_a_dataset_that_remember_findings_filled(
    agent_server, scripted, web, tmp_path
):
    url, user = halvorsen(web), new_user()
    run = await research(
        agent_server.url,
        scripted,
        researcher(
            turn(tool_calls=[call("web_fetch", url=url)]), turn(content=findings_json("412 Wh/kg.", finding(url)))
        ),
        report_citing(url),
        user=user,
        knowledge_dataset="batteries",
        remember_findings=True,
    )
    assert end_of(run) == ("done", "report_delivered")
    [item] = await dataset_items(agent_server.url, user, "batteries")
    assert (item["value"]["text"], item["value"]["note"], item["value"]["source"]) == (
        QUOTE,
        "The Halvorsen cell reached 412 Wh/kg.",
        url,
    )

    listed = kb(agent_server.url, "list", "--user", user, "--dataset", "batteries")
    assert listed.returncode == 0, listed.stderr
    assert f"Dataset 'batteries' of user '{user}': 1 entry." in listed.stdout
    assert item["key"] in listed.stdout and url in listed.stdout and QUOTE in listed.stdout
    everything = kb(agent_server.url, "list")
    assert f"{user} / batteries" in everything.stdout

    out = tmp_path / "kb.jsonl"
    exported = kb(agent_server.url, "export", "--user", user, "--dataset", "batteries", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    [line] = out.read_text().splitlines()
    assert json.loads(line) == {"id": item["key"], **item["value"]}

    refused = kb(agent_server.url, "delete", "--user", user, "--dataset", "batteries")
    assert refused.returncode == 2 and "pass --yes" in refused.stdout
    assert len(await dataset_items(agent_server.url, user, "batteries")) == 1
    deleted = kb(agent_server.url, "delete", "--user", user, "--dataset", "batteries", "--yes")
    assert deleted.returncode == 0 and "Deleted 1 entries" in deleted.stdout
    assert await dataset_items(agent_server.url, user, "batteries") == []


@pytest.fixture(scope="module")
def flaky_server(model_server: Any, web_server: Any) -> Iterator[AgentServer]:
    """A second dev server whose store fails writes marked FAILING_MARK and delays those marked SLOW_MARK."""
    server = AgentServer(
        agent_env(model_server, web_server),
        jobs=2,
        store={"path": f"{PROJECT_ROOT / 'testkit/flaky_store.py'}:make_store"},
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_snippet_still_queued_when_the_run_ends_is_stored_before_the_run_ends(flaky_server, scripted, web):
    url, user = halvorsen(web), new_user()
    slow = f"{SLOW_MARK} {SNIPPET}"

    run = await research(
        flaky_server.url,
        scripted,
        researcher(
            turn(tool_calls=[call("remember", text=slow, source=url)]),
            turn(content=findings_json("Queued.")),
        ),
        submit("# Queued\n\nNothing to report.\n\n## Sources\n"),
        user=user,
    )

    assert end_of(run) == ("done", "report_delivered")
    [queued] = tool_results(scripted, "remember")
    assert queued.startswith("queued (entry kb-") and "kept even if the run ends first" in queued
    # The write takes SLOW_S; the end of the run waited for it, so it is there as soon as the stream ends.
    [item] = await dataset_items(flaky_server.url, user)
    assert item["value"]["text"] == slow and SLOW_S >= 1
    assert [s for s in run.statuses("warning") if s.get("reason") == "knowledge_write_failed"] == []


async def test_a_failing_store_write_is_a_classified_error_and_the_report_is_still_delivered(
    flaky_server, scripted, web
):
    url, user = halvorsen(web), new_user()
    failing = f"{FAILING_MARK} {SNIPPET}"

    run = await research(
        flaky_server.url,
        scripted,
        researcher(
            turn(tool_calls=[call("remember", text=failing, source=url, sync=True)]),
            turn(tool_calls=[call("remember", text=f"{failing} (queued)", source=url)]),
            turn(content=findings_json("Not stored.")),
        ),
        submit("# Not stored\n\nThe knowledge base could not store the snippet.\n\n## Sources\n"),
        user=user,
    )

    assert end_of(run) == ("done", "report_delivered")
    assert run.values["final_report"].startswith("# Not stored")
    waited, queued = tool_results(scripted, "remember")
    assert waited.startswith("TOOL ERROR (remember, transient): the knowledge base could not store entry kb-")
    assert "(ConnectionError); it is not stored. Retry once later, or continue without it." in waited
    assert queued.startswith("queued (entry kb-")
    warnings = [s for s in run.statuses("warning") if s.get("reason") == "knowledge_write_failed"]
    assert len(warnings) == 2 and all(url in w["detail"] for w in warnings)
    assert await dataset_items(flaky_server.url, user) == []
    assert run.end_statuses[-1]["outcome"] == "recording_failed" and run.values["outcome"] == "recording_failed"
