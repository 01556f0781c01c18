"""Specification of the search backends beside Tavily: each one's parser, and ``web_search`` on each through its
stand-in (``testkit/search_backends.py``) on a real loopback socket, speaking the API's own wire format."""

from __future__ import annotations

import types
from typing import Any

import pytest
from pydantic import SecretStr

from deep_research_agent.domain.names import EvidenceKind
from deep_research_agent.domain.search import Paper
from deep_research_agent.evidence.store import EvidenceStore
from deep_research_agent.report.corpus_sources import readable_corpus_sources
from deep_research_agent.settings import ResearchConfig
from deep_research_agent.tools.fetch import build_web_fetch_tool
from deep_research_agent.tools.search import RESULTS_PREAMBLE, build_web_search_tool
from deep_research_agent.tools.search_backends.arxiv import arxiv_query, parse_arxiv
from deep_research_agent.tools.search_backends.openalex import abstract_text, parse_openalex
from deep_research_agent.tools.search_backends.pubmed import parse_efetch
from deep_research_agent.tools.search_backends.searxng import JSON_OFF
from testkit.search_backends import PAPERS, arxiv_error_feed, arxiv_feed, efetch_xml, inverted_index, openalex_work
from testkit.web import ARTICLES, WebStandIn, closed_port, run_tools_in_graph

pytestmark = pytest.mark.anyio
NTB7, KELP, STATIN = PAPERS["ntb7"], PAPERS["kelp"], PAPERS["statin"]


def settings(web: WebStandIn, *backends: str, **overrides: Any) -> types.SimpleNamespace:
    values = {
        "tavily_api_key": SecretStr("tvly-test-key"),
        "tavily_api_base_url": web.base_url,
        "web_search": True,
        "web_fetch": True,
        "fetch_allow_hosts": (web.allow_host,),
        "fetch_cassette_url": "",
        "search_max_results": 5,
        "search_backends": backends,
        "searxng_url": web.backend_url("searxng"),
        "arxiv_api_url": web.backend_url("arxiv"),
        "wikipedia_api_url": web.backend_url("wikipedia"),
        "pubmed_api_url": web.backend_url("pubmed"),
        "openalex_api_url": web.backend_url("openalex"),
        "search_contact_email": "research@example.org",
    }
    return types.SimpleNamespace(**(values | overrides))


async def search(web: WebStandIn, *backends: str, query: str, source: str | None = None, **overrides: Any):
    tool = build_web_search_tool(settings(web, *backends, **overrides))
    assert tool is not None
    args = {"query": query} | ({"source": source} if source else {})
    return await run_tools_in_graph([(tool, args)])


# --- Parsers ----------------------------------------------------------------------------------------------------


def test_arxiv_entries_become_papers_with_abstract_page_pdf_doi_and_venue() -> None:
    (hit,) = parse_arxiv(arxiv_feed("http://mirror.test", [NTB7], "all:sodium").encode())
    assert (hit.title, hit.url, hit.backend) == (NTB7.title, "http://mirror.test/arxiv/abs/2403.01234v1", "arxiv")
    assert hit.paper is not None and hit.paper.authors == NTB7.authors
    assert (hit.paper.year, hit.paper.doi, hit.paper.venue) == (2024, NTB7.doi, NTB7.venue)
    assert hit.paper.full_text_url == "http://mirror.test/arxiv/pdf/2403.01234v1"
    assert hit.paper.abstract == NTB7.abstract_text and hit.date == "2024-03-02"


def test_an_arxiv_entry_without_a_doi_gets_arxivs_own() -> None:
    feed = arxiv_feed("http://a.test", [NTB7], "q").replace(f"<arxiv:doi>{NTB7.doi}</arxiv:doi>", "")
    feed = feed.replace(f"<arxiv:journal_ref>{NTB7.venue}</arxiv:journal_ref>", "")
    (hit,) = parse_arxiv(feed.encode())
    assert hit.paper is not None and (hit.paper.doi, hit.paper.venue) == ("10.48550/arXiv.2403.01234", "arXiv")


def test_arxivs_error_entry_is_a_permanent_failure_with_its_message() -> None:
    from deep_research_agent.domain.errors import ToolFailure

    with pytest.raises(ToolFailure) as failed:
        parse_arxiv(arxiv_error_feed("incorrect id format for 1234").encode())
    assert failed.value.kind == "permanent" and "incorrect id format for 1234" in failed.value.message


def test_a_plain_query_asks_arxiv_for_every_word_and_a_fielded_one_is_sent_as_it_is() -> None:
    assert arxiv_query("sodium glass") == "all:sodium AND all:glass"
    assert arxiv_query("au:Halvorsen AND ti:glass") == "au:Halvorsen AND ti:glass"


