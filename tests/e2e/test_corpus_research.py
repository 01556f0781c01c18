"""Research over local corpora through ``langgraph dev``: a sub-agent searches and reads a passage, the report
cites it as ``corpus://…`` with a readable Sources line, the evidence keeps the passage, and web and corpus
sources share one numbering; a paraphrased brief finds a passage by meaning, office files are cited at their
sheet cell and heading, and a paper read at arXiv and at its DOI is one source. The session server has the
test corpus (``testkit/corpus.py``) declared, indexed and embedded with the bundled model."""

from __future__ import annotations

import pytest

from testkit import corpus as fixture
from testkit.agent_server import stored_records, stream_run
from testkit.office import DOCX_QUOTE, XLSX_QUOTE
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
from testkit.scripted_model import call, turn
from testkit.web import ARTICLES, PAPER_ARXIV_ID, PAPER_QUOTE, PAPER_TITLE

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

FLUX_URL = "corpus://handbook/guide/config.html#GUC-FLUX-BUFFER"
FLUX_TITLE = (
    "Halvorsen Handbook — 20.4. Resource Consumption › 20.4.1. Memory › flux_buffer (integer) (guide/config.html)"
)
FLUX_FINDING = "The flux_buffer setting defaults to four megabytes (4MB)."
WEB_QUOTE = "reached an energy density of 412 Wh/kg in independent tests"


def tool_names(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request["body"].get("tools") or ()}


def reads_flux(passage_id: str, *extra_findings: dict, web_url: str | None = None) -> dict:
    turns = [turn(tool_calls=[call("corpus_search", query="default value of flux_buffer", corpus="handbook")])]
    if web_url:
        turns.append(turn(tool_calls=[call("web_fetch", url=web_url)]))
    turns.append(turn(tool_calls=[call("corpus_read", id=passage_id)]))
    finding = {"finding": FLUX_FINDING, "evidence": fixture.FLUX_QUOTE, "source": FLUX_URL}
    turns.append(turn(content=findings_json(FLUX_FINDING, [finding, *extra_findings])))
    return researcher(*turns)


async def test_a_sub_agent_reads_a_corpus_passage_and_the_report_cites_it_with_a_readable_sources_line(
    agent_server, scripted, test_corpus
):
    passage_id = test_corpus.passage_id("flux_buffer")
    written = f"# Flux buffer\n\nThe flux buffer defaults to 4MB [1].\n\n## Sources\n[1] config.html — {FLUX_URL}\n"
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the default flux_buffer in the Halvorsen Handbook corpus"), submit(written)
            ),
            reads_flux(passage_id),
        )
    )

    run = await stream_run(agent_server.url, "What is the default flux_buffer of the Halvorsen engine?")

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    query = run.of_type("search_query")[0]
    assert (query["source"], query["role"]) == ("corpus:handbook", "research-subagent")
    results = run.of_type("search_results")[0]
    assert results["ok"] and results["results"][0]["url"] == FLUX_URL and results["results"][0]["domain"] == "handbook"
    read = [e for e in run.of_type("page_fetched") if e["url"] == FLUX_URL]
    assert read and read[0]["ok"] and read[0]["title"] == FLUX_TITLE
    source = next(e for e in run.of_type("source") if e["url"] == FLUX_URL)
    assert (source["domain"], source["title"]) == ("handbook", FLUX_TITLE)

    report = run.values["final_report"]
    assert report.endswith(f"## Sources\n[1] {FLUX_TITLE} — {FLUX_URL}"), report
    assert "[unverified]" not in report
    [citation] = run.values["cited_sources"]
    assert (citation["url"], citation["verified"], citation["reason"]) == (FLUX_URL, True, "quote_verified")
    [claim] = run.values["citations"]
    assert claim["claim"].startswith("The flux buffer defaults to 4MB") and claim["verdict"] == "supported", claim
    assert [s["url"] for s in claim["sources"]] == [FLUX_URL], "the claim is checked against the passage it cites"
    entry = next(e for e in run.values["evidence"] if e["kind"] == "corpus")
    assert entry["url"] == FLUX_URL and "text" not in entry
    assert entry["corpus"]["name"] == "handbook" and entry["corpus"]["path"] == "guide/config.html"
    assert entry["corpus"]["anchor"] == "GUC-FLUX-BUFFER" and len(entry["corpus"]["file_sha256"]) == 64
    stored = (await stored_records(agent_server.url, run))[entry["id"]]
    assert fixture.FLUX_QUOTE.replace("4MB", "`4MB`") in stored["text"] and stored["corpus"] == entry["corpus"]
    messages = [m for m in run.values["messages"] if m["type"] == "ai"]
    shown = messages[-1]["content"]
    assert f"defaults to 4MB [[1]]({FLUX_URL})" in shown, "a generic client shows the report with its marker linked"
    assert shown.rstrip().endswith(f"## Sources\n- [1] [{FLUX_TITLE}]({FLUX_URL})"), shown


