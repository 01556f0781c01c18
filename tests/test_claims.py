"""Claims: each cited sentence of a report is held against the full text of the sources it cites."""

from __future__ import annotations

import pytest

from deep_research_agent.domain.claims import ClaimRecord, ClaimSummary
from deep_research_agent.domain.findings import Finding, Findings
from deep_research_agent.evidence.store import EvidenceRecord
from deep_research_agent.evidence.text import EvidenceLibrary
from deep_research_agent.report.citations import check_citations
from deep_research_agent.report.claim_split import split_claims
from deep_research_agent.report.claims import ClaimCheck, check_claims, mark_unverified

PHAROS = "https://history.example/pharos"
SURVEY = "https://survey.example/pharos-height"
SNIPPET = "https://news.example/pharos"
NEVER = "https://never.example/x"
PHAROS_TEXT = (
    "The Lighthouse of Alexandria. The lighthouse of Alexandria was built between 280 and 247 BC on the island "
    "of Pharos. It stood over 100 metres tall and was one of the Seven Wonders of the World.\n"
    "Ptolemy II paid 800 talents for it, according to Pliny. Its light was said to be visible for 50 kilometres."
)
SURVEY_TEXT = (
    "A new survey of the ruins. The survey estimates that the lighthouse of Alexandria stood 137 metres tall "
    "when it was finished. The team mapped 3,000 blocks on the seabed."
)


def record(id: str, url: str, text: str, kind: str = "page") -> EvidenceRecord:
    return EvidenceRecord(
        id=id, url=url, title="", kind=kind, retrieved_at="-", agent="research-subagent", sha256="-", text=text
    )


EVIDENCE = [
    record("ev1", PHAROS, PHAROS_TEXT),
    record("ev2", SURVEY, SURVEY_TEXT),
    record("ev3", SNIPPET, "The Pharos lighthouse stood 120 metres tall.", kind="search_result"),
    record("ev4", "MCP: ruins-db", '{"site": "Pharos", "blocks_mapped": 3000, "depth_m": 8}', kind="mcp_result"),
]
SOURCES = f"## Sources\n[1] Pharos — {PHAROS}\n[2] Survey — {SURVEY}\n[3] News — {SNIPPET}\n[4] MCP: ruins-db\n[5] Gone — {NEVER}\n"


def report(body: str) -> str:
    return f"# The Pharos\n\n{body}\n\n{SOURCES}"


def check(body: str, findings: list[Findings] | None = None) -> ClaimCheck:
    markdown = report(body)
    library = EvidenceLibrary(EVIDENCE)
    return check_claims(markdown, check_citations(markdown, library, findings or []), library)


def verdicts(body: str) -> list[tuple[str, list[str]]]:
    return [(r.verdict, r.tokens) for r in check(body).records]


# --- what a claim is -----------------------------------------------------------------------------


def test_claims_are_cited_sentences_items_and_cells_and_uncited_figures() -> None:
    markdown = (
        "# Pharos in 2024\n\n"
        "It stood over 100 metres tall [1]. It was a wonder. It cost 800 talents.\n\n"
        "## Facts from 280 BC\n\n"
        "- Built between 280 and 247 BC [1].\n"
        "- Light seen for 50 kilometres [1], e.g. from ships.\n"
        "> **Incomplete.** 2 gaps remain.\n\n"
        "> “It stood 137 metres tall” [2]\n\n"
        "| Part | Height | Source |\n|---|---|---|\n| Tower | 137 m | [2] |\n| Base | square | [1] |\n\n"
        "```\nrows = 500\n```\n\n"
        f"{SOURCES}"
    )
    claims = [(c.text, c.indexes) for c in split_claims(markdown)]
    assert claims == [
        ("It stood over 100 metres tall [1].", (1,)),
        ("It cost 800 talents.", ()),
        ("Built between 280 and 247 BC [1].", (1,)),
        ("Light seen for 50 kilometres [1], e.g. from ships.", (1,)),
        ("“It stood 137 metres tall” [2]", (2,)),
        ("137 m", (2,)),
    ]


def test_a_citation_after_the_full_stop_belongs_to_the_sentence_before() -> None:
    claims = split_claims(report("It stood over 100 metres tall. [1] Ptolemy II paid 800 talents.[1] It shone."))
    assert [(c.text, c.indexes) for c in claims] == [
        ("It stood over 100 metres tall. [1]", (1,)),
        ("Ptolemy II paid 800 talents.[1]", (1,)),
    ]