def test_openalex_abstract_is_rebuilt_from_its_inverted_index() -> None:
    assert abstract_text(inverted_index("the cat saw the dog")) == "the cat saw the dog"
    (hit,) = parse_openalex({"results": [openalex_work(KELP, 1)]})
    assert hit.url == f"https://doi.org/{KELP.doi}" and hit.snippet == KELP.abstract_text
    assert hit.paper == Paper(
        authors=KELP.authors, venue=KELP.venue, year=2023, doi=KELP.doi, abstract=KELP.abstract_text
    )


def test_pubmed_efetch_gives_labelled_abstract_journal_doi_and_pmc_full_text_in_esearch_order() -> None:
    (hit,) = parse_efetch(efetch_xml([STATIN]).encode(), ["99999999", STATIN.pmid])
    assert hit.url == f"https://pubmed.ncbi.nlm.nih.gov/{STATIN.pmid}/"
    assert hit.paper is not None and hit.paper.venue == "The Lancet" and hit.paper.doi == STATIN.doi
    assert hit.paper.abstract.startswith("BACKGROUND: Whether statins") and "RESULTS: Among 18,240" in hit.snippet
    assert hit.paper.authors[0] == "Aino Virtanen" and hit.paper.year == 2023
    assert hit.paper.full_text_url == "https://pmc.ncbi.nlm.nih.gov/articles/PMC10701234/"


def test_a_papers_citation_names_three_authors_year_venue_and_doi() -> None:
    paper = Paper(authors=STATIN.authors, year=2023, venue="The Lancet", doi=STATIN.doi)
    assert paper.citation() == f"Aino Virtanen, Rahul Mehta, Chen Wei et al. (2023). The Lancet. doi:{STATIN.doi}"
    assert Paper().citation() == ""


# --- web_search on each backend, over loopback ----------------------------------------------------------------


async def test_searxng_finds_pages_as_search_results_with_their_backend(web: WebStandIn) -> None:
    run = await search(web, "searxng", query="sodium glass battery")
    article = ARTICLES["halvorsen-cell"]
    assert run.results[0].startswith(RESULTS_PREAMBLE) and f"({web.url(article.path)})" in run.results[0]
    assert run.of_type("search_query")[0]["source"] == "searxng"
    (record,) = [r for r in run.evidence.records() if r.url == web.url(article.path)]
    assert (record.kind, record.backend, record.text) == (EvidenceKind.SEARCH_RESULT, "searxng", article.snippet)
    assert web.backend_requests("searxng")[0]["query"] == {"q": "sodium glass battery", "format": "json"}


async def test_searxng_without_the_json_format_says_how_to_enable_it(web: WebStandIn) -> None:
    web.backends_configure({"searxng": {"always": {"status": 403}}})
    run = await search(web, "searxng", query="kelp")
    assert run.results[0] == f"TOOL ERROR (web_search, permanent): {JSON_OFF}"
    assert run.of_type("search_results")[0]["ok"] is False


async def test_arxiv_hits_are_papers_whose_metadata_reaches_the_sources(web: WebStandIn) -> None:
    run = await search(web, "arxiv", query="sodium thioborate electrolyte")
    url = web.url("/arxiv/abs/2403.01234v1")
    assert f"Sigrid Halvorsen, Mira Okonkwo, Lars Eide et al. (2024). {NTB7.venue}. doi:{NTB7.doi}" in run.results[0]
    assert f"Full text: {web.url('/arxiv/pdf/2403.01234v1')}" in run.results[0]
    (record,) = [r for r in run.evidence.records() if r.url == url]
    assert record.kind == EvidenceKind.PAPER and record.backend == "arxiv" and NTB7.abstract_text in record.text
    source = run.evidence.source(url)
    assert source is not None and source.paper is not None and source.paper.doi == NTB7.doi
    assert (
        web.backend_requests("arxiv")[0]["query"]["search_query"] == "all:sodium AND all:thioborate AND all:electrolyte"
    )


async def test_wikipedia_searches_then_reads_the_lead_sections(web: WebStandIn) -> None:
    run = await search(web, "wikipedia", query="lighthouse alexandria")
    article = ARTICLES["pharos-lighthouse"]
    assert f"[{article.title}]({web.url(article.path)})" in run.results[0]
    assert article.paragraphs[1] in run.results[0]
    actions = [r["query"].get("list") or r["query"].get("prop") for r in web.backend_requests("wikipedia")]
    assert actions == ["search", "extracts|info"]


async def test_pubmed_searches_ids_then_fetches_the_articles_with_the_contact_email(web: WebStandIn) -> None:
    run = await search(web, "pubmed", query="statins cardiovascular")
    assert STATIN.title in run.results[0] and f"doi:{STATIN.doi}" in run.results[0]
    esearch, efetch = web.backend_requests("pubmed")
    assert esearch["path"].endswith("/esearch.fcgi") and efetch["query"]["id"] == STATIN.pmid
    assert esearch["query"]["email"] == "research@example.org" and esearch["query"]["tool"] == "deep-research-agent"


