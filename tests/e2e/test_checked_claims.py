"""Checked claims end to end: each sentence of a delivered report is held against the page text it cites.

Through ``langgraph dev`` with the scripted model: a research unit reads the loopback pages about the
Lighthouse of Alexandria (one says "over 100 metres", another "137 metres"), the orchestrator submits a
report, and the report gate judges every claim against the pages' full text: figures, quotes, names,
direction, and with ``claim_judge`` on, the scripted ``claim-judge`` role for what those cannot settle.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from pypdf import PdfReader

from deep_research_agent.evaluation.metrics import measure
from deep_research_agent.evaluation.scorecard import Scorecard, render_markdown
from deep_research_agent.evaluation.suite import Question
from deep_research_agent.report.judge_guard import CONTROL_CLAIMS
from testkit.agent_server import RunResult, stream_run
from testkit.claim_reports import COVERAGE, VACUOUS_COVERAGE, coverage_report, vacuous_report
from testkit.mcp_caller import mcp_session, text_of
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
from testkit.scripted_model import agent, call, turn
from testkit.web import ARTICLES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

UNIT = "Find the height and building dates of the Lighthouse of Alexandria"
QUESTION = "How tall was the Lighthouse of Alexandria?"
HEIGHT = "Ancient accounts describe a tower in three stages that stood over 100 metres tall, which made it one of the tallest structures built by hand for many centuries."
INVENTED = "The lighthouse stood 300 metres tall and was finished in 1999 [1]."


def pharos(web: Any) -> str:
    return web.url(ARTICLES["pharos-lighthouse"].path)


def survey(web: Any) -> str:
    return web.url(ARTICLES["pharos-survey"].path)


def reads(*urls: str, findings: list[dict[str, str]]) -> dict[str, Any]:
    """A research unit that reads every page, then hands back quoted findings."""
    return researcher(
        turn(tool_calls=[call("web_fetch", url=url) for url in urls]),
        turn(content=findings_json("The lighthouse's height and dates.", findings)),
    )


def height_finding(url: str) -> dict[str, str]:
    return {
        "finding": "The lighthouse stood over 100 metres tall.",
        "evidence": "stood over 100 metres tall",
        "source": url,
    }


def report(body: str, *sources: tuple[str, str]) -> str:
    listed = "\n".join(f"[{n}] {title} — {url}" for n, (title, url) in enumerate(sources, start=1))
    return f"# The Lighthouse of Alexandria\n\n{body}\n\n## Sources\n{listed}\n"


def last_ai_text(run: RunResult) -> str:
    return [m for m in run.values["messages"] if m["type"] == "ai"][-1]["content"]


def bounces(run: RunResult) -> list[dict[str, Any]]:
    return [s for s in run.statuses("revising") if s.get("reason") == "report_quality"]


def sent_back(scripted: Any) -> str:
    """What the orchestrator read after its first draft: the gate's list of fixes."""
    messages = requests_of(scripted, "orchestrator")[-1]["body"]["messages"]
    return message_text([m for m in messages if m["role"] == "tool"][-1])


def claim_counts(event: dict[str, Any]) -> tuple[int, int, int]:
    return event["claims"]["claims"], event["claims"]["supported"], event["claims"]["flagged"]


@pytest.fixture
def research(agent_server: Any, scripted: Any) -> Callable[..., Awaitable[RunResult]]:
    async def run(
        researcher_agent: dict[str, Any],
        *then: dict[str, Any],
        repeat_last: bool = False,
        judge: str | dict[str, Any] | None = None,
    ) -> RunResult:
        """``judge`` is the scripted claim judge's answer, or a reading judge (``reading``); given, the run has
        ``claim_judge`` on."""
        agents = [orchestrator(plan_and_delegate(UNIT), *then, repeat_last=repeat_last), researcher_agent]
        if judge is not None:
            answer = turn(judge=judge) if isinstance(judge, dict) else turn(content=judge)
            agents.append(agent("claim-judge", answer, repeat_last=True))
        scripted.set_scenario(scenario(*agents))
        configurable = {"claim_judge": "on"} if judge is not None else None
        return await stream_run(agent_server.url, QUESTION, configurable=configurable, timeout=90)

    return run


