"""Evidence checks per source: quotes against retrieved text, figures against quotes, citations against the run's evidence."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from deep_research_agent.domain.findings import Finding, Findings
from deep_research_agent.evidence.store import EvidenceRecord
from deep_research_agent.evidence.text import normalise_for_match, quote_in_text
from deep_research_agent.report.citations import CitationReport, check_citations, repair_report, unsupported_numbers

PAGE_URL = "https://example.com/battery"
SNIPPET_URL = "https://news.example.org/cells"
NEVER_URL = "https://invented.example.net/report"
PAGE_TEXT = (
    "Battery news. The new cell reaches 412 Wh/kg at the pack level, up from 350 Wh/kg in 2022. "
    "Production starts in “late 2025” — the company says 1,850 units are planned."
)
SNIPPET_TEXT = "Trial cells reached 390 Wh/kg, a 12% gain over last year."


def record(id: str, url: str, kind: str, text: str, title: str = "") -> EvidenceRecord:
    return EvidenceRecord(
        id=id,
        url=url,
        title=title,
        kind=kind,
        retrieved_at="2026-11-29T00:00:00Z",
        agent="research-subagent",
        sha256="-",
        text=text,
    )


SPECS_URL = f"{PAGE_URL}/specs"
WIKI_URL = "https://en.wikipedia.org/wiki/Lithium_(element)"
EVIDENCE = [
    record("ev1", PAGE_URL, "page", PAGE_TEXT, "Battery"),
    record("ev2", SNIPPET_URL, "search_result", SNIPPET_TEXT),
    record("ev3", SPECS_URL, "page", "Specs page."),
    record("ev4", WIKI_URL, "page", "Lithium (element) article."),
]


def findings(*items: tuple[str, str, str]) -> list[Findings]:
    return [Findings(summary="s", findings=[Finding(finding=f, evidence=e, source=s) for f, e, s in items])]


def report(body: str, *entries: str) -> str:
    listed = "\n".join(f"[{n}] {entry}" for n, entry in enumerate(entries, start=1))
    return f"# Title\n\n{body}\n\n## Sources\n{listed}\n"


# --- matching --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Many   spaces\n\tand lines ", "many spaces and lines"),
        ("“Curly” ‘quotes’", "\"curly\" 'quotes'"),
        ("en–dash em—dash minus−sign", "en-dash em-dash minus-sign"),
        ("zero\u200bwidth\u200dchars\ufeff", "zerowidthchars"),
        ("**bold** and _italic_ and `code` and ~~gone~~", "bold and italic and code and gone"),
        ("A [link](https://x.example) here", "a link here"),
        ("non\u00a0breaking space", "non breaking space"),
        ("Ellipsis…", "ellipsis..."),
        ("CASE Folding ß", "case folding ss"),
    ],
)
def test_normalise_for_match(text: str, expected: str) -> None:
    assert normalise_for_match(text) == expected


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        ("The new cell reaches 412 Wh/kg", True),
        ("the NEW cell reaches 412 wh/kg", True),
        ('"The new cell reaches 412 Wh/kg at the pack level."', True),
        ("“reaches 412 Wh/kg”", True),
        ("reaches  412\nWh/kg", True),
        ('Production starts in "late 2025" - the company says', True),
        ("Production starts in “late 2025” – the company says", True),
        ("The **new** cell reaches _412 Wh/kg_", True),
        ("re\u200baches 412 Wh/kg", True),
        ("The new cell … in 2022", True),
        ("The new cell ... in 2022", True),
        ("The new cell [...] in 2022", True),
        ("The new cell . . . 1,850 units", True),
        ("in 2022 … The new cell", False),
        ("The new cell reaches 420 Wh/kg", False),
        ("The new cell reaches 412 Wh/kg at the cell level", False),
        ("The new cell … 9,999 units", False),
        ("", False),
        ("...", False),
        ('""', False),
    ],
)
def test_quote_in_text(quote: str, expected: bool) -> None:
    assert quote_in_text(quote, PAGE_TEXT) is expected


@pytest.mark.parametrize(
    ("finding", "quote", "expected"),
    [
        ("The cell reaches 412 Wh/kg.", "reaches 412 Wh/kg at the pack level", []),
        ("1,850 units are planned.", "1850 units are planned", []),
        ("Sales rose 12%.", "sales rose 12 percent", []),
        ("Sales rose 12%.", "growth (%): 12", []),
        ("Growth was 12.", "growth was 12%", []),
        ("The cell reaches 420 Wh/kg.", "reaches 412 Wh/kg", ["420 Wh/kg"]),
        ("412 Wh/kg in 2024, up 18%.", "reaches 412 Wh/kg", ["2024", "18%"]),
        ("Price is $2.50.", "price is $2.5", []),
        ("1.2 billion users.", "1,200 million users", []),
        ("1.2 billion users.", "1.2 million users", ["1.2 billion"]),
        ("No figures at all.", "", []),
        ("Cited claim [3] with 5 items.", "5 items", []),
    ],
)
def test_unsupported_numbers(finding: str, quote: str, expected: set[str]) -> None:
    assert unsupported_numbers(finding, quote) == expected


# --- check_citations -------------------------------------------------------------------------------

GOOD = ("The cell reaches 412 Wh/kg.", "The new cell reaches 412 Wh/kg at the pack level", PAGE_URL)


@pytest.mark.parametrize(
    ("entry", "claims", "reason", "verified", "evidence_id"),
    [
        pytest.param(f"Battery — {PAGE_URL}", [GOOD], "quote_verified", True, "ev1", id="quote-in-page"),
        pytest.param(f"Battery — {PAGE_URL}", [], "page_retrieved", True, "ev1", id="page-read-no-finding"),
        pytest.param(
            "Battery — HTTPS://EXAMPLE.com/battery/#specs",
            [(GOOD[0], GOOD[1], "https://example.com/battery/")],
            "quote_verified",
            True,
            "ev1",
            id="normalised-url",
        ),
        pytest.param(
            f"[Battery]({PAGE_URL}) — Example", [GOOD], "quote_verified", True, "ev1", id="markdown-link-entry"
        ),
        pytest.param(f"Wiki — {WIKI_URL}.", [], "page_retrieved", True, "ev4", id="url-with-parentheses"),
        pytest.param(f"Invented — {NEVER_URL}", [], "not_retrieved", False, None, id="never-retrieved"),
        pytest.param(
            f"Invented — {NEVER_URL}",
            [("x", "y", NEVER_URL)],
            "not_retrieved",
            False,
            None,
            id="never-retrieved-with-finding",
        ),
        pytest.param(
            f"Battery — {PAGE_URL}",
            [("The cell reaches 412 Wh/kg.", "The cell reaches 412 Wh/kg in every test", PAGE_URL)],
            "quote_not_found",
            False,
            "ev1",
            id="quote-not-in-page",
        ),
        pytest.param(
            f"Battery — {PAGE_URL}",
            [("The cell reaches 450 Wh/kg.", "The new cell reaches 412 Wh/kg", PAGE_URL)],
            "number_not_in_quote",
            False,
            "ev1",
            id="number-not-in-quote",
        ),
        pytest.param(
            f"Battery — {PAGE_URL}",
            [("The cell is dense.", "", PAGE_URL)],
            "quote_missing",
            False,
            "ev1",
            id="no-quote",
        ),
        pytest.param(
            f"Battery — {PAGE_URL}",
            [
                GOOD,
                ("Output is 1,850 units.", "the company says 1,850 units are planned", PAGE_URL),
                ("Wrong.", "not there", PAGE_URL),
            ],
            "quote_not_found",
            False,
            "ev1",
            id="one-bad-finding-flags-the-source",
        ),
        pytest.param(f"Cells — {SNIPPET_URL}", [], "search_snippet_only", False, "ev2", id="snippet-only"),
        pytest.param(
            f"Cells — {SNIPPET_URL}",
            [("Trial cells reached 390 Wh/kg.", "Trial cells reached 390 Wh/kg", SNIPPET_URL)],
            "snippet_quote_verified",
            True,
            "ev2",
            id="snippet-with-quote",
        ),
        pytest.param(
            f"Cells — {SNIPPET_URL}",
            [("Trial cells reached 390 Wh/kg.", "Trial cells reached 390 Wh/kg in full production", SNIPPET_URL)],
            "search_snippet_only",
            False,
            "ev2",
            id="snippet-quote-not-in-snippet",
        ),
        pytest.param(
            f"Cells — {SNIPPET_URL}",
            [("Cells gained 15%.", "a 12% gain over last year", SNIPPET_URL)],
            "number_not_in_quote",
            False,
            "ev2",
            id="snippet-number-not-in-quote",
        ),
        pytest.param("MCP: pricing-db", [], "no_url", False, None, id="label-never-retrieved"),
    ],
)
def test_citation_verdicts(
    entry: str, claims: list[tuple[str, str, str]], reason: str, verified: bool, evidence_id: str | None
) -> None:
    result = check_citations(report("A claim [1].", entry), EVIDENCE, findings(*claims))
    [citation] = result.citations
    assert (citation.index, citation.reason, citation.verified, citation.evidence_id) == (
        1,
        reason,
        verified,
        evidence_id,
    )


def test_dict_evidence_and_records_give_the_same_report() -> None:
    markdown = report("A [1]. B [2]. C [3].", f"B — {PAGE_URL}", f"C — {SNIPPET_URL}", f"D — {NEVER_URL}")
    as_records = check_citations(markdown, EVIDENCE, findings(GOOD))
    as_dicts = check_citations(markdown, [asdict(r) for r in EVIDENCE], findings(GOOD))
    assert as_records == as_dicts


def test_label_source_matches_evidence_recorded_under_that_label() -> None:
    evidence = [*EVIDENCE, record("ev9", "MCP: pricing-db", "mcp_result", "BTC closed at 61,200 on 2024-05-01.")]
    claims = findings(("BTC closed at 61,200.", "BTC closed at 61,200", "MCP: pricing-db"))
    [citation] = check_citations(report("BTC [1].", "MCP: pricing-db"), evidence, claims).citations
    assert (citation.reason, citation.verified, citation.evidence_id, citation.url) == (
        "quote_verified",
        True,
        "ev9",
        None,
    )


def test_page_is_preferred_but_a_quote_may_sit_in_the_snippet_of_the_same_url() -> None:
    evidence = [
        record("ev1", PAGE_URL, "search_result", "Snippet: 500 cycles tested."),
        record("ev2", PAGE_URL, "page", PAGE_TEXT),
    ]
    only_snippet = findings(("500 cycles were tested.", "500 cycles tested", PAGE_URL))
    [citation] = check_citations(report("Cycles [1].", f"B — {PAGE_URL}"), evidence, only_snippet).citations
    assert (citation.reason, citation.evidence_id) == ("quote_verified", "ev1")
    [citation] = check_citations(report("Cycles [1].", f"B — {PAGE_URL}"), evidence, []).citations
    assert (citation.reason, citation.evidence_id) == ("page_retrieved", "ev2")


def test_structural_defects_and_summary() -> None:
    markdown = (
        "# T\n\nGood [1]. Invented [2]. Dangling [5]. Snippet [3]. Bad number [4].\n\n## Sources\n"
        f"[1] Battery — {PAGE_URL}\n[2] Invented — {NEVER_URL}\n[3] Cells — {SNIPPET_URL}\n"
        f"[4] Battery again — {PAGE_URL}#x\n[6] —\n"
    )
    claims = findings(GOOD)
    result = check_citations(markdown, EVIDENCE, claims)
    assert [(c.index, c.reason, c.action) for c in result.citations] == [
        (1, "quote_verified", "keep"),
        (2, "not_retrieved", "remove"),
        (3, "search_snippet_only", "flag"),
        (4, "quote_verified", "keep"),
        (5, "no_source_entry", "remove"),
        (6, "empty_entry", "remove"),
    ]
    assert result.summary.model_dump() == {"valid": 2, "repaired": 0, "removed": 3, "flagged": 1}
    assert result.citations[0].model_dump() == {
        "index": 1,
        "url": PAGE_URL,
        "title": "Battery",
        "evidence_id": "ev1",
        "verified": True,
        "reason": "quote_verified",
        "detail": "",
        "action": "keep",
    }


def test_repaired_counts_failures_of_the_bounced_draft_that_no_longer_fail() -> None:
    bad_quote = ("The cell reaches 412 Wh/kg.", "reaches 412 Wh/kg in every test", PAGE_URL)
    draft = report("A [1]. B [2]. C [3].", f"Battery — {PAGE_URL}", f"Invented — {NEVER_URL}", f"Cells — {SNIPPET_URL}")
    first = check_citations(draft, EVIDENCE, findings(bad_quote))
    assert first.summary.model_dump() == {"valid": 0, "repaired": 0, "removed": 1, "flagged": 2}
    revised = report("A [1]. C [2].", f"Battery — {PAGE_URL}", f"Cells — {SNIPPET_URL}")
    second = check_citations(revised, EVIDENCE, findings(GOOD), previous=first)
    assert second.summary.model_dump() == {"valid": 1, "repaired": 2, "removed": 0, "flagged": 1}


@pytest.mark.parametrize(
    ("entry", "claims", "fragments"),
    [
        (f"Invented — {NEVER_URL}", [], ["[1] cites", NEVER_URL, "never retrieved"]),
        (f"Cells — {SNIPPET_URL}", [], ["[1] rests on a search-result snippet", SNIPPET_URL, "never read"]),
        (
            f"Battery — {PAGE_URL}",
            [("The cell is dense.", "dense cells", PAGE_URL)],
            ["[1]:", "is not in the text retrieved", "The cell is dense."],
        ),
        (f"Battery — {PAGE_URL}", [("The cell is dense.", "", PAGE_URL)], ["[1]:", "without a supporting quote"]),
        (
            f"Battery — {PAGE_URL}",
            [("It reaches 450 Wh/kg.", "reaches 412 Wh/kg", PAGE_URL)],
            ["[1]:", "450 Wh/kg not in its quote", "use the figures"],
        ),
        ("MCP: pricing-db", [], ["[1] names no URL", "“MCP: pricing-db”"]),
        (f"Battery — {PAGE_URL}", [GOOD], []),
    ],
)
def test_citation_problems_for_the_report_gate(
    entry: str, claims: list[tuple[str, str, str]], fragments: list[str]
) -> None:
    problems = check_citations(report("Claim [1].", entry), EVIDENCE, findings(*claims)).problems()
    assert len(problems) == (1 if fragments else 0)
    for fragment in fragments:
        assert fragment in problems[0]


def test_structural_defects_are_left_to_the_lint() -> None:
    result = check_citations("Dangling [3].\n\n## Sources\n[1] —\n", EVIDENCE, [])
    assert {c.reason for c in result.citations} == {"no_source_entry", "empty_entry"}
    assert result.problems() == []


# --- repair ----------------------------------------------------------------------------------------


def repaired(markdown: str, claims: list[Findings] | None = None) -> str:
    return repair_report(markdown, check_citations(markdown, EVIDENCE, claims or findings(GOOD)))


P, S, N = f"Battery — {PAGE_URL}", f"Cells — {SNIPPET_URL}", f"Invented — {NEVER_URL}"
P2 = f"Battery (specs) — {SPECS_URL}"


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        pytest.param(
            report("A [1]. B [2]. C [3].", P, N, P2),
            report("A [1]. B. C [2].", P, P2),
            id="remove-middle-and-renumber",
        ),
        pytest.param(
            report("A [1, 2]. C [2, 3].", P, N, P2),
            report("A [1]. C [2].", P, P2),
            id="groups-lose-removed-numbers",
        ),
        pytest.param(report("A [1-3].", P, N, P2), report("A [1, 2].", P, P2), id="range-with-a-hole"),
        pytest.param(report("A [1][2][3].", P, N, P2), report("A [1][2].", P, P2), id="adjacent-markers"),
        pytest.param(report("A [1-2].", P, P2), report("A [1-2].", P, P2), id="untouched-range-kept-verbatim"),
        pytest.param(report("A [1]. B [2].", N, P), report("A. B [1].", P), id="first-entry-removed"),
        pytest.param(
            report("A [2]. B [1].", P, P2),
            "# Title\n\nA [1]. B [2].\n\n## Sources\n[2] " + P + "\n[1] " + P2 + "\n",
            id="renumber-by-first-use-keep-list-order",
        ),
        pytest.param(report("A [1].", P, P2), report("A [1].", P, P2), id="orphan-kept-after-cited"),
        pytest.param(report("A [2]. B [1].", N, P2, P), report("A [1]. B.", P2, P), id="orphan-numbered-after-cited"),
        pytest.param(report("A [1]. Dangling [7].", P), report("A [1]. Dangling.", P), id="dangler-dropped"),
        pytest.param(report("A [1]. B [2].", P, S), report("A [1]. B [2].", P, S), id="snippet-only-kept-unmarked"),
        pytest.param(
            report("A [1] [unverified]. B [2].", S, P), report("A [1] [unverified]. B [2].", S, P), id="mark-kept"
        ),
        pytest.param(report("A [1].", N), "# Title\n\nA.\n", id="all-removed-drops-sources"),
        pytest.param(report("A [1]. `x[2]` stays.", P, N), report("A [1]. `x[2]` stays.", P), id="code-untouched"),
        pytest.param("# T\n\nNo citations.\n", "# T\n\nNo citations.\n", id="no-citations"),
    ],
)
def test_repair(markdown: str, expected: str) -> None:
    assert repaired(markdown) == expected


def test_repair_leaves_marking_to_the_claim_check() -> None:
    """A source whose finding's quote is not in the page stays cited and unmarked here: whether each sentence
    citing it holds is the claim check's call (tests/test_claims.py)."""
    claims = findings(("The cell reaches 412 Wh/kg.", "reaches 412 Wh/kg in every test", PAGE_URL))
    assert repaired(report("Dense [1]. Other [2].", P, P2), claims) == report("Dense [1]. Other [2].", P, P2)


@pytest.mark.parametrize(
    "markdown",
    [
        report("A [1]. B [2]. C [3].", P, N, P2),
        report("A [1, 2]. B [2]. C [3].", P, S, N),
        report("A [3]. B [1]. C [2].", P, S, N),
    ],
)
def test_repair_is_stable_on_its_own_output(markdown: str) -> None:
    once = repaired(markdown)
    assert repaired(once) == once
    result = check_citations(once, EVIDENCE, findings(GOOD))
    assert result.summary.removed == 0


def test_repair_with_a_clean_report_changes_nothing() -> None:
    markdown = report("A [1]. B [2].", P, P2)
    assert repair_report(markdown, check_citations(markdown, EVIDENCE, findings(GOOD))) == markdown


def test_report_survives_a_round_trip_through_state() -> None:
    """The lead stores ``model_dump()`` in graph state; reading it back must give the same report."""
    result = check_citations(report("A [1]. B [2]. C [3].", P, S, N), EVIDENCE, findings(GOOD))
    assert CitationReport.model_validate(result.model_dump()) == result