async def test_openalex_sends_its_polite_pool_mailto_and_finds_papers_by_doi(web: WebStandIn) -> None:
    run = await search(web, "openalex", query="kelp carbon removal")
    assert f"[{KELP.title}](https://doi.org/{KELP.doi})" in run.results[0]
    assert web.backend_requests("openalex")[0]["query"]["mailto"] == "research@example.org"


async def test_with_several_backends_the_model_picks_one_by_source_and_the_first_is_the_default(
    web: WebStandIn,
) -> None:
    tool = build_web_search_tool(settings(web, "searxng", "arxiv", "openalex"))
    assert tool is not None
    source = tool.args["source"]
    assert source["enum"] == ["searxng", "arxiv", "openalex"] and source["default"] == "searxng"
    assert "arxiv: preprints" in tool.description and "openalex: scholarly works" in tool.description
    run = await run_tools_in_graph([(tool, {"query": "kelp carbon"}), (tool, {"query": "kelp", "source": "openalex"})])
    assert [e["source"] for e in run.of_type("search_query")] == ["searxng", "openalex"]


def test_with_one_backend_the_tool_keeps_its_short_schema(web: WebStandIn) -> None:
    tool = build_web_search_tool(settings(web, "tavily"))
    assert tool is not None and set(tool.args) == {"query", "max_results"}


# --- Failures -----------------------------------------------------------------------------------------------


async def test_a_rate_limited_backend_backs_off_with_rate_limited_events_and_answers(web: WebStandIn) -> None:
    web.backends_configure({"arxiv": {"replies": [{"status": 429, "retry_after": 0.3}]}})
    run = await search(web, "arxiv", query="sodium glass")
    (waited,) = run.of_type("status")
    assert (waited["state"], waited["label"], waited["wait_s"], waited["attempt"]) == ("rate_limited", "arXiv", 0.3, 1)
    assert run.results[0].startswith(RESULTS_PREAMBLE) and len(web.backend_requests("arxiv")) == 2


async def test_a_long_rate_limit_is_handed_to_the_model_at_once_with_the_wait(web: WebStandIn) -> None:
    web.backends_configure({"openalex": {"always": {"status": 429, "retry_after": 60}}})
    run = await search(web, "openalex", "arxiv", query="kelp")
    text = run.results[0]
    assert text.startswith("TOOL ERROR (web_search, transient): OpenAlex rate limit reached (429).")
    assert "Retry in about 60 s" in text and text.endswith("Other sources: arxiv.")


async def test_a_backend_that_is_down_is_a_transient_error_naming_its_setting(web: WebStandIn) -> None:
    down = f"http://127.0.0.1:{closed_port()}"
    run = await search(web, "pubmed", "openalex", query="statins", pubmed_api_url=down)
    assert run.results[0].startswith("TOOL ERROR (web_search, transient): could not reach PubMed (ConnectError)")
    assert "PUBMED_API_URL" in run.results[0] and run.of_type("search_results")[0]["ok"] is False


async def test_a_server_error_is_retried_and_a_persistent_one_is_transient(web: WebStandIn) -> None:
    web.backends_configure({"wikipedia": {"replies": [{"status": 502}]}})
    assert (await search(web, "wikipedia", query="kelp")).results[0].startswith(RESULTS_PREAMBLE)
    web.backends_configure({"wikipedia": {"always": {"status": 503}}})
    text = (await search(web, "wikipedia", query="kelp")).results[0]
    assert text.startswith("TOOL ERROR (web_search, transient): Wikipedia had a server error (503).")


async def test_an_answer_in_another_format_is_a_permanent_error_naming_the_setting(web: WebStandIn) -> None:
    run = await search(web, "arxiv", query="kelp", arxiv_api_url=web.url("/notes.txt"))
    assert run.results[0] == (
        "TOOL ERROR (web_search, permanent): arXiv answered with something that is not an arXiv Atom feed; "
        "check ARXIV_API_URL."
    )
    missing = await search(web, "openalex", query="kelp", openalex_api_url=web.url("/nowhere"))
    assert "OpenAlex has no search API at the configured address (404); check OPENALEX_API_URL" in missing.results[0]


# --- Reading a paper in full, and its Sources line ------------------------------------------------------------