def reading(verdicts: dict[str, str] | None = None, *, default: str = "supported", **spec: str) -> dict[str, Any]:
    """A scripted judge that reads (``testkit.scripted_model``'s ``judge`` turn): each claim containing a key of
    ``verdicts`` gets its verdict, any other ``default``, each on the passage sharing most of its words and
    quoting it; the planted control claim it calls contradicted, as a judge that reads does."""
    controls = {pair.claim: "contradicted" for pair in CONTROL_CLAIMS}
    return {"verdicts": {**controls, **(verdicts or {})}, "default": default, **spec}


def judge_requests(scripted: Any) -> list[dict[str, Any]]:
    return requests_of(scripted, "claim-judge")


def prompt_of(request: dict[str, Any]) -> str:
    """The judge's prompt: its passages and claims."""
    return message_text([m for m in request["body"]["messages"] if m["role"] == "user"][-1])


def passages_shown(request: dict[str, Any], claim: str) -> list[str]:
    """The passages the judge was shown for the claim whose text starts with ``claim``."""
    user = prompt_of(request)
    passages = dict(re.findall(r"^(P\d+) \(source \[\d+\]\): (.*)$", user, re.M))
    listed = next(
        ids
        for ids, text in re.findall(r"^C\d+ \(cites [^;]*; its passages: ([^)]*)\): (.*)$", user, re.M)
        if text.startswith(claim)
    )
    return [passages[p.strip()] for p in listed.split(",")]


async def test_an_invented_figure_for_a_page_the_run_read_is_sent_back_once_then_delivered_marked(
    research, scripted, web
):
    url = pharos(web)
    draft = report(INVENTED + " It was built between 280 and 247 BC [1].", ("The Lighthouse of Alexandria", url))

    run = await research(reads(url, findings=[height_finding(url)]), submit(draft), repeat_last=True)

    assert end_of(run) == ("done", "report_delivered")
    [bounce] = bounces(run)
    assert "300 metres, 1999 not in the text of [1]" in bounce["detail"]
    fixes = sent_back(scripted)
    assert "NOT delivered" in fixes and INVENTED in fixes and f"[1] says: “{HEIGHT}”" in fixes
    delivered = run.values["final_report"]
    marked = "The lighthouse stood 300 metres tall and was finished in 1999 [1] [unverified]."
    assert marked in delivered and "It was built between 280 and 247 BC [1]." in delivered
    assert delivered.count("[unverified]") == 1
    shown = last_ai_text(run)
    assert f"finished in 1999 [[1]]({url}) [unverified]." in shown, (
        "a client that shows only messages shows the mark too"
    )
    assert shown.count("[unverified]") == 1
    invented, dates = run.values["citations"]
    assert (invented["claim"], invented["indexes"], invented["verdict"], invented["tokens"]) == (
        marked,
        [1],
        "unsupported_number",
        ["300 metres", "1999"],
    )
    assert invented["detail"] == "300 metres, 1999 not in the text of [1]"
    [source] = invented["sources"]
    assert (source["index"], source["url"], source["sentence"]) == (1, url, HEIGHT) and source["evidence_id"]
    assert dates["verdict"] == "supported"
    # The page itself was verified (the finding's quote is in it): that does not vouch for this sentence.
    assert [(c["url"], c["verified"]) for c in run.values["cited_sources"]] == [(url, True)]
    [delivery] = run.of_type("report")
    assert delivery["markdown"] == delivered and claim_counts(delivery) == (2, 1, 1)
    usage = run.of_type("usage")[0]["claims"]
    assert (usage["claims"], usage["supported"], usage["flagged"], usage["unsupported_number"]) == (2, 1, 1, 1)


