"""The quality gates end to end: findings gate, report gate, citations checked against fetched text, completion."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from testkit.agent_server import RunResult, stored_records, stream_run
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

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

QUOTE = "reached an energy density of 412 Wh/kg in independent tests"
CLAIM = "The Halvorsen cell reached 412 Wh/kg."
UNIT = "Find the energy density of sodium-glass batteries"
QUESTION = "How dense are sodium-glass batteries?"
PROSE = "The Halvorsen cell reached 412 Wh/kg in independent tests, nearly double typical sodium-ion packs."
NEVER_FETCHED = "https://example.org/never-fetched"


def halvorsen(web: Any) -> str:
    return web.url(ARTICLES["halvorsen-cell"].path)


def kelp(web: Any) -> str:
    return web.url(ARTICLES["norre-bay-kelp"].path)


def reads_then_answers(url: str, *answers: str, repeat_last: bool = False) -> dict[str, Any]:
    """A research sub-agent that reads ``url`` once, then gives each answer in turn."""
    return researcher(
        turn(tool_calls=[call("web_fetch", url=url)]), *(turn(content=a) for a in answers), repeat_last=repeat_last
    )


def valid_findings(url: str) -> str:
    return findings_json(CLAIM, [{"finding": CLAIM, "evidence": QUOTE, "source": url}])


def cited_report(
    *entries: tuple[str, str], body: str = "The Halvorsen cell reached 412 Wh/kg in independent tests [1]."
) -> str:
    sources = "\n".join(f"[{n}] {title} — {url}" for n, (title, url) in enumerate(entries, start=1))
    return f"# Sodium-glass batteries\n\n{body}\n\n## Sources\n{sources}\n"


def prose_report(url: str) -> str:
    """A report written as plain text: a # title and several paragraphs, over 300 characters."""
    return (
        "# Sodium-glass batteries\n\n"
        "The Halvorsen cell from the Nordlys Institute reached 412 Wh/kg in independent tests [1], nearly "
        "double what commercial sodium-ion packs typically reach.\n\n"
        "The result comes from small pouch cells, and scaling to automotive formats has historically cost "
        "a good share of that density, so the figure is an upper bound for now.\n\n"
        f"## Sources\n[1] The Halvorsen cell — {url}\n"
    )


def assert_end_carries_totals(run: Any) -> None:
    end = run.end_statuses[0]
    assert {"tool_calls", "total_tokens", "report_chars", "elapsed_s", "elapsed"} <= set(end)
    assert end["report_chars"] == len(run.values.get("final_report") or "")
    assert end["detail"].endswith("s.") and "Run time" in end["detail"]


async def assert_page_evidence(server: Any, run: Any, url: str) -> dict[str, Any]:
    """The run's evidence entry for the page at ``url``, whose stored text holds the quote."""
    pages = [e for e in run.values["evidence"] if e["kind"] == "page" and e["url"] == url]
    assert pages, run.values["evidence"]
    page = pages[0]
    assert {"id", "url", "retrieved_at", "agent", "sha256", "chars"} <= set(page)
    assert page["agent"] == "research-subagent"
    assert QUOTE in (await stored_records(server.url, run))[page["id"]]["text"]
    return page


def revising(run: Any, reason: str) -> list[dict[str, Any]]:
    return [s for s in run.statuses("revising") if s.get("reason") == reason]


@pytest.fixture
def research_unit(agent_server: Any, scripted: Any) -> Callable[..., Awaitable[RunResult]]:
    """Runs one scenario: the orchestrator delegates ``UNIT`` to a researcher, then takes the turns given."""

    async def run(
        researcher_agent: dict[str, Any],
        *then: dict[str, Any],
        repeat_last: bool = False,
        question: str = QUESTION,
        configurable: dict[str, Any] | None = None,
    ) -> RunResult:
        orchestrator_turns = orchestrator(plan_and_delegate(UNIT), *then, repeat_last=repeat_last)
        scripted.set_scenario(scenario(orchestrator_turns, researcher_agent))
        return await stream_run(agent_server.url, question, configurable=configurable, timeout=60)

    return run


def last_message(scripted: Any, agent: str) -> dict[str, Any]:
    return requests_of(scripted, agent)[-1]["body"]["messages"][-1]


