"""The web UI at /ui in a real browser (Debian's Chromium through Playwright) against the one ``langgraph dev``
of the suite, with the scripted model and the loopback web: what a person sees and can do.

One browser serves the whole module (a fresh context per test); each test saves a screenshot under
tests/output/webui/. ``./run.sh test`` installs chromium and builds ui/dist; without chromium these tests skip.
The last test drives not /ui but a small page that renders and answers a plan review the way deep-agents-ui does.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from playwright.sync_api import Browser, expect

from testkit import corpus as corpus_fixture
from testkit.agent_server import GRAPH_ID
from testkit.browser import UiPage, headless_chromium
from testkit.claim_reports import COVERAGE, coverage_report
from testkit.scenarios import (
    CHART_QUESTION,
    brief_of,
    charted_series,
    direct_answerer,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    researcher_finds_then_hangs,
    scenario,
    submit,
    system_text,
    triage,
)
from testkit.scripted_model import call, error, turn
from testkit.web import ARTICLES

pytestmark = pytest.mark.e2e

QUESTION = "How dense are sodium-glass batteries?"
BRIEF = "Find the energy density of sodium-glass batteries"
NARRATION = "Looking for the measured energy density first."


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium() as browser:
        yield browser


@pytest.fixture
def ui(browser: Browser, agent_server, request) -> Iterator[UiPage]:
    """A fresh browser context on the UI; the test fails on any uncaught error in the page."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.set_default_timeout(20_000)
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    yield UiPage(page, agent_server.url, request.node.name)
    context.close()
    assert page_errors == [], f"the page threw: {page_errors}"


def happy_path(scripted, web, *, slow_fetch_s: float | None = None) -> str:
    """One research unit narrates, searches, reads the Halvorsen article and hands back one quoted finding;
    the orchestrator delivers a report citing it. Returns the article's URL."""
    article = ARTICLES["halvorsen-cell"]
    url = web.url(article.path)
    report = f"# Sodium-glass batteries\n\nThe Halvorsen cell reaches 412 Wh/kg [1].\n\n## Sources\n[1] {article.title} — {url}\n"
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate(BRIEF), submit(report)),
            researcher(
                turn(content=NARRATION, tool_calls=[call("web_search", query="sodium glass battery")]),
                turn(tool_calls=[call("web_fetch", url=url)], delay_s=slow_fetch_s),
                turn(
                    content=findings_json(
                        "They reach 412 Wh/kg.",
                        [{"finding": "They reach 412 Wh/kg.", "evidence": "412 Wh/kg", "source": url}],
                    )
                ),
            ),
        )
    )
    return url


def usage_value(turn, name: str) -> str:
    return (
        turn.locator(".usage-grid > div")
        .filter(has=turn.page.locator("dt", has_text=re.compile(f"^{name}$")))
        .locator("dd")
        .first.inner_text()
    )


def test_a_full_run_shows_searches_a_finished_lane_a_report_with_working_citations_and_the_usage(ui, scripted, web):
    url = happy_path(scripted, web)
    page = ui.open().page
    # Keyboard only: a new page puts the cursor in the question box; Ctrl+Enter sends it.
    expect(page.locator("#question")).to_be_focused()
    page.keyboard.type(QUESTION)
    page.keyboard.press("Control+Enter")

    run = ui.turn()
    end = ui.wait_for_end(run)
    expect(end).to_contain_text("Report delivered.")
    expect(run.locator(".status-line .phase")).to_have_text("Finished")

    expect(run.locator(".plan")).to_contain_text(BRIEF)
    search = run.locator(".feed-item.search")
    expect(search).to_have_count(1)
    expect(search.locator(".query")).to_have_text("sodium glass battery")
    hit = search.locator(".hit")
    expect(hit).to_have_count(1)
    expect(hit.locator(".card-title")).to_have_text(ARTICLES["halvorsen-cell"].title)
    expect(hit.locator(".card-domain")).to_have_text("127.0.0.1")
    expect(hit.locator(".initials")).to_have_text("IP")
    expect(run.locator(".feed-item.page a")).to_have_attribute("href", url)

    lane = run.locator(".lane")
    expect(lane).to_have_count(1)
    expect(lane.locator(".lane-state")).to_have_text("Done")
    expect(lane.locator(".lane-label")).to_have_text("research-subagent #1")
    expect(lane.locator(".lane-unit")).to_have_text(BRIEF)
    findings = lane.locator("details.findings")
    expect(findings.locator("summary")).to_have_text("Findings: 1")
    findings.locator("summary").click()
    expect(findings.locator("td").first).to_have_text("They reach 412 Wh/kg.")
    thinking = lane.locator("details.thinking")
    thinking.locator("summary").click()
    expect(thinking.locator(".thought")).to_have_text([NARRATION])

    report = run.locator("section.report")
    expect(report.locator(".report-body h1")).to_have_text("Sodium-glass batteries")
    expect(report.locator(".partial-banner")).to_have_count(0)
    source = report.locator("li.source")
    expect(source).to_have_count(1)
    expect(source.locator(".badge")).to_have_text("Verified: the quoted text is on the page")
    cite = report.locator("a.cite-link")
    expect(cite).to_have_text("1")
    cite.focus()
    page.keyboard.press("Enter")
    expect(source).to_be_focused()
    expect(source).to_be_in_viewport()
    source.get_by_role("button", name="Quote").click()
    expect(source.locator("blockquote")).to_have_text("412 Wh/kg")

    model_calls = len(scripted.requests())
    assert usage_value(run, "Model calls") == str(model_calls)
    assert usage_value(run, "Cost").startswith("$")
    assert usage_value(run, "Citations") == "1 verified"

    thread_id = ui.thread_id
    expect(page.locator(".thread-list a[aria-current=page]")).to_contain_text(QUESTION)
    state = httpx.get(f"{ui.base_url}/threads/{thread_id}/state", timeout=10).json()
    assert "412 Wh/kg [1]" in state["values"]["final_report"]
    ui.screenshot()

    # A reload of the finished thread replays the run: the same lane, report and usage, no "from state" note.
    page.reload()
    again = ui.turn()
    expect(again.locator(".end")).to_contain_text("Report delivered.")
    expect(again.locator(".end .outcome")).to_have_count(0)  # answered: the report speaks for itself
    expect(again.locator(".lane .lane-state")).to_have_text("Done")
    expect(again.locator(".feed-item.search")).to_have_count(1)
    expect(again.locator("a.cite-link")).to_have_text("1")
    expect(again.locator(".banner")).to_be_hidden()
    expect(again.locator(".lane details.thinking .thought")).to_have_text([NARRATION])
    assert usage_value(again, "Model calls") == str(model_calls)