def test_abbreviations_and_decimals_do_not_end_a_sentence() -> None:
    [claim] = split_claims(report("It stood approx. 100 metres, i.e. 100 m, vs. 3.5 km of coast [1]."))
    assert claim.indexes == (1,) and [f.text for f in claim.figures] == ["100 metres", "100 m", "3.5 km"]


# --- verdicts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("It stood over 100 metres tall [1].", [("supported", [])], id="figure-in-page"),
        pytest.param("It was built between 280 and 247 BC [1].", [("supported", [])], id="range-in-page"),
        pytest.param("It was built 280–247 BC [1].", [("supported", [])], id="range-other-form"),
        pytest.param("It was one of the Seven Wonders [1].", [("supported", [])], id="no-figure"),
        pytest.param(
            "The lighthouse stood 300 metres tall and was finished in 1999 [1].",
            [("unsupported_number", ["300 metres", "1999"])],
            id="invented-figures",
        ),
        pytest.param(
            "It was 10 metres wide [1].", [("unsupported_number", ["10 metres"])], id="not-inside-other-numbers"
        ),
        pytest.param(
            'Pliny wrote that Ptolemy II "paid 800 talents for it" [1].', [("supported", [])], id="quote-in-page"
        ),
        pytest.param(
            'Pliny called it "the tallest tower on earth" [1].',
            [("unsupported_quote", ["“the tallest tower on earth”"])],
            id="invented-quote",
        ),
        pytest.param("It stood 120 metres tall [3].", [("source_not_read", [])], id="snippet-only"),
        pytest.param("The team mapped 3,000 blocks [4].", [("supported", [])], id="mcp-result"),
        pytest.param(
            "The team mapped 3,000 blocks [1].", [("unsupported_number", ["3,000"])], id="figure-in-another-source-only"
        ),
        pytest.param(
            "It was built between 280 and 247 BC and the team mapped 3,000 blocks [1, 2].",
            [("supported", [])],
            id="union-of-cited-texts",
        ),
        pytest.param(
            "It stood over 100 metres tall. The team mapped 3,000 blocks.",
            [("uncited_number", ["100 metres"]), ("uncited_number", ["3,000"])],
            id="uncited",
        ),
        pytest.param("It was a wonder.", [], id="uncited-without-figures-is-no-claim"),
    ],
)
def test_verdicts(body: str, expected: list[tuple[str, list[str]]]) -> None:
    assert verdicts(body) == expected


def test_a_claim_is_not_supported_because_its_source_is_verified_elsewhere() -> None:
    finding = [
        Findings(
            summary="s",
            findings=[
                Finding(finding="It stood over 100 metres.", evidence="It stood over 100 metres tall", source=PHAROS)
            ],
        )
    ]
    result = check("It stood over 100 metres tall [1]. It stood 300 metres tall [1].", finding)
    assert [r.verdict for r in result.records] == ["supported", "unsupported_number"]


def test_a_figure_in_the_page_but_in_no_finding_s_quote_is_supported() -> None:
    finding = [
        Findings(
            summary="s",
            findings=[
                Finding(finding="It stood over 100 metres.", evidence="It stood over 100 metres tall", source=PHAROS)
            ],
        )
    ]
    [result] = check("Its light was visible for 50 kilometres [1].", finding).records
    assert result.verdict == "supported"
    assert result.sources[0].sentence == "Its light was said to be visible for 50 kilometres."


def test_a_claim_citing_only_a_source_never_retrieved_was_not_read() -> None:
    [result] = check("It stood 300 metres tall [5].").records
    assert result.verdict == "source_not_read" and "never retrieved" in result.detail


def test_each_cited_source_gets_its_nearest_sentence() -> None:
    [result] = check("The lighthouse stood 300 metres tall [1].").records
    [source] = result.sources
    assert (source.index, source.url, source.evidence_id) == (1, PHAROS, "ev1")
    assert source.sentence == "It stood over 100 metres tall and was one of the Seven Wonders of the World."
    assert result.detail == "300 metres not in the text of [1]"


# --- conflicting figures -------------------------------------------------------------------------