# --- findings gate ---------------------------------------------------------------------------------


async def test_prose_instead_of_findings_is_bounced_once_and_the_second_answer_is_handed_over(
    agent_server, research_unit, scripted, web
):
    url = halvorsen(web)
    run = await research_unit(
        reads_then_answers(url, PROSE, valid_findings(url)),
        submit(cited_report(("The Halvorsen cell", url))),
    )

    assert end_of(run) == ("done", "report_delivered")
    assert_end_carries_totals(run)
    bounce = revising(run, "subagent_findings")
    assert len(bounce) == 1 and bounce[0]["role"] == "research-subagent" and "no findings JSON" in bounce[0]["detail"]
    nudge = last_message(scripted, "research-subagent")
    assert nudge["name"] == "dra_harness" and "not accepted" in message_text(nudge)
    findings = run.of_type("subagent_findings")
    assert len(findings) == 1 and findings[0]["findings"][0]["source"] == url
    evidence_id = (await assert_page_evidence(agent_server, run, url))["id"]
    assert run.values["cited_sources"] == [
        {
            "index": 1,
            "url": url,
            "title": "The Halvorsen cell",
            "evidence_id": evidence_id,
            "verified": True,
            "reason": "quote_verified",
            "detail": "",
        }
    ]
    [claim] = run.values["citations"]
    assert (claim["claim"], claim["indexes"], claim["verdict"], claim["tokens"]) == (
        "The Halvorsen cell reached 412 Wh/kg in independent tests [1].",
        [1],
        "supported",
        [],
    )
    assert [(s["index"], s["evidence_id"]) for s in claim["sources"]] == [(1, evidence_id)] and QUOTE in claim[
        "sources"
    ][0]["sentence"]
    usage = run.of_type("usage")[0]
    assert usage["citations"] == {"valid": 1, "repaired": 0, "removed": 0, "flagged": 0}
    assert (usage["claims"]["claims"], usage["claims"]["supported"], usage["claims"]["flagged"]) == (1, 1, 0)


async def test_prose_twice_is_handed_over_as_prose(agent_server, research_unit, scripted, web):
    url = halvorsen(web)
    run = await research_unit(
        reads_then_answers(url, PROSE, repeat_last=True),
        submit(cited_report(("The Halvorsen cell", url))),
    )

    assert end_of(run) == ("done", "report_delivered")
    assert len(revising(run, "subagent_findings")) == 1
    assert len(requests_of(scripted, "research-subagent")) == 3
    assert run.of_type("subagent_findings") == []
    handed_over = next(m for m in run.values["messages"] if m["type"] == "tool" and m["name"] == "task")
    assert handed_over["content"] == PROSE
    # The page was read, though no finding quotes it: the citation is kept as retrieved, its claim holds.
    assert [(c["url"], c["verified"], c["reason"]) for c in run.values["cited_sources"]] == [
        (url, True, "page_retrieved")
    ]
    assert [c["verdict"] for c in run.values["citations"]] == ["supported"]
    await assert_page_evidence(agent_server, run, url)


async def test_findings_without_any_tool_call_are_bounced_then_handed_over_without_them(research_unit, web):
    url = halvorsen(web)
    run = await research_unit(
        researcher(turn(content=valid_findings(url)), repeat_last=True),
        submit("# Sodium-glass batteries\n\nNothing could be verified.\n"),
    )

    assert end_of(run) == ("done", "report_delivered")
    bounce = revising(run, "subagent_findings")
    assert len(bounce) == 1 and "made no tool call" in bounce[0]["detail"]
    findings = run.of_type("subagent_findings")[0]
    assert findings["findings"] == [] and any("No source was consulted" in gap for gap in findings["gaps"])
    assert run.values["evidence"] == [] and run.values["citations"] == [] and run.values["cited_sources"] == []