def test_a_flagged_claim_is_marked_in_place_with_why_and_the_matching_sentence_of_its_source(ui, scripted, web):
    farm = web.url(ARTICLES["norre-bay-kelp"].path)
    findings = findings_json(
        "The farm stored 2,000 tonnes of CO2.",
        [
            {
                "finding": "The farm stored 2,000 tonnes of CO2.",
                "evidence": "sequestered 1,240 tonnes of carbon dioxide in 2023",
                "source": farm,
            }
        ],
    )
    report = (
        "# Kelp and carbon\n\nThe Norre Bay farm stored 2,000 tonnes of CO2 in 2023 [1]. Kelp grows fast. "
        "The farm lies in the bay [1].\n\n"
        f"## Sources\n[1] {ARTICLES['norre-bay-kelp'].title} — {farm}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find how much carbon the Norre Bay kelp farm stores"),
                submit(report),
                repeat_last=True,
            ),
            researcher(turn(tool_calls=[call("web_fetch", url=farm)]), turn(content=findings)),
        )
    )
    page = ui.open().page
    run = ui.ask("How much carbon does a kelp farm store?")
    end = ui.wait_for_end(run)
    expect(end).to_contain_text("Report delivered.")
    expect(end.locator(".outcome.outcome-partial")).to_contain_text("Some claims did not check out")

    report_section = run.locator("section.report")
    flagged = report_section.locator("mark.claim.flagged")
    expect(flagged).to_have_count(1)
    expect(flagged).to_contain_text("The Norre Bay farm stored 2,000 tonnes of CO2 in 2023")
    expect(flagged.locator(".unverified-tag")).to_have_text("unverified")
    expect(report_section.locator(".report-body")).to_contain_text("Kelp grows fast.")
    expect(report_section.locator("li.source .badge")).to_have_text("Unverified: a number is not in the quote")
    claims = report_section.locator("details.claims")
    expect(claims.locator("summary")).to_have_text(
        "1 of 2 claims checked; 0 supported, 1 marked [unverified] (citation accuracy 0%)"
    )
    expect(claims.locator("li.flagged .how")).to_have_text(" · figures and quotes looked up in the text")
    unchecked = claims.locator("li.unchecked")
    expect(unchecked.locator(".badge.unknown")).to_have_text(
        "Not checked: nothing in it to look up in the cited text, and no judge verdict"
    )
    expect(report_section).not_to_contain_text("Supported by the cited text")
    flagged.focus()
    page.keyboard.press("Enter")
    why = report_section.locator(".why")
    expect(why).to_contain_text("A number in this sentence is not in the cited text")
    expect(why).to_contain_text("2,000 tonnes")
    expect(why.locator(".source-sentence")).to_contain_text("sequestered 1,240 tonnes of carbon dioxide in 2023")
    expect(flagged).to_have_attribute("aria-expanded", "true")
    ui.screenshot()

    report_section.get_by_role("button", name="Copy as Markdown").click()
    expect(report_section.get_by_role("button", name="Copied")).to_be_visible()
    state = httpx.get(f"{ui.base_url}/threads/{ui.thread_id}/state", timeout=10).json()["values"]
    assert page.evaluate("navigator.clipboard.readText()") == state["final_report"]
    with page.expect_download() as download:
        report_section.get_by_role("button", name="Download evidence (JSON)").click()
    saved = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert download.value.suggested_filename == f"evidence-{ui.thread_id}.json"
    assert saved["report"] == state["final_report"]
    assert saved["claims"] == state["citations"] and saved["cited_sources"] == state["cited_sources"]
    assert [record["url"] for record in saved["evidence"]] == [farm]
    assert "1,240 tonnes of carbon dioxide" in saved["evidence"][0]["text"]
    downloads = report_section.get_by_role("group", name="Download the report").get_by_role("link")
    expect(downloads).to_have_text(["PDF", "Word", "HTML", "Markdown"])
    hrefs = [downloads.nth(n).get_attribute("href") for n in range(4)]
    assert hrefs == [f"/reports/{ui.thread_id}?format={f}" for f in ("pdf", "docx", "html", "md")]
    with page.expect_download() as document:
        downloads.first.click()
    assert document.value.suggested_filename == "how-much-carbon-does-a-kelp-farm-store.pdf"
    assert Path(document.value.path()).read_bytes().startswith(b"%PDF")