def test_two_cited_sources_with_different_heights_conflict() -> None:
    [result] = check("The lighthouse of Alexandria stood 137 metres tall [1, 2].").records
    assert result.verdict == "conflicting"
    assert result.tokens == ["137 metres", "100 metres"]
    assert result.detail == "[2] gives 137 metres, [1] gives 100 metres"
    by_index = {s.index: s.sentence for s in result.sources}
    assert "137 metres" in by_index[2] and "over 100 metres" in by_index[1]


def test_stating_both_values_resolves_the_conflict() -> None:
    body = "The lighthouse of Alexandria stood over 100 metres [1] or 137 metres tall [2]."
    assert verdicts(body) == [("supported", [])]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("It stood over 100 metres tall [1] and the survey mapped 3,000 blocks [2].", id="other-units"),
        pytest.param("The survey of the ruins was published [1, 2].", id="no-figure"),
        pytest.param("The lighthouse stood 137 metres tall [2].", id="one-source"),
    ],
)
def test_no_conflict_without_two_values_for_one_figure(body: str) -> None:
    assert {r.verdict for r in check(body).records} <= {"supported", "unchecked"}


# --- the bounce and the marks --------------------------------------------------------------------


def test_problems_name_the_claim_the_token_and_the_source_s_nearest_sentence() -> None:
    result = check(
        "The lighthouse stood 300 metres tall and was finished in 1999 [1]. The team mapped 5,000 blocks. "
        "The lighthouse of Alexandria stood 137 metres tall [1, 2]. It stood 120 metres tall [3]."
    )
    invented, uncited, conflict = result.problems()
    assert invented.startswith(
        "“The lighthouse stood 300 metres tall and was finished in 1999 [1].”: 300 metres, 1999 not in the text of [1]."
    )
    assert "[1] says: “It stood over 100 metres tall and was one of the Seven Wonders of the World.”" in invented
    assert (
        uncited
        == "“The team mapped 5,000 blocks.” states 5,000 with no citation: cite the source whose text gives it, or drop the figure."
    )
    assert (
        "its sources disagree: [2] gives 137 metres, [1] gives 100 metres" in conflict
        and "State the range, or both values" in conflict
    )


def test_marks_go_after_the_last_citation_or_before_the_closing_stop_and_never_twice() -> None:
    markdown = report("It stood 300 metres tall [1]. It stood over 100 metres tall [1]. The team mapped 5,000 blocks.")
    library = EvidenceLibrary(EVIDENCE)
    result = check_claims(markdown, check_citations(markdown, library, []), library)
    marked, records = mark_unverified(markdown, result)
    assert (
        "It stood 300 metres tall [1] [unverified]. It stood over 100 metres tall [1]. The team mapped 5,000 blocks [unverified]."
        in marked
    )
    assert [r.claim for r in records] == [
        "It stood 300 metres tall [1] [unverified].",
        "It stood over 100 metres tall [1].",
        "The team mapped 5,000 blocks [unverified].",
    ]
    again = check_claims(marked, check_citations(marked, library, []), library)
    assert mark_unverified(marked, again)[0] == marked


def test_a_table_cell_is_marked_in_its_cell() -> None:
    markdown = report("| Part | Height |\n|---|---|\n| Tower | 300 m [1] |\n| Base | 30 m | [1] |")
    library = EvidenceLibrary(EVIDENCE)
    marked, _ = mark_unverified(markdown, check_claims(markdown, check_citations(markdown, library, []), library))
    assert "| Tower | 300 m [1] [unverified] |\n| Base | 30 m [unverified] | [1] |" in marked


def test_the_summary_counts_every_verdict() -> None:
    summary = check(
        "It stood over 100 metres tall [1]. It stood 300 metres tall [1]. It stood 120 metres tall [3]. 5,000 blocks."
    ).summary
    assert summary.model_dump() == {
        "claims": 4,
        "checked": 4,
        "supported": 1,
        "flagged": 3,
        "unsupported_number": 1,
        "unsupported_quote": 0,
        "unsupported_name": 0,
        "contradicted": 0,
        "not_supported": 0,
        "source_not_read": 1,
        "conflicting": 0,
        "uncited_number": 1,
        "unchecked": 0,
        "judged": 0,
        "not_checked": 0,
        "judge_unreliable": False,
        "chart_points": 0,
        "chart_points_flagged": 0,
        "decided_by": {"figures_and_quotes": 3, "names_and_direction": 0, "judged": 0, "not_checked": 1},
        "citation_accuracy": 0.25,
        "coverage": "4 of 4 claims checked; 1 supported, 3 marked [unverified] (citation accuracy 25%)",
    }