async def test_a_fixed_resubmission_is_delivered_clean(research, web):
    url = pharos(web)
    draft = report(INVENTED, ("The Lighthouse of Alexandria", url))
    fixed = report(
        "The lighthouse stood over 100 metres tall [1]. It was built between 280 and 247 BC [1].",
        ("The Lighthouse of Alexandria", url),
    )

    run = await research(reads(url, findings=[height_finding(url)]), submit(draft), submit(fixed))

    assert end_of(run) == ("done", "report_delivered")
    assert len(bounces(run)) == 1
    assert run.values["final_report"] == fixed.strip() and "[unverified]" not in last_ai_text(run)
    assert [(c["verdict"], c["tokens"]) for c in run.values["citations"]] == [("supported", []), ("supported", [])]
    assert claim_counts(run.of_type("report")[0]) == (2, 2, 0)


async def test_the_happy_path_stays_clean_and_a_figure_in_the_page_but_in_no_quote_is_supported(research, web):
    url = pharos(web)
    clean = report(
        "The lighthouse stood over 100 metres tall [1]. It was built on Pharos between 280 and 247 BC [1], and its "
        "fire was visible from 50 kilometres out at sea [1].",
        ("The Lighthouse of Alexandria", url),
    )

    run = await research(reads(url, findings=[height_finding(url)]), submit(clean))

    assert end_of(run) == ("done", "report_delivered")
    assert bounces(run) == [], "a report whose every figure is in its source is delivered at once"
    assert run.values["final_report"] == clean.strip()
    assert f"over 100 metres tall [[1]]({url})." in last_ai_text(run) and "[unverified]" not in last_ai_text(run)
    height, dates = run.values["citations"]
    assert [height["verdict"], dates["verdict"]] == ["supported", "supported"]
    # No finding quoted the dates or the 50 kilometres; the page the run read says both.
    assert "between 280 and 247 BC" in dates["sources"][0]["sentence"]
    assert claim_counts(run.of_type("report")[0]) == (2, 2, 0)


async def test_an_uncited_figure_is_sent_back_then_delivered_marked(research, web):
    url = pharos(web)
    draft = report(
        "The lighthouse stood over 100 metres tall [1]. Its fire could be seen 50 kilometres out at sea.",
        ("The Lighthouse of Alexandria", url),
    )

    run = await research(reads(url, findings=[height_finding(url)]), submit(draft), repeat_last=True)

    [bounce] = bounces(run)
    assert (
        "“Its fire could be seen 50 kilometres out at sea.” states 50 kilometres with no citation" in bounce["detail"]
    )
    assert "Its fire could be seen 50 kilometres out at sea [unverified]." in run.values["final_report"]
    uncited = run.values["citations"][1]
    assert (uncited["verdict"], uncited["indexes"], uncited["tokens"], uncited["sources"]) == (
        "uncited_number",
        [],
        ["50 kilometres"],
        [],
    )


async def test_two_cited_sources_with_different_heights_are_conflicting(research, scripted, web):
    first, second = pharos(web), survey(web)
    findings = [
        height_finding(first),
        {
            "finding": "A survey estimates 137 metres.",
            "evidence": "stood 137 metres tall when it was finished",
            "source": second,
        },
    ]
    draft = report(
        "The Lighthouse of Alexandria stood 137 metres tall [1][2].",
        ("The Lighthouse of Alexandria", first),
        ("Divers map the ruins of the Pharos", second),
    )

    run = await research(reads(first, second, findings=findings), submit(draft), repeat_last=True)

    assert end_of(run) == ("done", "report_delivered")
    [bounce] = bounces(run)
    assert "its sources disagree: [2] gives 137 metres, [1] gives 100 metres" in bounce["detail"]
    assert "State the range, or both values, each with its source." in sent_back(scripted)
    [claim] = run.values["citations"]
    assert (claim["verdict"], claim["tokens"], claim["indexes"]) == (
        "conflicting",
        ["137 metres", "100 metres"],
        [1, 2],
    )
    sentences = {source["url"]: source["sentence"] for source in claim["sources"]}
    assert sentences[first] == HEIGHT and "stood 137 metres tall when it was finished" in sentences[second]
    assert run.of_type("usage")[0]["claims"]["conflicting"] == 1
    # Delivered with both values, each with its source, and saying they disagree.
    kept = "stood 137 metres tall [1][2] [unverified] (the cited sources disagree: [2] gives 137 metres, [1] gives 100 metres)."
    assert kept in run.values["final_report"] and claim["claim"].endswith(kept)
    assert f"[[2]]({second}) gives 137 metres, [[1]]({first}) gives 100 metres)." in last_ai_text(run)