def test_a_report_with_unchecked_claims_shows_the_server_s_coverage_in_the_usage_and_over_the_claims(ui, scripted, web):
    url = web.url(ARTICLES["pharos-lighthouse"].path)
    finding = {"finding": "It stood over 100 metres tall.", "evidence": "stood over 100 metres tall", "source": url}
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find how tall the Lighthouse of Alexandria was"), submit(coverage_report(url))
            ),
            researcher(
                turn(tool_calls=[call("web_fetch", url=url)]), turn(content=findings_json("Its height.", [finding]))
            ),
        )
    )
    ui.open()
    run = ui.ask("How tall was the Lighthouse of Alexandria?")
    end = ui.wait_for_end(run)
    expect(end).to_contain_text("Report delivered.")

    assert usage_value(run, "Claims") == COVERAGE
    claims = run.locator("section.report details.claims")
    expect(claims.locator("summary")).to_have_text(COVERAGE)
    expect(claims.locator("li.unchecked")).to_have_count(3)
    expect(claims.locator("li.supported")).to_have_count(9)
    expect(claims.locator("li.unchecked .badge.unknown").first).to_have_text(
        "Not checked: nothing in it to look up in the cited text, and no judge verdict"
    )
    expect(run.locator("section.report mark.claim.flagged")).to_have_count(0)
    ui.screenshot()


QUESTIONS = ["Which region should I cover?", "Which timeframe matters: the last 12 months or longer?"]


def test_the_clarification_card_sends_the_paired_answers_and_the_run_resumes_on_the_same_thread(ui, scripted, web):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(tool_calls=[call("request_clarification", questions=QUESTIONS)]),
                plan_and_delegate("Find Nordic kelp farm figures for the last 12 months"),
                submit("# Kelp farms\n\nNordic kelp farms grew over the past year.\n"),
            ),
            researcher(turn(content=findings_json("Nordic farms grew."))),
        )
    )
    ui.open()
    asked = ui.ask("Tell me about kelp farms.")
    card = asked.locator("form.clarification")
    expect(card).to_be_visible()
    expect(asked.locator(".end")).to_contain_text("Waiting for your answers.")
    expect(card.locator("label")).to_have_text([f"1. {QUESTIONS[0]}", f"2. {QUESTIONS[1]}"])
    thread_id = ui.thread_id

    card.get_by_label(f"1. {QUESTIONS[0]}").fill("Nordic countries")
    card.get_by_label(f"2. {QUESTIONS[1]}").fill("last 12 months")
    card.get_by_label(f"2. {QUESTIONS[1]}").press("Enter")

    expect(card.get_by_role("button", name="Answers sent")).to_be_disabled()
    answered = ui.turn(1)
    expect(answered.locator(".question-text")).to_contain_text("1. Q: Which region should I cover? A: Nordic countries")
    expect(ui.wait_for_end(answered)).to_contain_text("Report delivered.")
    expect(answered.locator(".report-body h1")).to_have_text("Kelp farms")
    assert ui.thread_id == thread_id, "the answers went to another thread"
    planning = requests_of(scripted, "orchestrator")[1]["body"]["messages"][-1]
    assert planning["role"] == "user"
    assert message_text(planning) == (
        "Answers to your clarifying questions:\n"
        f"1. Q: {QUESTIONS[0]} A: Nordic countries\n"
        f"2. Q: {QUESTIONS[1]} A: last 12 months"
    )
    ui.screenshot()

    # Reloaded, the thread shows both turns, the card closed with the answers it sent.
    ui.page.reload()
    expect(ui.turns).to_have_count(2)
    replayed = ui.turn(0).locator("form.clarification")
    expect(replayed.get_by_label(f"1. {QUESTIONS[0]}")).to_have_value("Nordic countries")
    expect(replayed.get_by_label(f"1. {QUESTIONS[0]}")).to_be_disabled()
    expect(replayed.get_by_role("button", name="Answers sent")).to_be_disabled()
    expect(ui.turn(1).locator(".report-body h1")).to_have_text("Kelp farms")


def test_a_reports_images_from_elsewhere_are_links_and_nothing_loads_them(ui, scripted, web):
    article = ARTICLES["halvorsen-cell"]
    url, loopback_image, tracker = web.url(article.path), web.url("/image.png"), "https://tracker.example/pixel.png"
    report = (
        "# Sodium-glass batteries\n\nThe Halvorsen cell reaches 412 Wh/kg [1].\n\n"
        f"![Cell cross-section]({tracker}) ![Plan]({loopback_image})\n\n"
        f"## Sources\n[1] {article.title} — {url}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate(BRIEF), submit(report)),
            researcher(
                turn(tool_calls=[call("web_fetch", url=url)]),
                turn(
                    content=findings_json(
                        "They reach 412 Wh/kg.",
                        [{"finding": "They reach 412 Wh/kg.", "evidence": "412 Wh/kg", "source": url}],
                    )
                ),
            ),
        )
    )
    page = ui.open().page
    tracked: list[str] = []
    page.route("https://tracker.example/**", lambda route: (tracked.append(route.request.url), route.abort()))
    run = ui.ask(QUESTION)

    expect(ui.wait_for_end(run)).to_contain_text("Report delivered.")
    body = run.locator("section.report .report-body")
    expect(body.locator("h1")).to_have_text("Sodium-glass batteries")
    expect(body.locator("img")).to_have_count(0)
    assert tracked == [], "the page asked a third party for an image the report names"
    assert "/image.png" not in web.page_requests()
    expect(body.get_by_role("link", name="Image: Cell cross-section")).to_have_attribute("href", tracker)
    expect(body.get_by_role("link", name="Image: Plan")).to_have_attribute("href", loopback_image)
    ui.screenshot()