async def test_a_file_path_as_a_source_is_bounced_and_that_finding_is_dropped_on_hand_over(research_unit, web):
    url = halvorsen(web)
    with_path = findings_json(
        CLAIM,
        [
            {"finding": CLAIM, "evidence": QUOTE, "source": url},
            {"finding": "Cycle data was saved.", "evidence": "", "source": "/workspace/data/cycles.csv"},
        ],
    )
    run = await research_unit(
        reads_then_answers(url, with_path, repeat_last=True),
        submit(cited_report(("The Halvorsen cell", url))),
    )

    assert end_of(run) == ("done", "report_delivered")
    bounce = revising(run, "subagent_findings")
    assert len(bounce) == 1 and "/workspace/data/cycles.csv" in bounce[0]["detail"] and "path" in bounce[0]["detail"]
    assert [f["source"] for f in run.of_type("subagent_findings")[0]["findings"]] == [url]
    assert run.values["cited_sources"][0]["verified"] is True


async def test_findings_copying_the_example_are_bounced_with_the_page_read_as_the_source_to_quote(
    research_unit, scripted, web
):
    url = halvorsen(web)
    copied = findings_json(
        "dense prose answer",
        [{"finding": "one claim with its figures", "evidence": "verbatim quote", "source": "the page URL"}],
    )
    # What Qwen2.5-Coder-0.5B wrote once shown the page as the source: a claim from it, the quote still copied.
    revised = findings_json(
        CLAIM, [{"finding": CLAIM, "evidence": "the sentence of the page that says it, copied", "source": url}]
    )
    # The example citing the page is the assist's.
    run = await research_unit(
        reads_then_answers(url, copied, revised),
        submit(cited_report(("The Halvorsen cell", url))),
        repeat_last=True,
        configurable={"model_assist": "on"},
    )

    assert end_of(run) == ("done", "report_delivered")
    bounce = message_text(last_message(scripted, "research-subagent"))
    assert bounce.splitlines()[-2].startswith("Reply with exactly one JSON object") and "page you read" in bounce
    assert json.loads(bounce.splitlines()[-1])["findings"][0]["source"] == url
    [handed_over] = run.of_type("subagent_findings")
    # The copied quote is left out, so the report gate asks for a claim the page's text supports.
    assert handed_over["findings"] == [{"finding": CLAIM, "evidence": "", "source": url}]
    assert "came without a supporting quote" in revising(run, "report_quality")[0]["detail"]


async def test_findings_repeating_the_loop_guard_s_warning_are_bounced_and_none_of_it_is_handed_over(
    research_unit, web
):
    url = halvorsen(web)
    # Like Qwen2.5-Coder-0.5B in bench/local_model.py: warned about a loop, it handed the warning over as its summary.
    run = await research_unit(
        researcher(
            *(turn(tool_calls=[call("web_fetch", url=url)]) for _ in range(3)),
            turn(content=findings_json("{last_harness}", [], gaps=["{last_harness}"])),
            turn(content=valid_findings(url)),
        ),
        submit(cited_report(("The Halvorsen cell", url))),
    )

    assert end_of(run) == ("done", "report_delivered")
    [bounce] = revising(run, "subagent_findings")
    assert "`summary` repeats what the harness told you “LOOP DETECTED" in bounce["detail"]
    [handed_over] = run.of_type("subagent_findings")
    assert handed_over["summary"] == CLAIM and "LOOP DETECTED" not in json.dumps(handed_over)
    assert "LOOP DETECTED" not in run.values["final_report"]


# --- report gate -----------------------------------------------------------------------------------


async def test_a_report_citing_a_missing_entry_and_an_unfetched_url_is_sent_back_and_the_revision_delivered(
    agent_server, research_unit, scripted, web
):
    url = halvorsen(web)
    bad = cited_report(
        ("The Halvorsen cell", url),
        ("Somewhere", NEVER_FETCHED),
        body="The Halvorsen cell reached 412 Wh/kg in independent tests [1]. Prices fell [2]. Demand rose [9].",
    )
    good = cited_report(("The Halvorsen cell", url))
    run = await research_unit(reads_then_answers(url, valid_findings(url)), submit(bad), submit(good))

    assert end_of(run) == ("done", "report_delivered")
    assert_end_carries_totals(run)
    bounce = revising(run, "report_quality")
    assert len(bounce) == 1 and "[9]" in bounce[0]["detail"] and NEVER_FETCHED in bounce[0]["detail"]
    sent_back = last_message(scripted, "orchestrator")
    assert (
        sent_back["role"] == "tool" and "NOT delivered" in message_text(sent_back) and "[9]" in message_text(sent_back)
    )
    reports = run.of_type("report")
    assert len(reports) == 1 and reports[0]["markdown"] == good.strip() and not reports[0].get("partial")
    assert run.values["final_report"] == good.strip()
    assert [(c["index"], c["url"], c["verified"]) for c in run.values["cited_sources"]] == [(1, url, True)]
    assert run.of_type("usage")[0]["citations"] == {"valid": 1, "repaired": 2, "removed": 0, "flagged": 0}
    await assert_page_evidence(agent_server, run, url)


