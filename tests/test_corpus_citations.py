"""Specification of how corpus passages are cited: one numbering with web pages, readable Sources lines,
quotes checked against the passage text."""

from __future__ import annotations

from deep_research_agent.corpora.locator import parse_passage_url, passage_url
from deep_research_agent.domain.findings import Finding, Findings
from deep_research_agent.domain.urls import domain_of, normalise_url
from deep_research_agent.evidence.store import CorpusLocation, EvidenceStore, HandOver
from deep_research_agent.handover.contract import source_problem
from deep_research_agent.report.citations import check_citations, repair_report
from deep_research_agent.report.corpus_sources import readable_corpus_sources
from deep_research_agent.report.markdown import source_entries, split_sources
from deep_research_agent.report.salvage import salvage_report

LIMITS_URL = "corpus://pg15/limits.html#LIMITS"
LIMITS_TITLE = "PostgreSQL 15 docs — Appendix K. PostgreSQL Limits (limits.html)"
LIMITS_TEXT = "Appendix K. PostgreSQL Limits\n\nItem | Upper Limit\n\ncolumns per table | 1,600\n\nfield size | 1 GB"
WEB_URL = "https://example.org/postgres-tuning"
WEB_TEXT = "Most installations raise work_mem to 64MB for analytics."


def store() -> EvidenceStore:
    evidence = EvidenceStore()
    evidence.add_evidence(url=WEB_URL, title="Tuning Postgres", kind="page", text=WEB_TEXT, agent="research-subagent")
    evidence.add_source(WEB_URL, "Tuning Postgres")
    location = CorpusLocation(corpus="pg15", path="limits.html", anchor="LIMITS", page=None, file_sha256="0" * 64)
    evidence.add_evidence(
        url=LIMITS_URL,
        title=LIMITS_TITLE,
        kind="corpus",
        text=LIMITS_TEXT,
        agent="research-subagent",
        location=location,
    )
    evidence.add_source(LIMITS_URL, LIMITS_TITLE)
    return evidence


def findings(quote: str = "columns per table | 1,600") -> list[Findings]:
    return [
        Findings(
            summary="Limits and tuning.",
            findings=[
                Finding(finding="A table holds at most 1,600 columns.", evidence=quote, source=LIMITS_URL),
                Finding(finding="Analytics setups raise work_mem to 64MB.", evidence=WEB_TEXT, source=WEB_URL),
            ],
        )
    ]


def report(sources: str) -> str:
    return (
        "# Postgres limits\n\nAnalytics setups raise work_mem to 64MB [2]. A table holds at most 1,600 columns [1].\n\n"
        f"## Sources\n{sources}"
    )


def test_a_passage_url_names_the_corpus_as_its_domain_and_keeps_its_fragment_as_its_identity():
    url = passage_url("pg15", "sql ref/select#1.html", "SQL-SELECT")

    assert url == "corpus://pg15/sql%20ref/select%231.html#SQL-SELECT"
    assert parse_passage_url(url) == ("pg15", "sql ref/select#1.html", "SQL-SELECT")
    assert passage_url("docs", "manual.pdf", None, page=3) == "corpus://docs/manual.pdf#page=3"
    assert domain_of(url) == "pg15"
    assert normalise_url("corpus://pg15/limits.html#A") != normalise_url("corpus://pg15/limits.html#B")
    assert normalise_url("https://example.org/a#x") == normalise_url("https://example.org/a#y")


def test_a_finding_may_cite_a_corpus_url():
    assert source_problem(LIMITS_URL) is None


def test_a_sources_entry_with_a_corpus_url_is_read_as_its_url():
    [entry] = source_entries(f"## Sources\n[1] Limits — {LIMITS_URL}\n")

    assert entry.url == LIMITS_URL and entry.title == "Limits"


def test_a_corpus_citation_is_verified_against_the_passage_text():
    markdown = report(f"[1] Limits — {LIMITS_URL}\n[2] Tuning Postgres — {WEB_URL}\n")

    checked = check_citations(markdown, store().records(), findings())

    assert [(c.index, c.reason) for c in checked.citations] == [(1, "quote_verified"), (2, "quote_verified")]
    wrong = check_citations(markdown, store().records(), findings(quote="columns per table | 2,000"))
    assert wrong.citations[0].reason == "quote_not_found" and wrong.citations[0].action == "flag"


def test_a_corpus_passage_the_run_never_read_is_removed_like_an_unread_page():
    markdown = report(f"[1] Limits — corpus://pg15/never-read.html#X\n[2] Tuning Postgres — {WEB_URL}\n")

    checked = check_citations(markdown, store().records(), findings())

    assert checked.citations[0].reason == "not_retrieved"
    assert "never-read" not in repair_report(markdown, checked)


def test_web_and_corpus_sources_are_numbered_in_one_sequence_by_first_use():
    markdown = report(f"[1] Limits — {LIMITS_URL}\n[2] Tuning Postgres — {WEB_URL}\n")

    repaired = repair_report(markdown, check_citations(markdown, store().records(), findings()))

    assert "work_mem to 64MB [1]. A table holds at most 1,600 columns [2]." in repaired
    assert {e.index: e.url for e in source_entries(split_sources(repaired).sources)} == {1: WEB_URL, 2: LIMITS_URL}


def test_corpus_sources_lines_get_the_readable_title_the_passage_was_read_under():
    written = report(
        f"[1] limits.html — {LIMITS_URL}\n- [2] Tuning Postgres — {WEB_URL}\n[3] [pg15:abc]({'corpus://pg15/never-read.html'})\n"
    )

    readable = readable_corpus_sources(written, store())

    lines = split_sources(readable).sources.splitlines()
    assert lines[1] == f"[1] {LIMITS_TITLE} — {LIMITS_URL}"
    assert lines[2] == f"- [2] Tuning Postgres — {WEB_URL}", "web entries are left as written"
    assert lines[3] == "[3] [pg15:abc](corpus://pg15/never-read.html)", (
        "an unknown passage is the citation check's business"
    )
    assert readable_corpus_sources(readable, store()) == readable
    assert readable.startswith(written.split("## Sources")[0])


def test_a_salvaged_report_numbers_corpus_sources_with_the_web_ones():
    evidence = store()
    evidence.add_handover(HandOver(task_id="t1", unit="Limits", findings=findings()[0]))

    salvaged = salvage_report(evidence, reason="the budget ran out")

    assert "columns [1]" in salvaged and "64MB [2]" in salvaged
    assert f"[1] {LIMITS_TITLE} — {LIMITS_URL}" in salvaged and f"[2] Tuning Postgres — {WEB_URL}" in salvaged