def test_a_reports_chart_is_drawn_by_the_server_with_its_failing_point_noted_and_its_data_on_demand(ui, scripted, web):
    early, recent = (web.url(ARTICLES[slug].path) for slug in ("streymoy-early", "streymoy-recent"))
    scripted.set_scenario(charted_series(early, recent))
    page = ui.open().page
    run = ui.ask(CHART_QUESTION)

    expect(ui.wait_for_end(run)).to_contain_text("Report delivered.")
    figure = run.locator("section.report figure.chart")
    expect(figure).to_have_count(1)
    image = figure.locator("img.chart-image")
    expect(image).to_have_attribute(
        "src", re.compile(rf"^/charts/{ui.thread_id}/[0-9a-f-]{{36}}/chart-[0-9a-f]{{16}}\.svg$")
    )
    expect(image).to_have_attribute("alt", re.compile("^line chart: Streymoy turbines, yearly generation; 6 points"))
    image.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    expect(figure.locator("figcaption")).to_contain_text("Checked: 5 of 6 values are each in the text of the source")
    expect(figure.locator(".chart-notes li")).to_have_text(
        re.compile(r"^¹ 2024: 63\.9 GWh \[2\] — 63\.9 GWh is not in")
    )
    expect(run.locator("section.report pre")).to_have_count(0)

    table = figure.locator("table.chart-data")
    expect(table).to_be_hidden()
    figure.get_by_role("button", name="Show data").click()
    expect(table).to_be_visible()
    expect(table.locator("tbody tr")).to_have_count(6)
    expect(table.locator("tr.failing td")).to_have_text(["2024", "63.9", "[2]", "does not check out ¹"])
    expect(table.locator("tr.failing a.cite-link")).to_have_attribute("href", re.compile("-src-2$"))
    figure.screenshot(path=str(ui.screenshot().with_name(f"{ui.name}-chart.png")))


def test_a_simple_question_is_answered_directly_without_research(ui, scripted):
    scripted.set_scenario(scenario(triage("SIMPLE"), direct_answerer("HTTP/3 runs over QUIC, on UDP.")))
    ui.open()
    run = ui.ask("What transport does HTTP/3 use?")

    expect(ui.wait_for_end(run)).to_contain_text("Answered directly, without research.")
    expect(run.locator("section.answer")).to_contain_text("HTTP/3 runs over QUIC, on UDP.")
    expect(run.locator(".activity")).to_be_hidden()
    expect(run.locator("section.report")).to_have_count(0)
    ui.screenshot()


def test_the_search_page_finds_a_passage_by_meaning_and_shows_its_document_anchor_and_whole_text(ui):
    page = ui.open().page
    page.get_by_role("link", name="Search documents").click()
    expect(page).to_have_url(re.compile(r"/ui/search$"))
    expect(page.locator("#question")).to_be_hidden()
    expect(page.get_by_label("Corpus")).to_have_value(corpus_fixture.CORPUS_NAME)

    # The question shares no rare word with the passage that answers it.
    page.get_by_label("Look for").fill(corpus_fixture.PARAPHRASE)
    page.get_by_label("Look for").press("Enter")

    expect(page.locator(".search-summary")).to_contain_text(
        f"in {corpus_fixture.CORPUS_TITLE}, searched by meaning and words."
    )
    first = page.locator(".corpus-hit").first
    expect(first.locator(".hit-title")).to_have_text("Maintenance › Recalibration (notes/maintenance.md)")
    expect(first.locator(".hit-document")).to_have_text("notes/maintenance.md")
    expect(first.locator(".hit-anchor")).to_have_text("#recalibration")
    first.get_by_text("The whole passage").click()
    expect(first.locator(".passage-text")).to_contain_text(corpus_fixture.DORMANT_QUOTE)
    assert "corpus=handbook" in page.url and "q=How+long" in page.url
    ui.screenshot("found")

    # Reloaded, the same search runs again from the URL.
    page.reload()
    expect(page.locator(".corpus-hit").first.locator(".hit-anchor")).to_have_text("#recalibration")

    # An empty query is caught in the form; an unknown corpus gets the server's words.
    page.get_by_label("Look for").fill("   ")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#corpus-search-error")).to_have_text("Type what to look for.")
    ui.open("/ui/search?corpus=atlas&q=gauge")
    expect(page.get_by_role("alert")).to_contain_text("The search failed.")
    expect(page.get_by_role("alert")).to_contain_text(
        "HTTP 404: no searchable corpus 'atlas'; the corpora are: handbook."
    )
    expect(page.locator(".corpus-hit")).to_have_count(0)
    ui.screenshot("unknown-corpus")

    # Back to research: the composer is there again.
    page.get_by_role("button", name="New research").click()
    expect(page.locator("#question")).to_be_visible()
    expect(page.locator(".corpus-search")).to_be_hidden()