# --- meaning: names, direction and the judge ---------------------------------------------------

JUDGED_CAUSE = "Fires damaged the tower until it fell into ruin [1]."
JUDGED_FINE = "It was one of the tallest structures built by hand [1]."


async def test_a_report_with_each_kind_of_error_is_bounced_once_and_delivered_with_the_right_marks(
    research, scripted, web
):
    url = pharos(web)
    sentences = [
        "The lighthouse stood over 100 metres tall [1].",
        "It was finished in 1999 [1].",
        "It was built for Cleopatra on the island of Rhodes [1].",
        "The tower stood under 100 metres tall [1].",
        JUDGED_CAUSE,
        JUDGED_FINE,
        'Ancient accounts call it "the tallest tower ever built" [1].',
    ]
    draft = report(" ".join(sentences), ("The Lighthouse of Alexandria", url))
    # The first sentence's "lighthouse" is not in the sentence holding its figure: the judge reads it too.
    judge = reading({"Fires damaged": "contradicted"})

    run = await research(reads(url, findings=[height_finding(url)]), submit(draft), repeat_last=True, judge=judge)

    assert end_of(run) == ("done", "report_delivered")
    [bounce] = bounces(run)
    fixes = sent_back(scripted)
    assert "1999 not in the text of [1]" in fixes
    assert "the name Cleopatra, Rhodes not in the text of [1]" in fixes
    assert "it says “under 100 metres” where [1] says over 100 metres: the source says the opposite." in fixes
    assert (
        "“Fires damaged the tower until it fell into ruin [1].”: judged against its cited text, which contradicts it"
        in fixes
    )
    assert "the quoted “the tallest tower ever built” not in the text of [1]" in fixes
    assert "Cleopatra" in bounce["detail"]
    # The resubmitted draft's claims were judged on the bounced one: one judge call for the turn.
    [asked] = judge_requests(scripted)
    delivered = run.values["final_report"]
    assert delivered.count("[unverified]") == 5
    for sentence in sentences[1:5] + sentences[6:]:
        assert sentence.replace("[1]", "[1] [unverified]") in delivered, sentence
    assert sentences[0] in delivered and JUDGED_FINE in delivered
    records = run.values["citations"]
    assert [(r["verdict"], r["decided_by"]) for r in records] == [
        ("supported", "judged"),
        ("unsupported_number", "figures_and_quotes"),
        ("unsupported_name", "names_and_direction"),
        ("contradicted", "names_and_direction"),
        ("contradicted", "judged"),
        ("supported", "judged"),
        ("unsupported_quote", "figures_and_quotes"),
    ]
    assert records[2]["tokens"] == ["Cleopatra", "Rhodes"] and records[3]["tokens"] == ["under 100 metres"]
    [cause_source] = records[4]["sources"]
    shown = passages_shown(asked, "Fires damaged")
    assert cause_source["deciding"] and cause_source["sentence"] in shown
    assert "damaged the tower until it fell into ruin" in cause_source["sentence"]
    assert not any(p.startswith("Title:") for p in shown), "a page's header line is no passage"
    assert [s for s in run.statuses("warning") if s.get("reason") == "claim_judge_failed"] == []
    assert records[4]["detail"] == cause_source["sentence"]
    summary = run.of_type("report")[0]["claims"]
    assert (summary["claims"], summary["supported"], summary["flagged"], summary["judged"]) == (7, 2, 5, 3)
    assert (summary["unsupported_name"], summary["contradicted"], summary["citation_accuracy"]) == (1, 2, 0.2857)
    assert run.values["claim_summary"] == summary == run.of_type("usage")[0]["claims"]
    assert run.values["outcome"] == "partial"