async def test_the_prompts_list_the_corpora_and_the_research_sub_agent_gets_the_corpus_tools(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Check the handbook"), submit("# Handbook\n\nNothing needed.\n\n## Sources\n")
            ),
            researcher(turn(content=findings_json("Nothing to look up."))),
        )
    )

    await stream_run(agent_server.url, "Anything in the handbook?")

    planner = system_text(requests_of(scripted, "orchestrator")[0]["body"])
    assert (
        "## Local corpora" in planner
        and "`handbook`: Halvorsen Handbook — Manuals of the Halvorsen engine (10 documents, " in planner
    )
    worker = requests_of(scripted, "research-subagent")[0]
    assert {"corpus_search", "corpus_read", "web_search", "web_fetch"} <= tool_names(worker)
    assert "`handbook` (Halvorsen Handbook)" in system_text(worker["body"]) and "## The web" in system_text(
        worker["body"]
    )


async def test_a_mixed_web_and_corpus_report_numbers_its_sources_in_one_sequence(
    agent_server, scripted, web, test_corpus
):
    article = ARTICLES["halvorsen-cell"]
    web_url = web.url(article.path)
    web_finding = {"finding": "The Halvorsen cell reached 412 Wh/kg.", "evidence": WEB_QUOTE, "source": web_url}
    # The writer numbers the sources in the order it found them, not in the order the text cites them.
    written = (
        "# Halvorsen\n\nThe cell reached 412 Wh/kg in independent tests [2]. Its flux buffer defaults to 4MB [1].\n\n"
        f"## Sources\n[1] Handbook — {FLUX_URL}\n[2] {article.title} — {web_url}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the cell's density and its flux_buffer default"), submit(written)),
            reads_flux(test_corpus.passage_id("flux_buffer"), web_finding, web_url=web_url),
        )
    )

    run = await stream_run(agent_server.url, "How dense is the Halvorsen cell and what is its flux buffer?")

    report = run.values["final_report"]
    assert "412 Wh/kg in independent tests [1]. Its flux buffer defaults to 4MB [2]." in report
    sources = report.split("## Sources\n", 1)[1].splitlines()
    assert sorted(sources) == [f"[1] {article.title} — {web_url}", f"[2] {FLUX_TITLE} — {FLUX_URL}"]
    assert {(c["index"], c["url"], c["verified"]) for c in run.values["cited_sources"]} == {
        (1, web_url, True),
        (2, FLUX_URL, True),
    }
    assert [c["verdict"] for c in run.values["citations"]] == ["supported", "supported"], run.values["citations"]
    state_sources = [s["url"] for s in run.values["sources"]]
    assert FLUX_URL in state_sources and web_url in state_sources
    assert [s["index"] for s in run.values["sources"]] == list(range(1, len(state_sources) + 1)), (
        "one numbering for both"
    )


async def test_with_web_search_off_the_run_researches_only_its_corpora(agent_server, scripted, test_corpus):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find flux_buffer"), submit("# Flux\n\nNone.\n\n## Sources\n")),
            researcher(turn(content=findings_json("Nothing."))),
        )
    )

    await stream_run(agent_server.url, "flux_buffer?", configurable={"web_search": False})

    worker = requests_of(scripted, "research-subagent")[0]
    assert {"corpus_search", "corpus_read"} <= tool_names(worker)
    assert not {"web_search", "web_fetch"} & tool_names(worker)
    for body in (worker["body"], requests_of(scripted, "orchestrator")[0]["body"]):
        assert "## No web access" in system_text(body) and "## The web" not in system_text(body)


async def test_a_run_that_names_an_unknown_corpus_is_warned_and_gets_no_corpus_tools(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Look it up"), submit("# X\n\nNone.\n\n## Sources\n")),
            researcher(turn(content=findings_json("Nothing."))),
        )
    )

    run = await stream_run(agent_server.url, "Look it up.", configurable={"corpora": ["atlas"]})

    warnings = [s["detail"] for s in run.statuses("warning")]
    assert any("'atlas'" in w and "known corpora: handbook" in w for w in warnings), warnings
    assert not {"corpus_search", "corpus_read"} & tool_names(requests_of(scripted, "research-subagent")[0])


DORMANT_URL = "corpus://handbook/notes/maintenance.md#recalibration"


async def test_a_paraphrased_brief_finds_by_meaning_a_passage_that_shares_no_rare_word_with_it_and_cites_it(
    agent_server, scripted, test_corpus
):
    passage_id = test_corpus.passage_id("recalibrated powered down gauge")
    finding = "A gauge switched off for more than 72 hours must be recalibrated before use."
    written = (
        f"# Dormant gauges\n\nA gauge that has been off for more than 72 hours must be recalibrated [1].\n\n"
        f"## Sources\n[1] Maintenance — {DORMANT_URL}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate(fixture.PARAPHRASE), submit(written)),
            researcher(
                turn(tool_calls=[call("corpus_search", query=fixture.PARAPHRASE, corpus="handbook")]),
                turn(tool_calls=[call("corpus_read", id=passage_id)]),
                turn(
                    content=findings_json(
                        finding, [{"finding": finding, "evidence": fixture.DORMANT_QUOTE, "source": DORMANT_URL}]
                    )
                ),
            ),
        )
    )

    run = await stream_run(agent_server.url, fixture.PARAPHRASE)

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    results = run.of_type("search_results")[0]
    assert results["ok"] and results["results"][0]["url"] == DORMANT_URL, "found by meaning, ranked first"
    assert test_corpus.keyword_hits(fixture.PARAPHRASE) == [], "no word of the brief is in the passage"
    [citation] = run.values["cited_sources"]
    assert (citation["url"], citation["verified"], citation["reason"]) == (DORMANT_URL, True, "quote_verified")
    [claim] = run.values["citations"]
    assert claim["verdict"] == "supported" and [s["url"] for s in claim["sources"]] == [DORMANT_URL], claim
    assert "[unverified]" not in run.values["final_report"]