def test_a_run_halted_by_its_budget_shows_the_guards_and_a_partial_report_marked_incomplete(ui, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    partial = findings_json(
        "The Halvorsen cell reached 412 Wh/kg.",
        [{"finding": "The Halvorsen cell reached 412 Wh/kg.", "evidence": "412 Wh/kg", "source": url}],
    )
    searches = [turn(content=partial, tool_calls=[call("web_search", query=f"sodium glass {n}")]) for n in range(12)]
    scripted.set_scenario(scenario(orchestrator(plan_and_delegate(BRIEF), submit("# Never\n")), researcher(*searches)))

    ui.open()
    run = ui.ask(QUESTION, max_tool_calls=10)

    end = ui.wait_for_end(run)
    expect(end).to_contain_text("Stopped: the budget ran out")
    expect(end.locator(".outcome.outcome-budget_exhausted")).to_contain_text("re-run with a higher limit")
    guards = run.locator(".feed-item.note")
    expect(
        guards.filter(has_text=re.compile(r"Budget \d+ % used \(tool calls \d+ of 10\): wrapping up"))
    ).to_have_count(1)
    expect(guards.filter(has_text="Budget used up (tool calls 10 of 10): stopping")).to_have_count(1)
    expect(run.locator(".lane .lane-state")).to_have_text("Stopped")
    expect(run.locator("details.findings summary")).to_contain_text("stopped because the budget ran out")
    report = run.locator("section.report")
    expect(report).to_have_class(re.compile(r"\bpartial\b"))
    expect(report.locator(".report-bar h2")).to_have_text("Partial report")
    expect(report.locator(".partial-banner")).to_contain_text("Incomplete.")
    expect(report.locator(".report-body")).to_contain_text("412 Wh/kg")
    assert usage_value(run, "Tool calls") == "10"
    assert "WRAP UP NOW" not in ui.page.inner_text("body"), "a harness message reached the page"
    ui.screenshot()


def test_reloading_mid_run_rejoins_the_stream_and_the_run_finishes_live(ui, scripted, web):
    happy_path(scripted, web, slow_fetch_s=4)
    ui.open()
    run = ui.ask(QUESTION)
    expect(run.locator(".feed-item.search .hit")).to_have_count(1)
    expect(run.locator(".status-line")).to_have_class(re.compile("is-live"))
    url = ui.page.url

    ui.page.reload()

    assert ui.page.url == url
    rejoined = ui.turn()
    expect(rejoined.locator(".question-text")).to_have_text(QUESTION)
    expect(rejoined.locator(".feed-item.search .hit")).to_have_count(1)
    expect(rejoined.locator(".status-line")).to_have_class(re.compile("is-live"))
    expect(rejoined.get_by_role("button", name="Stop")).to_be_visible()
    expect(rejoined.locator(".lane details.thinking summary")).to_have_text("Thinking (1)")  # replayed too
    ui.screenshot("rejoined")
    expect(ui.wait_for_end(rejoined)).to_contain_text("Report delivered.")
    expect(rejoined.locator(".lane")).to_have_count(1)
    expect(rejoined.locator(".feed-item.search")).to_have_count(1)
    expect(rejoined.locator(".feed-item.page")).to_have_count(1)
    expect(rejoined.locator(".report-body h1")).to_have_text("Sodium-glass batteries")
    expect(ui.turns).to_have_count(1)
    ui.screenshot()


def test_the_first_stop_wraps_up_and_the_report_of_what_was_found_is_still_written(ui, scripted, web):
    report = "# Sodium batteries\n\nSodium cells are cheaper than lithium cells.\n"
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find sodium prices"), submit(report)),
            researcher(
                turn(tool_calls=[call("web_search", query="sodium battery price")], delay_s=3),
                turn(content=findings_json("Sodium cells are cheaper than lithium cells.")),
            ),
        )
    )
    ui.open()
    run = ui.ask("How cheap are sodium batteries?")
    expect(run.locator(".lane .lane-state")).to_have_text("Running")
    stop = run.get_by_role("button", name="Stop")

    stop.click()

    expect(run.get_by_role("button", name="Stop now")).to_be_visible()
    expect(run.locator(".feed-item.note").filter(has_text="Wrapping up at your request")).to_have_count(1)
    expect(run.locator(".status-line .phase")).to_have_text("Wrapping up")
    ui.screenshot("wrapping-up")
    expect(ui.wait_for_end(run)).to_contain_text("Report delivered.")
    expect(run.locator("section.report")).not_to_have_class(re.compile(r"\bpartial\b"))
    expect(run.locator(".report-body h1")).to_have_text("Sodium batteries")
    assert web.tavily_requests() == [], "a search started after the wrap-up request"
    sent = " ".join(message_text(m) for m in requests_of(scripted, "research-subagent")[-1]["body"]["messages"])
    assert "WRAP UP NOW" in sent
    ui.screenshot()


def test_while_a_run_is_live_the_composer_steers_it_instead_of_starting_another(ui, scripted, web):
    report = "# Sodium batteries\n\nSodium cells are cheaper than lithium cells.\n"
    steer = "Also cover how long sodium cells last"
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find sodium prices"),
                turn(tool_calls=[call("task", description=steer, subagent_type="research-subagent")]),
                submit(report),
            ),
            researcher(
                turn(tool_calls=[call("web_search", query="sodium battery price")], delay_s=3),
                turn(content=findings_json("Sodium cells are cheaper than lithium cells.")),
            ),
        )
    )
    ui.open()
    run = ui.ask("How cheap are sodium batteries?")
    expect(run.locator(".lane .lane-state").first).to_have_text("Running")
    expect(ui.page.locator(".ask label.ask-label")).to_have_text("Steer the run in progress")

    ui.page.fill("#question", steer)
    ui.page.get_by_role("button", name="Steer").click()

    expect(run.locator(".feed-item.note").filter(has_text=f"You steered the run: \u201c{steer}\u201d")).to_have_count(1)
    ui.screenshot("steered")
    expect(ui.wait_for_end(run)).to_contain_text("Report delivered.")
    assert ui.turns.count() == 1, "the steering message started a run of its own"
    next_call = requests_of(scripted, "orchestrator")[1]["body"]["messages"]
    assert f'1. "{steer}"' in message_text(next_call[-1])
    expect(ui.page.get_by_role("button", name="Research", exact=True)).to_be_visible()