async def test_the_happy_path_with_the_judge_is_delivered_in_one_submission_and_its_calls_are_metered(
    research, scripted, web
):
    url = pharos(web)
    clean = report(
        "The lighthouse stood over 100 metres tall [1]. It was built on Pharos between 280 and 247 BC [1]. "
        + JUDGED_FINE,
        ("The Lighthouse of Alexandria", url),
    )

    run = await research(
        reads(url, findings=[height_finding(url)]),
        submit(clean),
        judge=reading(),
    )

    assert end_of(run) == ("done", "report_delivered")
    assert bounces(run) == [] and run.values["final_report"] == clean.strip()
    assert [(r["verdict"], r["decided_by"]) for r in run.values["citations"]] == [
        ("supported", "judged"),
        ("supported", "figures_and_quotes"),
        ("supported", "judged"),
    ]
    [asked] = judge_requests(scripted)
    assert asked["body"]["max_completion_tokens"] == 2000 and "JSON only" in message_text(asked["body"]["messages"][0])
    usage = run.of_type("usage")[0]
    assert usage["per_role"]["claim-judge"]["model_calls"] == 1 and usage["per_role"]["claim-judge"]["input_tokens"] > 0
    assert usage["claims"]["judged"] == 2 and usage["claims"]["citation_accuracy"] == 1.0
    assert run.values["outcome"] == "answered"
    assert [s for s in run.statuses("warning") if s.get("reason") == "claim_judge_failed"] == []


async def test_a_judge_that_answers_garbage_leaves_the_deterministic_verdicts_and_warns(research, scripted, web):
    url = pharos(web)
    clean = report(
        "The lighthouse stood over 100 metres tall [1]. The tower had three stages [1]. " + JUDGED_FINE,
        ("The Lighthouse of Alexandria", url),
    )

    run = await research(
        reads(url, findings=[height_finding(url)]), submit(clean), judge="<html>502 Bad Gateway</html>"
    )

    assert end_of(run) == ("done", "report_delivered")
    assert bounces(run) == [], "a failed judge never holds a report back"
    [warning] = [s for s in run.statuses("warning") if s.get("reason") == "claim_judge_failed"]
    assert "3 claims: unparseable answer" in warning["detail"]
    assert len(judge_requests(scripted)) == 1
    assert [(r["verdict"], r["decided_by"]) for r in run.values["citations"]] == [
        ("supported", "figures_and_quotes"),
        ("unchecked", "not_checked"),
        ("unchecked", "not_checked"),
    ]
    assert run.values["claim_summary"]["unchecked"] == 2 and run.values["claim_summary"]["judged"] == 0
    assert run.values["claim_summary"]["coverage"] == "1 of 3 claims checked; 1 supported (citation accuracy 100%)"


async def test_a_judge_that_fails_on_a_bounced_draft_and_its_revision_warns_once_for_the_delivered_report(
    research, scripted, web
):
    url = pharos(web)
    draft = report(INVENTED + " The tower had three stages [1].", ("The Lighthouse of Alexandria", url))

    run = await research(
        reads(url, findings=[height_finding(url)]),
        submit(draft),
        repeat_last=True,
        judge="<html>502 Bad Gateway</html>",
    )

    assert end_of(run) == ("done", "report_delivered")
    assert len(bounces(run)) == 1 and len(judge_requests(scripted)) == 2, "both drafts went to the judge"
    [warning] = [s for s in run.statuses("warning") if s.get("reason") == "claim_judge_failed"]
    assert "unparseable answer" in warning["detail"]


# --- what the numbers say: checked claims and their coverage --------------------------------------