async def test_a_revision_that_still_cites_an_unfetched_url_is_delivered_with_that_citation_removed(research_unit, web):
    url = halvorsen(web)
    bad = cited_report(
        ("The Halvorsen cell", url),
        ("Somewhere", NEVER_FETCHED),
        body="The Halvorsen cell reached 412 Wh/kg in independent tests [1]. Prices fell [2].",
    )
    run = await research_unit(reads_then_answers(url, valid_findings(url)), submit(bad), repeat_last=True)

    assert end_of(run) == ("done", "report_delivered")
    assert len(revising(run, "report_quality")) == 1
    delivered = run.values["final_report"]
    assert [r["markdown"] for r in run.of_type("report")] == [delivered]
    assert NEVER_FETCHED not in delivered and "[2]" not in delivered and "Prices fell." in delivered
    assert [(c["index"], c["url"], c["verified"]) for c in run.values["cited_sources"]] == [(1, url, True)]
    assert run.of_type("usage")[0]["citations"] == {"valid": 1, "repaired": 0, "removed": 1, "flagged": 0}


async def test_a_finding_s_bad_quote_is_handed_over_marked_unverifies_its_source_and_a_figure_its_page_lacks_marks_the_sentence(
    research_unit, scripted, web
):
    cell, farm = halvorsen(web), kelp(web)
    findings = findings_json(
        "Two results.",
        [
            {"finding": CLAIM, "evidence": "a record that the article never states", "source": cell},
            {
                "finding": "The farm stored 2,000 tonnes of CO2.",
                "evidence": "sequestered 1,240 tonnes of carbon dioxide in 2023",
                "source": farm,
            },
        ],
    )
    report = cited_report(
        ("The Halvorsen cell", cell),
        ("Norre Bay kelp", farm),
        body="The Halvorsen cell reached 412 Wh/kg [1]. The farm stored 2,000 tonnes of CO2 [2].",
    )
    run = await research_unit(
        researcher(turn(tool_calls=[call("web_fetch", url=cell), call("web_fetch", url=farm)]), turn(content=findings)),
        submit(report),
        repeat_last=True,
        question="Batteries and kelp?",
    )

    assert end_of(run) == ("done", "report_delivered")
    [bounce] = revising(run, "report_quality")
    assert (
        "is not in the text retrieved from" in bounce["detail"]
        and "2,000 tonnes not in the text of [2]" in bounce["detail"]
    )
    delivered = run.values["final_report"]
    # The cell's page does say 412 Wh/kg, whatever the finding quoted; the farm's page never says 2,000 tonnes.
    assert "412 Wh/kg [1]." in delivered and "CO2 [2] [unverified]." in delivered
    by_url = {c["url"]: c for c in run.values["cited_sources"]}
    assert (by_url[cell]["verified"], by_url[cell]["reason"]) == (False, "quote_not_found")
    assert (by_url[farm]["verified"], by_url[farm]["reason"]) == (False, "number_not_in_quote")
    assert all(c["evidence_id"] for c in by_url.values())
    assert [(c["verdict"], c["tokens"]) for c in run.values["citations"]] == [
        ("supported", []),
        ("unsupported_number", ["2,000 tonnes"]),
    ]
    assert run.of_type("usage")[0]["citations"] == {"valid": 0, "repaired": 0, "removed": 0, "flagged": 2}
    # At hand-over: the finding whose quote is in no text read from its source arrives marked, everywhere.
    [handed] = run.of_type("subagent_findings")
    assert [f.get("check") for f in handed["findings"]] == ["quote_not_found", None]
    after_task = requests_of(scripted, "orchestrator")[1]["body"]["messages"]
    results = [message_text(m) for m in after_task if m["role"] == "tool"]
    [task_result] = [json.loads(text) for text in results if text.startswith('{"summary"')]
    assert [f.get("check") for f in task_result["findings"]] == ["quote_not_found", None]
    assert "quote_not_found" in message_text(after_task[0]) and "another source" in message_text(after_task[0])
    shown = [m for m in run.values["messages"] if m["type"] == "tool" and m.get("name") == "task"][0]["content"]
    assert shown.count("(its quote is in no text read from this source)") == 1


