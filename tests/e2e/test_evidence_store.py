"""Where the pages a run read end up, through ``langgraph dev``: summaries in the thread state, full texts in the
server's store, served by ``GET /evidence/{thread_id}[/{run_id}]``."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest
from langgraph_sdk import get_client

from testkit.agent_server import GRAPH_ID, get_evidence, stored_records, stream_run
from testkit.scenarios import findings_json, orchestrator, plan_and_delegate, researcher, scenario, submit
from testkit.scripted_model import call, turn
from testkit.web import ARTICLES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

QUOTE = "reached an energy density of 412 Wh/kg in independent tests"
STATE_BYTES_LIMIT = 30_000
SUMMARY_KEYS = {"id", "url", "title", "kind", "retrieved_at", "agent", "sha256", "chars"}


def reads_pages(*urls: str, finding: str = "The Halvorsen cell reached 412 Wh/kg.", quote: str = QUOTE) -> dict:
    """A research sub-agent that reads every page at once, then hands back one finding quoting the first."""
    return researcher(
        turn(tool_calls=[call("web_fetch", url=url) for url in urls]),
        turn(content=findings_json(finding, [{"finding": finding, "evidence": quote, "source": urls[0]}])),
    )


def report_citing(url: str) -> dict:
    return submit(
        f"# Sodium-glass batteries\n\nThe Halvorsen cell reached 412 Wh/kg in independent tests [1].\n\n## Sources\n[1] Halvorsen — {url}\n"
    )


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def test_the_thread_state_keeps_short_evidence_entries_and_the_route_serves_the_full_texts(
    agent_server, scripted, web
):
    urls = [web.url(ARTICLES[slug].path) for slug in ("halvorsen-cell", "norre-bay-kelp", "long")]
    scripted.set_scenario(
        scenario(orchestrator(plan_and_delegate("Read three articles"), report_citing(urls[0])), reads_pages(*urls))
    )
    client = get_client(url=agent_server.url)
    thread_id = (await client.threads.create())["thread_id"]
    values_sizes, run_ids = [], []
    async for part in client.runs.stream(
        thread_id, GRAPH_ID, input={"messages": [{"role": "user", "content": "Read them."}]}, stream_mode="values"
    ):
        if part.event == "metadata":
            run_ids.append(part.data["run_id"])
        elif part.event == "values":
            values_sizes.append(len(json.dumps(part.data)))
    async with httpx.AsyncClient(base_url=agent_server.url, timeout=10) as http:
        state_read = await http.get(f"/threads/{thread_id}/state")

    evidence = state_read.json()["values"]["evidence"]
    pages = [e for e in evidence if e["kind"] == "page"]
    assert sorted(p["url"] for p in pages) == sorted(urls)
    assert all(set(e) == SUMMARY_KEYS for e in evidence), evidence
    assert sum(p["chars"] for p in pages) > 90_000, "the three pages hold over 90,000 characters of text"
    assert len(state_read.content) < STATE_BYTES_LIMIT and max(values_sizes) < STATE_BYTES_LIMIT

    [run_id] = run_ids
    answer = await get_evidence(agent_server.url, thread_id, run_id)
    assert answer.status_code == 200
    stored = answer.json()
    assert [r["id"] for r in stored] == [e["id"] for e in evidence]
    for entry, record in zip(evidence, stored, strict=True):
        assert record == {**entry, "run_id": run_id, "text": record["text"]}
        assert sha256(record["text"]) == entry["sha256"] and len(record["text"]) == entry["chars"]
    texts = {r["url"]: r["text"] for r in stored}
    assert QUOTE in texts[urls[0]] and "1,240 tonnes" in texts[urls[1]] and "47.3 percent" in texts[urls[2]]


async def test_the_thread_route_lists_every_run_s_texts_in_order_and_answers_404_where_nothing_is_stored(
    agent_server, scripted, web
):
    halvorsen, kelp = web.url(ARTICLES["halvorsen-cell"].path), web.url(ARTICLES["norre-bay-kelp"].path)
    battery_turns = (plan_and_delegate("Read the battery article"), report_citing(halvorsen))
    kelp_turns = (
        plan_and_delegate("Read the kelp article"),
        submit("# Kelp\n\nThe farm stored carbon.\n\n## Sources\n"),
    )
    client = get_client(url=agent_server.url)
    scripted.set_scenario(scenario(orchestrator(*battery_turns), reads_pages(halvorsen)))
    first = await stream_run(client, "Batteries?")
    # The orchestrator's turn counts its thread's earlier replies; each sub-agent starts from its first turn.
    scripted.set_scenario(
        scenario(
            orchestrator(*battery_turns, *kelp_turns),
            reads_pages(kelp, finding="The farm stored 1,240 tonnes of CO2.", quote="1,240 tonnes"),
        )
    )
    second = await stream_run(client, "And kelp?", thread_id=first.thread_id)

    answer = await get_evidence(agent_server.url, first.thread_id)

    assert answer.status_code == 200
    assert [(r["run_id"], r["url"]) for r in answer.json()] == [(first.run_id, halvorsen), (second.run_id, kelp)]
    # The follow-up holds the earlier text too (adopted, so it can cite it without fetching it again).
    assert [(e["url"], e["agent"].startswith("earlier:")) for e in second.values["evidence"]] == [
        (halvorsen, True),
        (kelp, False),
    ]
    assert [r["url"] for r in (await stored_records(agent_server.url, second)).values()] == [kelp]

    unknown_run = await get_evidence(agent_server.url, first.thread_id, "no-such-run")
    assert unknown_run.status_code == 404
    assert unknown_run.json() == {"detail": f"No evidence is stored for run no-such-run of thread {first.thread_id}."}
    empty_thread = (await client.threads.create())["thread_id"]
    assert (await get_evidence(agent_server.url, empty_thread)).status_code == 404