@pytest.mark.parametrize(
    ("body", "coverage", "accuracy"),
    [
        pytest.param(
            "The evidence found answers the question [1]. Finding 1 is supported by its source [1].",
            "0 of 2 claims checked",
            None,
            id="nothing-to-look-up",
        ),
        pytest.param(
            "It stood over 100 metres tall [1]. It was a wonder [1]. The tower was admired [1].",
            "1 of 3 claims checked; 1 supported (citation accuracy 100%)",
            1.0,
            id="some-unchecked",
        ),
    ],
)
def test_a_claim_with_nothing_to_look_up_is_unchecked_and_the_accuracy_counts_only_checked_claims(
    body: str, coverage: str, accuracy: float | None
) -> None:
    result = check(body)
    summary = result.summary
    assert (summary.coverage, summary.citation_accuracy) == (coverage, accuracy)
    assert summary.unchecked == summary.claims - summary.checked and summary.flagged == 0
    unchecked = [r for r in result.records if r.verdict == "unchecked"]
    assert unchecked and all(
        r.decided_by == "not_checked" and "no figure, quote or name" in r.detail for r in unchecked
    )
    assert "[unverified]" not in mark_unverified(report(body), result)[0]
    assert result.problems() == [], "the writer cannot fix a sentence with nothing to check: it is not bounced"


def test_a_summary_saved_before_unchecked_claims_reads_its_not_checked_claims_as_unchecked() -> None:
    saved = {"claims": 2, "supported": 2, "flagged": 0, "not_checked": 2, "citation_accuracy": 1.0}
    summary = ClaimSummary.model_validate(saved)
    assert (summary.checked, summary.supported, summary.unchecked, summary.citation_accuracy) == (0, 0, 2, None)
    assert summary.coverage == "0 of 2 claims checked"
    record = ClaimRecord.model_validate(
        {"claim": "It was admired.", "verdict": "supported", "decided_by": "not_checked"}
    )
    assert record.verdict == "unchecked"


def test_a_page_s_header_line_yields_to_the_body_sentence_holding_the_same_figure() -> None:
    page = "Title: Cells reach 412 Wh/kg\nDate: 2024-03-14\n\n# Cells reach 412 Wh/kg\n\nThe new cell reached 412 Wh/kg in independent tests."
    evidence = [record("ev1", PHAROS, page)]
    markdown = f"# Cells\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] Cells — {PHAROS}\n"
    library = EvidenceLibrary(evidence)
    [result] = check_claims(markdown, check_citations(markdown, library, []), library).records
    assert result.sources[0].sentence == "The new cell reached 412 Wh/kg in independent tests."


def test_the_revising_status_shows_the_first_problems_of_a_long_list_and_how_many_more() -> None:
    from deep_research_agent.delivery.report_gate import DETAIL_CHARS, ReportGateMiddleware

    _detail = ReportGateMiddleware().detail

    problems = [f"“Claim {n} states {n},000 tonnes with no citation.” " + "x" * 300 for n in range(40)]
    detail = _detail(problems)
    assert len(detail) <= DETAIL_CHARS + 40 and detail.startswith(problems[0])
    shown = detail.count("with no citation")
    assert detail.endswith(f" … and {40 - shown} more.") and 0 < shown < 40
    assert _detail(problems[:2]) == " ".join(problems[:2])


# --- labels, names and direction -----------------------------------------------------------------