async def test_an_arxiv_result_is_read_in_full_as_its_abstract_page_or_pdf(web: WebStandIn) -> None:
    options = settings(web, "arxiv")
    search_tool, fetch_tool = build_web_search_tool(options), build_web_fetch_tool(options)
    assert search_tool is not None and fetch_tool is not None
    page, pdf = web.url("/arxiv/abs/2403.01234v1"), web.url("/arxiv/pdf/2403.01234v1")
    run = await run_tools_in_graph(
        [(search_tool, {"query": "sodium glass"}), (fetch_tool, {"url": page}), (fetch_tool, {"url": pdf})]
    )
    assert "3.1 mS/cm" in run.results[1] and "1,850 full cycles" in run.results[2]
    assert [e["ok"] for e in run.of_type("page_fetched")] == [True, True]
    source = run.evidence.source(page)
    assert source is not None and source.paper is not None, "reading the page keeps the paper's metadata"


def test_a_cited_paper_is_listed_in_sources_with_authors_year_and_doi() -> None:
    evidence = EvidenceStore()
    paper = Paper(authors=KELP.authors, year=2023, venue=KELP.venue, doi=KELP.doi, abstract=KELP.abstract_text)
    url = f"https://doi.org/{KELP.doi}"
    evidence.add_source(url, KELP.title, paper=paper)
    evidence.add_source("https://example.org/page", "A page")
    report = f"# Kelp\n\nIt stored 1,240 tonnes [1] [2].\n\n## Sources\n[1] kelp paper — {url}\n[2] A page — https://example.org/page\n"
    readable = readable_corpus_sources(report, evidence)
    assert readable.endswith(
        f"[1] {KELP.title} — Tomas Lindqvist, Freja Holm (2023). Nature Climate Change. doi:{KELP.doi} — {url}\n"
        "[2] A page — https://example.org/page\n"
    )
    assert readable_corpus_sources(readable, evidence) == readable


def test_a_papers_source_survives_the_ledger_snapshot() -> None:
    evidence = EvidenceStore()
    paper = Paper(authors=("A. Author",), year=2020, doi="10.1/x")
    evidence.add_source("https://doi.org/10.1/x", "X", paper=paper)
    restored = EvidenceStore()
    restored.restore(evidence.snapshot(), [])
    assert restored.sources()[0].paper == paper


# --- Settings -------------------------------------------------------------------------------------------------


def test_the_default_backend_is_tavily_with_a_key_else_searxng_when_set_else_keyless_tavily() -> None:
    searx = {"SEARXNG_URL": "http://searx.local:8080/"}
    assert ResearchConfig.resolve(None, environ={}).search_backends == ("tavily",)
    assert ResearchConfig.resolve(None, environ=searx).search_backends == ("searxng",)
    assert ResearchConfig.resolve(None, environ={**searx, "TAVILY_API_KEY": "k"}).search_backends == ("tavily",)
    assert ResearchConfig.resolve(None, environ=searx).searxng_url == "http://searx.local:8080"


def test_search_backends_keep_their_order_and_bad_names_are_left_out_with_a_warning() -> None:
    config = ResearchConfig.resolve(
        {"configurable": {"search_backends": ["OpenAlex", "bing", "arxiv", "openalex", "searxng"]}}, environ={}
    )
    assert config.search_backends == ("openalex", "arxiv")
    assert any("'bing' is not a search backend (known: tavily, searxng" in w for w in config.warnings)
    assert any("searxng needs SEARXNG_URL" in w for w in config.warnings)


def test_a_bad_base_url_warns_and_keeps_the_public_service() -> None:
    config = ResearchConfig.resolve(None, environ={"OPENALEX_API_URL": "ftp://mirror", "DRA_SEARCH_BACKENDS": "pubmed"})
    assert config.openalex_api_url == "https://api.openalex.org" and config.search_backends == ("pubmed",)
    assert any(w.startswith("OPENALEX_API_URL: refused ftp://mirror: only http and https") for w in config.warnings)


# --- doctor ---------------------------------------------------------------------------------------------------


def test_doctor_names_the_backends_and_probes_each_but_tavily(web: WebStandIn) -> None:
    from deep_research_agent.cli.doctor import OK, WARN, _check_search

    environ = {
        "DRA_SEARCH_BACKENDS": "tavily,arxiv,openalex,bing",
        "ARXIV_API_URL": web.backend_url("arxiv"),
        "OPENALEX_API_URL": f"http://127.0.0.1:{closed_port()}",
    }
    rows = {(c.mark, c.name): c.detail for c in _check_search(environ, {})}
    assert rows[(OK, "search backends")] == "tavily, arxiv, openalex"
    assert "'bing' is not a search backend" in rows[(WARN, "search backends")]
    assert rows[(OK, "search: arxiv")] == "answers"
    assert rows[(WARN, "search: openalex")].startswith("could not reach OpenAlex (ConnectError)")
    assert not any(name == "search: tavily" for _, name in rows)
    assert web.tavily_requests() == [] and len(web.backend_requests("arxiv")) == 1