async def test_two_sentences_with_nothing_to_check_are_delivered_unchecked_and_no_surface_says_100_percent(
    research, scripted, web, agent_server
):
    url = pharos(web)

    run = await research(
        reads(url, findings=[height_finding(url)]), submit(vacuous_report(url)), judge="<html>502 Bad Gateway</html>"
    )

    assert end_of(run) == ("done", "report_delivered")
    assert bounces(run) == [], "a sentence with nothing to check is nothing the writer can fix"
    records = run.values["citations"]
    assert [(r["verdict"], r["decided_by"]) for r in records] == [("unchecked", "not_checked")] * 2
    assert all("no figure, quote or name" in r["detail"] for r in records)
    summary = run.values["claim_summary"]
    assert (summary["coverage"], summary["checked"], summary["citation_accuracy"]) == (VACUOUS_COVERAGE, 0, None)
    given = {key: value for key, value in summary.items() if value is not None}
    assert run.of_type("report")[0]["claims"] == given == run.of_type("usage")[0]["claims"]
    assert "[unverified]" not in run.values["final_report"], "nothing found them wrong"
    assert [s for s in run.statuses("warning") if s.get("reason") == "claim_judge_failed"]
    shown = {}
    async with httpx.AsyncClient(base_url=agent_server.url, timeout=60) as client:
        for form in ("md", "html", "pdf"):
            answer = await client.get(f"/reports/{run.thread_id}", params={"format": form})
            assert answer.status_code == 200, answer.text
            # What a reader sees: the stylesheet's widths ("max-width: 100%") are no figure.
            shown[form] = (
                re.sub(r"<style>.*?</style>", "", answer.text, flags=re.S)
                if form != "pdf"
                else pdf_text(answer.content)
            )
    for form, text in [*shown.items(), ("state", json.dumps(run.values)), ("events", json.dumps(run.events))]:
        assert "100%" not in text and "100 %" not in text, form
    assert all(VACUOUS_COVERAGE in " ".join(text.split()) for text in shown.values())


async def test_a_report_with_9_checked_and_3_unchecked_claims_shows_one_coverage_in_the_cli_pdf_mcp_and_scorecard(
    agent_server, scripted, web, tmp_path
):
    url = pharos(web)
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate(UNIT), submit(coverage_report(url))),
            reads(url, findings=[height_finding(url)]),
        )
    )
    pdf = tmp_path / "report.pdf"

    done = await asyncio.to_thread(ask, agent_server.url, QUESTION, "--out", str(pdf))

    assert done.returncode == 0, done.stdout + done.stderr
    cli = " ".join(done.stdout.split())
    assert f"Claims against their sources: {COVERAGE}" in cli
    [thread_id] = re.findall(r"Thread ([0-9a-f-]{36})", done.stdout)
    assert COVERAGE in " ".join(pdf_text(pdf.read_bytes()).split())
    async with mcp_session(agent_server.url) as session:
        result = await session.call_tool("get_report", {"thread_id": thread_id})
    assert result.structuredContent["claims"]["coverage"] == COVERAGE and f"claims: {COVERAGE}" in text_of(result)
    assert result.structuredContent["citation_accuracy"] == 1.0
    state = await get_client(url=agent_server.url).threads.get_state(thread_id)
    values = state["values"]
    scored = measure(Question(id="pharos", question=QUESTION), [], values, thread_id=thread_id, wall_s=1.0)
    assert (scored.coverage, scored.checked, scored.claims, scored.citation_accuracy) == (COVERAGE, 9, 12, 1.0)
    card = Scorecard(suite="s", suite_path="s", suite_sha256="0", server=agent_server.url, started_at="t",
                     finished_at="t", wall_s=1, complete=True, questions=[scored]).summarise()  # fmt: skip
    assert f"| {COVERAGE} |" in render_markdown(card)
    assert values["claim_summary"]["coverage"] == COVERAGE
    assert [r["verdict"] for r in values["citations"]].count("unchecked") == 3


# --- a judge that cannot rubber-stamp --------------------------------------------------------------

INVENTED_CAUSE = "Fires damaged the tower until it fell into ruin [1]."
INVENTED_DETAIL = "Its fire was fed with olive oil carried up a ramp [1]."