def test_a_label_s_number_is_not_a_figure_missing_from_the_source() -> None:
    assert verdicts("**Finding 1:** It stood over 100 metres tall [1]. Step 2: it was built on Pharos [1].") == [
        ("supported", []),
        ("supported", []),
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("It was built on the island of Rhodes [1].", [("unsupported_name", ["Rhodes"])], id="place"),
        pytest.param(
            "It was designed by Sostratus of Cnidus [1].", [("unsupported_name", ["Sostratus of Cnidus"])], id="person"
        ),
        pytest.param(
            "Ptolemy III paid 800 talents for it [1].", [("unsupported_name", ["Ptolemy III"])], id="numbered-name"
        ),
        pytest.param("The Lighthouse of Alexandria stood on Pharos [1].", [("supported", [])], id="names-in-the-page"),
        pytest.param("Pliny's account says Ptolemy II paid 800 talents [1].", [("supported", [])], id="possessive"),
        pytest.param("THE LIGHTHOUSE OF ALEXANDRIA was a wonder [1].", [("supported", [])], id="case"),
        pytest.param("The lighthouse of Alexandrïa was a wonder [1].", [("supported", [])], id="diacritics"),
        pytest.param("It was among the Seven Wonders [1].", [("supported", [])], id="plural-and-title"),
        pytest.param(
            "Historians agree it was one of the wonders [1].", [("unchecked", [])], id="sentence-start-is-grammar"
        ),
        pytest.param("It was a wonder [4].", [("unchecked", [])], id="the-source-s-label-names-it"),
    ],
)
def test_names_must_be_in_the_cited_text(body: str, expected: list[tuple[str, list[str]]]) -> None:
    assert verdicts(body) == expected


def test_a_name_s_record_says_which_names_are_missing_and_how_it_was_decided() -> None:
    [result] = check("It was built by Dinocrates on Rhodes [1].").records
    assert (result.verdict, result.tokens, result.decided_by) == (
        "unsupported_name",
        ["Dinocrates", "Rhodes"],
        "names_and_direction",
    )
    assert result.detail == "Dinocrates, Rhodes not in the text of [1]"
    [problem] = check("It was built by Dinocrates on Rhodes [1].").problems()
    assert "the name Dinocrates, Rhodes not in the text of [1]" in problem and "[1] says:" in problem


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "It stood under 100 metres tall [1].", [("contradicted", ["under 100 metres"])], id="under-vs-over"
        ),
        pytest.param(
            "It stood less than 100 metres tall [1].", [("contradicted", ["less than 100 metres"])], id="less-than"
        ),
        pytest.param("It stood more than 100 metres tall [1].", [("supported", [])], id="same-direction"),
        pytest.param("It stood 100 metres tall [1].", [("supported", [])], id="no-direction-in-the-claim"),
        pytest.param("It stood at least 137 metres tall [2].", [("supported", [])], id="source-silent"),
        pytest.param("It stood at most 137 metres tall [2].", [("supported", [])], id="source-silent-either-way"),
        pytest.param(
            "It stood not more than 100 metres tall [1].",
            [("contradicted", ["not more than 100 metres"])],
            id="negated",
        ),
    ],
)
def test_direction_around_a_figure_must_agree_with_the_source(body: str, expected: list[tuple[str, list[str]]]) -> None:
    assert verdicts(body) == expected


def test_a_reversed_direction_names_the_source_s_words_and_sentence() -> None:
    [result] = check("It stood under 100 metres tall [1].").records
    assert result.detail == "[1] says over 100 metres" and result.decided_by == "names_and_direction"
    assert result.sources[0].sentence == "It stood over 100 metres tall and was one of the Seven Wonders of the World."
    [problem] = check("It stood under 100 metres tall [1].").problems()
    assert "it says “under 100 metres” where [1] says over 100 metres: the source says the opposite." in problem


def test_a_superlative_without_a_figure_is_held_against_the_nearest_sentence() -> None:
    body = (
        "The new survey found the lighthouse of Alexandria was the shortest tower when it was finished [2]. "
        "The new survey of the ruins was published [2]."
    )
    survey = [record("ev2", SURVEY, SURVEY_TEXT.replace("stood 137 metres tall", "was the tallest tower"))]
    markdown = report(body)
    library = EvidenceLibrary(survey)
    records = check_claims(markdown, check_citations(markdown, library, []), library).records
    assert [(r.verdict, r.tokens) for r in records] == [("contradicted", ["shortest"]), ("unchecked", [])]


def test_each_verdict_says_how_it_was_decided() -> None:
    body = (
        "It stood over 100 metres tall [1]. It was built on Pharos [1]. It was a wonder [1]. "
        "It stood 120 metres tall [3]."
    )
    assert [(r.verdict, r.decided_by) for r in check(body).records] == [
        ("supported", "figures_and_quotes"),
        ("supported", "names_and_direction"),
        ("unchecked", "not_checked"),
        ("source_not_read", "not_checked"),
    ]
    assert check(body).summary.unchecked == 1
    assert [c.claim.text for c in check(body).judgeable()] == ["It was built on Pharos [1].", "It was a wonder [1]."]