def test_a_second_stop_stops_now_and_a_partial_report_of_the_findings_so_far_arrives(ui, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(orchestrator(plan_and_delegate(BRIEF), submit("# Never\n")), researcher_finds_then_hangs(url))
    )
    ui.open()
    run = ui.ask(QUESTION)
    expect(run.locator(".feed-item.search")).to_have_count(2)
    deadline = time.monotonic() + 20
    while len(requests_of(scripted, "research-subagent")) < 3:  # the sub-agent now waits 30 s on its model
        assert time.monotonic() < deadline, "the sub-agent never made its slow call"
        time.sleep(0.05)

    run.get_by_role("button", name="Stop").click()
    run.get_by_role("button", name="Stop now").click()
    asked = time.monotonic()

    expect(ui.wait_for_end(run, timeout_s=15)).to_contain_text("Stopped at your request")
    assert time.monotonic() - asked < 10, "stopping now waited for the sub-agent's slow model call"
    expect(run.locator(".lane .lane-state")).to_have_text("Stopped")
    report = run.locator("section.report")
    expect(report.locator(".partial-banner")).to_contain_text("Incomplete.")
    expect(report.locator(".report-body")).to_contain_text("412 Wh/kg")
    expect(run.get_by_role("button", name=re.compile("^Stop"))).to_have_count(0)
    ui.screenshot()


def test_a_server_error_is_shown_with_its_detail_and_retry_runs_again(ui, scripted, web):
    scripted.set_scenario(scenario(orchestrator(turn(error=error(401, "Incorrect API key provided")))))
    ui.open()
    run = ui.ask("Summarise sodium batteries.")

    end = ui.wait_for_end(run)
    expect(end).to_have_class(re.compile(r"\berror\b"))
    expect(end).to_contain_text("The model could not be used.")
    expect(end).to_contain_text("rejected the API key (401 Unauthorized)")
    expect(run.locator(".status-line .phase")).to_have_text("Ended with an error")
    ui.screenshot()

    # The thread keeps the failed turn, so the retried turn is the orchestrator's second on it.
    scripted.set_scenario(scenario(orchestrator(submit("# Sodium batteries\n\nThey are cheap.\n"), repeat_last=True)))
    end.get_by_role("button", name="Retry").click()
    retried = ui.turn(1)
    expect(retried.locator(".question-text")).to_have_text("Summarise sodium batteries.")
    expect(ui.wait_for_end(retried)).to_contain_text("Report delivered.")

    # A thread the server does not know: the page says so with the server's detail, and offers a retry.
    missing = str(uuid.uuid4())
    ui.open(f"/ui/threads/{missing}")
    problem = ui.page.locator(".page-problem .problem")
    expect(problem).to_contain_text("Could not open this research.")
    expect(problem).to_contain_text("HTTP 404")
    expect(problem).to_contain_text(missing)
    expect(problem.get_by_role("button", name="Retry")).to_be_visible()
    ui.screenshot("unknown-thread")


def test_a_run_made_by_another_client_reads_at_360_px_in_dark_mode_from_the_thread_state(
    browser, agent_server, scripted, web, request
):
    url = happy_path(scripted, web)
    client = get_sync_client(url=agent_server.url)
    thread = client.threads.create()
    client.runs.wait(thread["thread_id"], GRAPH_ID, input={"messages": [{"role": "user", "content": QUESTION}]})

    context = browser.new_context(
        viewport={"width": 360, "height": 780}, color_scheme="dark", is_mobile=True, has_touch=True
    )
    try:
        ui = UiPage(context.new_page(), agent_server.url, request.node.name)
        page = ui.open(f"/ui/threads/{thread['thread_id']}").page
        run = ui.turn()
        expect(run.locator(".banner")).to_contain_text("kept no live events")
        report = run.locator("section.report")
        expect(report.locator(".report-body h1")).to_have_text("Sodium-glass batteries")
        expect(report.locator("li.source .badge")).to_have_text("Verified: the quoted text is on the page")
        expect(report.locator("li.source a")).to_have_attribute("href", url)
        report.locator("a.cite-link").click()
        expect(report.locator("li.source")).to_be_focused()

        assert page.evaluate("document.documentElement.scrollWidth") <= 360, "the page scrolls sideways at 360 px"
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        red, green, blue = (int(c) for c in re.findall(r"\d+", background)[:3])
        assert (0.2126 * red + 0.7152 * green + 0.0722 * blue) < 60, f"not a dark background: {background}"
        menu = page.get_by_role("button", name="Past research")
        expect(page.locator("#threads")).to_be_hidden()
        menu.focus()
        page.keyboard.press("Enter")
        expect(menu).to_have_attribute("aria-expanded", "true")
        expect(page.locator("#threads")).to_be_visible()
        expect(page.locator("#threads a").filter(has_text=QUESTION).first).to_be_visible()
        ui.screenshot()
    finally:
        context.close()


KELP_UNITS = [
    {"brief": "Find 2025 kelp output in Norway", "expected_sources": ["Statistics Norway"]},
    {"brief": "Find 2025 kelp output in Scotland"},
]