XLSX_URL = "corpus://handbook/office/harvest.xlsx#sheet=Harvest!A1"
DOCX_URL = "corpus://handbook/office/kelp-review.docx#carbon-storage"


async def test_a_word_report_and_an_excel_sheet_in_a_corpus_are_searched_and_cited_at_their_heading_and_cell(
    agent_server, scripted, test_corpus
):
    sheet_id = test_corpus.passage_id("Vardo 2023 tonnes harvest")
    docx_id = test_corpus.passage_id("kelp farm stored tonnes of carbon second season")
    findings = [
        {"finding": "Vardo harvested 318 tonnes in 2023.", "evidence": XLSX_QUOTE, "source": XLSX_URL},
        {
            "finding": "The farm stored 1,240 tonnes of carbon in its second season.",
            "evidence": DOCX_QUOTE,
            "source": DOCX_URL,
        },
    ]
    written = (
        "# Kelp\n\nVardo harvested 318 tonnes in 2023 [1]. The farm stored 1,240 tonnes of carbon in its second "
        f"season [2].\n\n## Sources\n[1] harvest — {XLSX_URL}\n[2] review — {DOCX_URL}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the harvest and the carbon stored"), submit(written)),
            researcher(
                turn(tool_calls=[call("corpus_search", query="Vardo harvest tonnes 2023", corpus="handbook")]),
                turn(tool_calls=[call("corpus_read", id=sheet_id)]),
                turn(tool_calls=[call("corpus_read", id=docx_id)]),
                turn(content=findings_json("Harvest and carbon.", findings)),
            ),
        )
    )

    run = await stream_run(agent_server.url, "How much did the Vardo site harvest and how much carbon was stored?")

    results = run.of_type("search_results")[0]
    assert results["results"][0]["url"] == XLSX_URL
    assert {(c["url"], c["verified"]) for c in run.values["cited_sources"]} == {(XLSX_URL, True), (DOCX_URL, True)}
    assert [c["verdict"] for c in run.values["citations"]] == ["supported", "supported"], run.values["citations"]
    sources = run.values["final_report"].split("## Sources\n", 1)[1]
    assert f"Halvorsen Handbook — harvest.xlsx › Harvest (from row 1) (office/harvest.xlsx) — {XLSX_URL}" in sources
    assert (
        f"Halvorsen Handbook — Kelp Farm Annual Review › Carbon storage (office/kelp-review.docx) — {DOCX_URL}"
        in sources
    )
    sheet = next(e for e in run.values["evidence"] if e["url"] == XLSX_URL and e["kind"] == "corpus")
    assert sheet["corpus"]["anchor"] == "sheet=Harvest!A1" and sheet["corpus"]["path"] == "office/harvest.xlsx"


async def test_a_paper_read_at_arxiv_and_at_its_doi_is_one_source_cited_once(agent_server, scripted, web):
    abstract, landing = web.url("/papers/abs"), web.url("/papers/doi")
    findings = [
        {"finding": "Kelp exported 31 percent of its production.", "evidence": PAPER_QUOTE, "source": landing},
    ]
    # The writer lists both addresses; the report keeps one entry for the work.
    written = (
        f"# Kelp carbon\n\nKelp canopies exported 31 percent of their net primary production to the deep basin [2]. "
        f"Sediment traps measured it [1].\n\n## Sources\n[1] arXiv — {abstract}\n[2] DOI — {landing}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Read the kelp carbon paper"), submit(written)),
            researcher(
                turn(tool_calls=[call("web_fetch", url=abstract)]),
                turn(tool_calls=[call("web_fetch", url=landing)]),
                turn(content=findings_json("Kelp export.", findings)),
            ),
        )
    )

    run = await stream_run(agent_server.url, f"What does arXiv {PAPER_ARXIV_ID} say about kelp carbon export?")

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    assert [e["url"] for e in run.of_type("source")] == [abstract], "the DOI page is no second source"
    [paper] = [s for s in run.values["sources"] if PAPER_TITLE in s["title"]]
    assert paper["url"] == abstract and paper["urls"] == [abstract, landing]
    report = run.values["final_report"]
    assert report.split("## Sources\n", 1)[1].strip().splitlines() == [f"[1] arXiv — {abstract}"], report
    assert "deep basin [1]. Sediment traps measured it [1]." in report
    [citation] = run.values["cited_sources"]
    assert citation["verified"] and citation["reason"] == "quote_verified", citation
