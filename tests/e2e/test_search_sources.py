"""Search backends beside Tavily through ``langgraph dev``: a run on SearXNG alone, a scholarly run on arXiv and
OpenAlex that cites papers with their DOI, and backends that rate-limit or are down.

The session server's environment points every backend at its stand-in on the web stand-in's loopback server
(``testkit/search_backends.py``) and keeps Tavily the default; each run picks its backends with
configurable ``search_backends``.
"""

from __future__ import annotations

import pytest

from testkit.agent_server import stream_run
from testkit.scenarios import (
    end_of,
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
from testkit.search_backends import PAPERS
from testkit.web import ARTICLES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

NTB7, KELP = PAPERS["ntb7"], PAPERS["kelp"]
NTB7_QUOTE = "conducts sodium ions at 3.1 mS/cm at room temperature"
KELP_QUOTE = "sequestered 1,240 tonnes of carbon dioxide in 2023"


async def stream_run_with(agent_server, question: str, backends: list[str]):
    return await stream_run(agent_server.url, question, configurable={"search_backends": backends})


def one_finding(summary: str, quote: str, url: str) -> str:
    return findings_json(summary, [{"finding": summary, "evidence": quote, "source": url}])


async def test_a_run_with_only_searxng_and_no_tavily_key_researches_and_cites_pages(agent_server, scripted, web):
    article = ARTICLES["halvorsen-cell"]
    url = web.url(article.path)
    quote = "reached an energy density of 412 Wh/kg in independent tests"
    report = (
        "# Sodium-glass batteries\n\nThe Halvorsen cell reached 412 Wh/kg in independent tests [1].\n\n"
        f"## Sources\n[1] {article.title} — {url}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass batteries"), submit(report)),
            researcher(
                turn(tool_calls=[call("web_search", query="sodium glass battery energy density")]),
                turn(tool_calls=[call("web_fetch", url=url)]),
                turn(content=one_finding("The Halvorsen cell reached 412 Wh/kg.", quote, url)),
            ),
        )
    )

    run = await stream_run_with(agent_server, "How dense are sodium-glass batteries?", ["searxng"])

    assert end_of(run) == ("done", "report_delivered")
    assert [e["source"] for e in run.of_type("search_query")] == ["searxng"]
    assert url in [hit["url"] for hit in run.of_type("search_results")[0]["results"]]
    assert web.tavily_requests() == [] and run.statuses("keyless_search") == []
    assert web.backend_requests("searxng")[0]["query"]["format"] == "json"
    assert [c["verdict"] for c in run.values["citations"]] == ["supported"]
    assert url in run.values["final_report"] and "[unverified]" not in run.values["final_report"]
    tool = next(
        t
        for t in requests_of(scripted, "research-subagent")[0]["body"]["tools"]
        if t["function"]["name"] == "web_search"
    )
    assert "source" not in tool["function"]["parameters"]["properties"], "one backend: no source argument"


async def test_a_scholarly_question_on_arxiv_and_openalex_cites_papers_with_authors_year_and_doi(
    agent_server, scripted, web
):
    arxiv_url, kelp_url = web.url("/arxiv/abs/2403.01234v1"), f"https://doi.org/{KELP.doi}"
    report = (
        "# Two materials results\n\n"
        "The NTB-7 glass electrolyte conducts sodium ions at 3.1 mS/cm at room temperature [1]. "
        "A Baltic kelp farm sequestered 1,240 tonnes of carbon dioxide in 2023 [2].\n\n"
        f"## Sources\n[1] NTB-7 preprint — {arxiv_url}\n[2] Kelp paper — {kelp_url}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find papers on NTB-7 and on kelp carbon removal"), submit(report)),
            researcher(
                turn(tool_calls=[call("web_search", query="sodium thioborate glass electrolyte", source="arxiv")]),
                turn(tool_calls=[call("web_search", query="kelp carbon removal", source="openalex")]),
                turn(
                    content=findings_json(
                        "The glass conducts at 3.1 mS/cm; the kelp farm stored 1,240 tonnes.",
                        [
                            {
                                "finding": "The glass conducts at 3.1 mS/cm.",
                                "evidence": NTB7_QUOTE,
                                "source": arxiv_url,
                            },
                            {"finding": "The farm stored 1,240 tonnes.", "evidence": KELP_QUOTE, "source": kelp_url},
                        ],
                    )
                ),
            ),
        )
    )

    run = await stream_run_with(agent_server, "What do recent papers report?", ["arxiv", "openalex"])
    assert end_of(run) == ("done", "report_delivered")
    assert [e["source"] for e in run.of_type("search_query")] == ["arxiv", "openalex"]
    final = run.values["final_report"]
    assert f"[1] {NTB7.title} — Sigrid Halvorsen, Mira Okonkwo, Lars Eide et al. (2024)." in final
    assert f"doi:{NTB7.doi} — {arxiv_url}" in final
    assert f"[2] {KELP.title} — Tomas Lindqvist, Freja Holm (2023). Nature Climate Change. doi:{KELP.doi}" in final
    # The claims hold against the papers' abstracts as they would against pages.
    assert [c["verdict"] for c in run.values["citations"]] == ["supported", "supported"]
    assert "[unverified]" not in final
    papers = [e for e in run.values["evidence"] if e["kind"] == "paper"]
    assert {e["backend"] for e in papers} == {"arxiv", "openalex"}
    by_url = {s["url"]: s for s in run.values["sources"]}
    assert by_url[kelp_url]["paper"]["doi"] == KELP.doi and by_url[arxiv_url]["paper"]["year"] == 2024
    prompt = system_text(requests_of(scripted, "research-subagent")[0]["body"])
    assert "## Papers" in prompt and "`arxiv` or `openalex`" in prompt


async def test_a_backend_answering_429_backs_off_and_one_that_is_down_leaves_the_run_delivering(
    agent_server, scripted, web
):
    web.backends_configure(
        {"openalex": {"replies": [{"status": 429, "retry_after": 0.5}]}, "pubmed": {"always": {"status": 503}}}
    )
    kelp_url = f"https://doi.org/{KELP.doi}"
    report = (
        "# Kelp\n\nA Baltic kelp farm sequestered 1,240 tonnes of carbon dioxide in 2023 [1].\n\n"
        f"## Sources\n[1] Kelp paper — {kelp_url}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find papers on kelp carbon removal"), submit(report)),
            researcher(
                turn(tool_calls=[call("web_search", query="kelp carbon", source="pubmed")]),
                turn(tool_calls=[call("web_search", query="kelp carbon removal", source="openalex")]),
                turn(content=one_finding("The farm stored 1,240 tonnes.", KELP_QUOTE, kelp_url)),
            ),
        )
    )

    run = await stream_run_with(agent_server, "How much carbon do kelp farms store?", ["pubmed", "openalex"])

    assert end_of(run) == ("done", "report_delivered")
    waits = run.statuses("rate_limited")
    assert [(w["label"], w["attempt"]) for w in waits] == [("OpenAlex", 1)] and waits[0]["role"] == "research-subagent"
    failed, answered = run.of_type("search_results")
    assert (failed["ok"], answered["ok"]) == (False, True)
    tool_texts = [
        m["content"] for m in requests_of(scripted, "research-subagent")[-1]["body"]["messages"] if m["role"] == "tool"
    ]
    assert tool_texts[0].startswith("TOOL ERROR (web_search, transient): PubMed had a server error (503).")
    assert tool_texts[0].endswith("Other sources: openalex.")
    assert [c["verdict"] for c in run.values["citations"]] == ["supported"]