def kelp_plan_reviewed() -> dict[str, Any]:
    """The orchestrator proposes the two kelp units for review; once answered, they run and the report follows."""
    return scenario(
        orchestrator(
            turn(tool_calls=[call("propose_plan", units=KELP_UNITS)]),
            # Never asked: the approved plan's units start without a model call.
            turn(content="(unused)"),
            submit("# Kelp farms\n\nOutput grew.\n"),
        ),
        researcher(turn(content=findings_json("Output grew.")), repeat_last=True),
    )


def test_with_review_on_the_plan_card_shows_the_units_and_the_edited_plan_is_what_the_sub_agent_gets(ui, scripted):
    scripted.set_scenario(kelp_plan_reviewed())
    ui.open()
    ui.page.get_by_label("Review the plan first").check()

    asked = ui.ask("How is kelp farming doing?")

    card = asked.locator("form.plan-review")
    expect(card).to_be_visible()
    expect(card.get_by_label("Unit 1")).to_have_value("Find 2025 kelp output in Norway")
    expect(card).to_contain_text("Expected sources: Statistics Norway")
    expect(card.locator(".estimate")).to_contain_text("Estimated cost:")
    assert requests_of(scripted, "research-subagent") == [], "no unit starts before the review"
    ui.screenshot()

    # Every brief cleared is no plan to run: the card says so and sends nothing.
    card.get_by_label("Unit 1").fill("")
    card.get_by_label("Unit 2").fill("")
    card.get_by_role("button", name="Run edited plan").click()
    expect(card.get_by_role("alert")).to_have_text("Every brief is empty: to start nothing, reject the plan.")
    expect(card.get_by_role("button", name="Approve")).to_be_enabled()

    card.get_by_label("Unit 1").fill("Find 2025 kelp output in Iceland")
    card.get_by_role("button", name="Run edited plan").click()

    expect(card.get_by_role("button", name="Approve")).to_be_disabled()
    expect(ui.wait_for_end(asked)).to_contain_text("Report delivered.")
    expect(asked.locator(".report-body h1")).to_have_text("Kelp farms")
    started = [brief_of(r) for r in requests_of(scripted, "research-subagent")]
    assert started == ["Find 2025 kelp output in Iceland"]


def test_the_plan_review_renders_as_an_approval_in_a_deep_agents_ui_like_page_and_its_one_decision_runs_the_plan(
    browser, agent_server, scripted, request
):
    """The page (tests/fixtures/clients/deep-agents-ui-like.html) reads the interrupt and answers it as
    deep-agents-ui does: the action request shown on the last AI message's tool call of the same name, and a
    resume carrying exactly one decision and no config. Plan review is on only in the first run's configurable
    (not in the assistant's config, not in the server's settings), so the resume runs on a graph built without
    plan review, which still answers the pending review."""
    scripted.set_scenario(kelp_plan_reviewed())
    client = get_sync_client(url=agent_server.url)
    # As deep-agents-ui picks it: the graph's own assistant, the one the system created.
    [assistant] = [
        a for a in client.assistants.search(graph_id=GRAPH_ID) if a["metadata"].get("created_by") == "system"
    ]
    context = browser.new_context()
    resumes: list[dict] = []
    try:
        thread_id = client.threads.create()["thread_id"]
        question = {"messages": [{"role": "user", "content": "How is kelp farming doing?"}]}
        client.runs.wait(
            thread_id, assistant["assistant_id"], input=question, config={"configurable": {"plan_review": True}}
        )
        assert client.threads.get(thread_id)["status"] == "interrupted"
        assert requests_of(scripted, "research-subagent") == [], "no unit starts before the review"

        page = context.new_page()
        page.set_default_timeout(30_000)
        page_errors: list[str] = []
        page.on("pageerror", lambda exc: page_errors.append(str(exc)))
        page.on("request", lambda r: resumes.append(r.post_data_json) if "/runs" in r.url else None)
        fixture = Path(__file__).parents[1] / "fixtures" / "clients" / "deep-agents-ui-like.html"
        page.route(
            f"{agent_server.url}/deep-agents-ui-like*",
            lambda route: route.fulfill(content_type="text/html", body=fixture.read_text(encoding="utf-8")),
        )
        page.goto(f"{agent_server.url}/deep-agents-ui-like?thread={thread_id}&assistant={assistant['assistant_id']}")

        card = page.locator("section.approval")
        expect(card).to_contain_text("Approval Required")
        expect(card.locator("h3")).to_have_text("propose_plan")
        expect(card.locator("ol.briefs li")).to_have_text([u["brief"] for u in KELP_UNITS])
        expect(card.get_by_role("button")).to_have_text(["Approve", "Edit", "Reject"])
        UiPage(page, agent_server.url, request.node.name).screenshot()
        card.get_by_role("button", name="Approve").click()

        expect(page.get_by_role("status")).to_have_text("Finished")
        expect(page.locator("article.answer")).to_contain_text("Kelp farms")
        assert page_errors == [], f"the page threw: {page_errors}"
    finally:
        context.close()

    [resume] = resumes
    assert resume["command"] == {"resume": {"decisions": [{"type": "approve"}]}}, "exactly one decision"
    assert resume["input"] is None and resume["stream_mode"] == ["values", "messages-tuple"]
    assert "config" not in resume and "context" not in resume, "the resume carries no settings of its own"
    first_turns = [r for r in requests_of(scripted, "research-subagent") if r["turn"] == 0]
    assert sorted(brief_of(r) for r in first_turns) == sorted(u["brief"] for u in KELP_UNITS)
    state = client.threads.get_state(thread_id)
    assert state["values"]["final_report"].startswith("# Kelp farms")
    assert not state.get("interrupts") and client.threads.get(thread_id)["status"] == "idle"
    # The run that paused on the review, then the page's resume: both ended without an error.
    assert [run["status"] for run in client.runs.list(thread_id)] == ["success", "success"]
    last = state["values"]["messages"][-1]
    assert last["type"] == "ai" and last["content"].startswith("# Kelp farms"), "the report is the last answer"