# --- completion ------------------------------------------------------------------------------------


async def test_a_prose_report_is_nudged_once_then_submitted(research_unit, scripted, web):
    url = halvorsen(web)
    run = await research_unit(
        reads_then_answers(url, valid_findings(url)),
        turn(content=prose_report(url)),
        submit(prose_report(url)),
    )

    assert end_of(run) == ("done", "report_delivered")
    nudge = last_message(scripted, "orchestrator")
    assert nudge["name"] == "dra_harness" and "submit_report" in message_text(nudge)
    assert run.values["final_report"] == prose_report(url).strip()
    assert run.values["cited_sources"][0]["verified"] is True
    assert [c["verdict"] for c in run.values["citations"]] == ["supported"]


async def test_a_prose_report_never_submitted_is_salvaged_as_an_incomplete_report(research_unit, scripted, web):
    url = halvorsen(web)
    run = await research_unit(
        reads_then_answers(url, valid_findings(url)),
        turn(content=prose_report(url)),
        repeat_last=True,
    )

    assert end_of(run) == ("done", "report_salvaged")
    assert_end_carries_totals(run)
    assert len(requests_of(scripted, "orchestrator")) == 3, "one nudge, then the turn ends"
    reports = run.of_type("report")
    assert len(reports) == 1 and reports[0]["partial"] is True
    salvaged = run.values["final_report"]
    assert reports[0]["markdown"] == salvaged
    assert (
        salvaged.startswith("> **Incomplete report.**") and "The Halvorsen cell from the Nordlys Institute" in salvaged
    )
    assert [(c["url"], c["verified"]) for c in run.values["cited_sources"]] == [(url, True)]


async def test_a_json_dump_is_nudged_to_a_reader_facing_report_then_salvaged_from_the_findings(
    research_unit, scripted, web
):
    url = halvorsen(web)
    dump = json.dumps({"findings": [{"finding": CLAIM, "source": url}], "notes": ["raw"]})
    run = await research_unit(reads_then_answers(url, valid_findings(url)), turn(content=dump), repeat_last=True)

    assert end_of(run) == ("done", "report_salvaged")
    nudges = [
        m for m in requests_of(scripted, "orchestrator")[-1]["body"]["messages"] if m.get("name") == "dra_harness"
    ]
    assert len(nudges) == 1 and "raw JSON" in message_text(nudges[0])
    salvaged = run.values["final_report"]
    assert run.of_type("report")[0]["partial"] is True
    assert "**Incomplete.**" in salvaged and "412 Wh/kg [1]" in salvaged and url in salvaged
    assert [(c["index"], c["url"], c["verified"]) for c in run.values["cited_sources"]] == [(1, url, True)]


async def test_an_orchestrator_that_only_announces_is_nudged_four_times_then_stalls_with_a_salvaged_report(
    research_unit, scripted, web
):
    url = halvorsen(web)
    run = await research_unit(
        reads_then_answers(url, valid_findings(url)),
        turn(content="Now I will write the report."),
        repeat_last=True,
    )

    assert end_of(run) == ("error", "stalled_after_nudges")
    assert_end_carries_totals(run)
    assert len(requests_of(scripted, "orchestrator")) == 6, "the stub, four nudged retries, and no more"
    nudges = [
        m for m in requests_of(scripted, "orchestrator")[-1]["body"]["messages"] if m.get("name") == "dra_harness"
    ]
    assert len(nudges) == 4 and all("did not take it" in message_text(n) for n in nudges)
    reports = run.of_type("report")
    assert len(reports) == 1 and reports[0]["partial"] is True
    assert "**Incomplete.**" in run.values["final_report"] and "412 Wh/kg [1]" in run.values["final_report"]
    assert run.values["cited_sources"][0]["url"] == url