async def test_a_judge_that_calls_everything_supported_is_caught_by_its_control_claim_and_its_verdicts_are_not_used(
    research, scripted, web
):
    url = pharos(web)
    body = f"It stood over 100 metres tall [1]. {INVENTED_CAUSE} {INVENTED_DETAIL} It was built on Pharos [1]."

    run = await research(
        reads(url, findings=[height_finding(url)]),
        submit(report(body, ("The Lighthouse of Alexandria", url))),
        judge={"default": "supported"},
    )

    assert end_of(run) == ("done", "report_delivered")
    [asked] = judge_requests(scripted)
    prompt = prompt_of(asked)
    [planted] = [pair for pair in CONTROL_CLAIMS if pair.claim in prompt]
    assert planted.passage in prompt and planted.claim not in run.values["final_report"]
    records = {r["claim"]: r for r in run.values["citations"]}
    for invented in (INVENTED_CAUSE, INVENTED_DETAIL):
        assert (records[invented]["verdict"], records[invented]["decided_by"]) == ("unchecked", "not_checked")
    assert "judged" not in {r["decided_by"] for r in records.values()}
    summary = run.values["claim_summary"]
    assert summary["judge_unreliable"] and summary["judged"] == 0
    assert (
        summary["coverage"].startswith("2 of 4 claims checked; 2 supported")
        and "judge was unreliable" in summary["coverage"]
    )
    assert run.of_type("usage")[0]["claims"] == summary == run.of_type("report")[0]["claims"]
    [warning] = [s for s in run.statuses("warning") if s.get("reason") == "claim_judge_unreliable"]
    assert "planted control claim" in warning["detail"]


async def test_a_judge_that_reads_keeps_its_verdicts_and_a_supported_it_cannot_ground_is_delivered_unchecked(
    research, scripted, web
):
    url = pharos(web)
    body = f"It was one of the tallest structures built by hand [1]. {INVENTED_CAUSE} The evidence found answers the question [1]."

    run = await research(
        reads(url, findings=[height_finding(url)]),
        submit(report(body, ("The Lighthouse of Alexandria", url))),
        repeat_last=True,
        judge=reading({"Fires damaged": "not_supported"}),
    )

    assert end_of(run) == ("done", "report_delivered")
    verdicts = [(r["verdict"], r["decided_by"]) for r in run.values["citations"]]
    assert verdicts == [("supported", "judged"), ("not_supported", "judged"), ("unchecked", "not_checked")]
    assert "shares its content" not in json.dumps(run.values["citations"][0])
    assert "does not share its content" in run.values["citations"][2]["detail"]
    [warning] = [s for s in run.statuses("warning") if s.get("reason") == "claim_verdict_unfounded"]
    assert "The evidence found answers the question" in warning["detail"]
    summary = run.values["claim_summary"]
    assert not summary["judge_unreliable"] and summary["coverage"].startswith("2 of 3 claims checked; 1 supported")


async def test_a_sentence_whose_facts_sit_in_the_page_body_is_judged_against_that_body_sentence(
    research, scripted, web
):
    url = pharos(web)
    # Its dates are in the page's first body sentence; "tower" and "dates" are not, so the judge reads it.
    dated = "The Pharos tower dates from 280 to 247 BC [1]."

    run = await research(
        reads(url, findings=[height_finding(url)]),
        submit(report(dated, ("The Lighthouse of Alexandria", url))),
        judge=reading(),
    )

    [asked] = judge_requests(scripted)
    shown = passages_shown(asked, "The Pharos tower dates")
    assert shown[0].startswith("The Lighthouse of Alexandria was built on the island of Pharos between 280 and 247 BC")
    assert not any(p.startswith("Title:") for p in shown), "the page's title line is no passage"
    [record] = run.values["citations"]
    assert (record["verdict"], record["decided_by"]) == ("supported", "judged")
    [source] = record["sources"]
    assert source["deciding"] and "between 280 and 247 BC" in source["sentence"]


def ask(url: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """``./run.sh ask`` as a person runs it from a shell (the command's module, as run.sh starts it)."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "ask", "--url", url, *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


def pdf_text(content: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)