def test_a_refused_plan_answer_shows_why_on_a_deep_agents_ui_like_approval_and_approving_there_runs_the_plan(
    browser, agent_server, scripted, request
):
    """A script answered the review with a decision deep-agents-ui would never send; the run stayed paused, and
    the approval deep-agents-ui draws (tests/fixtures/clients/deep-agents-ui-like.html) opens with why."""
    scripted.set_scenario(kelp_plan_reviewed())
    client = get_sync_client(url=agent_server.url)
    thread_id = client.threads.create()["thread_id"]
    question = {"messages": [{"role": "user", "content": "How is kelp farming doing?"}]}
    client.runs.wait(thread_id, GRAPH_ID, input=question, config={"configurable": {"plan_review": True}})
    client.runs.wait(thread_id, GRAPH_ID, command={"resume": {"decisions": [{"type": "approve", "units": []}]}})
    assert client.threads.get(thread_id)["status"] == "interrupted"
    assert requests_of(scripted, "research-subagent") == []
    [assistant] = [
        a for a in client.assistants.search(graph_id=GRAPH_ID) if a["metadata"].get("created_by") == "system"
    ]
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(30_000)
        fixture = Path(__file__).parents[1] / "fixtures" / "clients" / "deep-agents-ui-like.html"
        page.route(
            f"{agent_server.url}/deep-agents-ui-like*",
            lambda route: route.fulfill(content_type="text/html", body=fixture.read_text(encoding="utf-8")),
        )
        page.goto(f"{agent_server.url}/deep-agents-ui-like?thread={thread_id}&assistant={assistant['assistant_id']}")

        card = page.locator("section.approval")
        expect(card.locator(".description")).to_contain_text(
            'Your answer was not used: the approve decision has unknown keys "units"; it has only "type". '
            "The plan is still waiting for your review: approve, edit or reject it."
        )
        expect(card.locator("ol.briefs li")).to_have_text([u["brief"] for u in KELP_UNITS])
        UiPage(page, agent_server.url, request.node.name).screenshot()
        card.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("status")).to_have_text("Finished")
    finally:
        context.close()

    started = sorted(brief_of(r) for r in requests_of(scripted, "research-subagent") if r["turn"] == 0)
    assert started == sorted(u["brief"] for u in KELP_UNITS)


def test_a_blank_question_is_refused_under_the_question_box_and_an_over_long_one_ends_saying_why(ui, scripted):
    scripted.set_scenario(scenario(orchestrator(submit("# Unused\n"), repeat_last=True)))
    page = ui.open().page

    page.fill("#question", "  \n\t ")
    page.get_by_role("button", name="Research", exact=True).click()

    expect(page.locator("#question-problem")).to_have_text("The question is empty: write what should be researched.")
    expect(page.locator("#question")).to_be_focused()
    expect(ui.turns).to_have_count(0)
    ui.screenshot("blank")
    page.keyboard.type("Kelp")
    expect(page.locator("#question-problem")).to_be_empty()

    # Past the server's DRA_MAX_QUESTION_CHARS (200,000): the run ends at once, and the turn says why.
    run = ui.ask("Compare: " + "x" * 200_000)
    end = ui.wait_for_end(run)
    expect(end).to_have_class(re.compile(r"\berror\b"))
    expect(end).to_contain_text("The run could not start: the question is empty or too long.")
    expect(end).to_contain_text("The question is 200,009 characters long and this server takes at most 200,000")
    assert scripted.requests() == [], "a refused question made model calls"


def test_the_report_options_set_the_language_length_and_sections_the_orchestrator_is_given(ui, scripted, web):
    article = ARTICLES["halvorsen-cell"]
    url = web.url(article.path)
    sections = ["Contexte", "Performances", "Limites", "Perspectives"]
    body = "\n\n".join(
        f"## {heading}\n\n" + ("La cellule atteint 412 Wh/kg [1]." if heading == "Performances" else "Texte.")
        for heading in sections
    )
    report = f"# Rapport\n\nRésumé.\n\n{body}\n\n## Sources\n[1] {article.title} — {url}\n"
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Trouver la densité"), submit(report)),
            researcher(
                turn(tool_calls=[call("web_fetch", url=url)]),
                turn(content=findings_json("412 Wh/kg.", [{"finding": "412", "evidence": "412 Wh/kg", "source": url}])),
            ),
        )
    )
    ui.open()
    ui.page.get_by_label("Language").fill("fr")
    ui.page.get_by_label("Length").select_option("brief")
    ui.page.get_by_label("Sections").fill("## Contexte\n## Performances\n## Limites\n## Perspectives")

    asked = ui.ask("How dense are sodium-glass batteries?")

    expect(ui.wait_for_end(asked)).to_contain_text("Report delivered.")
    expect(asked.locator(".report-body h2").first).to_have_text("Contexte")
    prompt = system_text(requests_of(scripted, "orchestrator")[0]["body"])
    assert "clarifying questions in French" in prompt
    assert "The user asked for a brief report" in prompt
    assert "1. Contexte\n2. Performances\n3. Limites\n4. Perspectives" in prompt
    expect(asked.locator(".usage-grid")).to_contain_text("In fr: Figures, quotes (kept in their source's language)")
    ui.screenshot()
