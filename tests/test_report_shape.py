"""The reader's shape of a report: the prompt sections each option adds, and the outline the report gate holds it to."""

from __future__ import annotations

from deep_research_agent.delivery.reader import ReaderShape, orchestrator_sections, research_sections
from deep_research_agent.report.length import length_gap, length_problem, report_words
from deep_research_agent.report.outline import gap_problems, outline_gaps, with_outline_note

OUTLINE = ("Context", "Costs", "Risks", "Outlook")


def test_the_defaults_add_no_prompt_text():
    assert orchestrator_sections(ReaderShape(), None) == []
    assert research_sections(None) == [] and research_sections("en") == []


def test_a_language_tells_the_orchestrator_to_write_and_quote_in_it():
    (section,) = orchestrator_sections(ReaderShape(language="fr"), "fr")
    assert "in French" in section and "clarifying questions" in section
    assert "Quotes stay in their source's language" in section
    (search,) = research_sections("ja")
    assert "Search in Japanese, and in English too" in search


def test_brief_and_detailed_ask_for_different_plans_and_lengths():
    (brief,) = orchestrator_sections(ReaderShape(style="brief"), None)
    (detailed,) = orchestrator_sections(ReaderShape(style="detailed"), None)
    assert "plan 1-2 research units" in brief and "300-600 words" in brief
    assert "plan 4-8 research units" in detailed and "2,500-5,000 words" in detailed


def prose(words: int) -> str:
    return " ".join(["figure"] * words)


def test_a_report_counts_the_words_of_its_prose_not_its_sources_markers_or_urls():
    report = "# Title\n\nThe cell holds 412 Wh/kg [1][2], see https://example.org/a.\n\n## Sources\n[1] A — https://a.example\n"
    assert report_words(report) == 8


def test_a_japanese_report_is_counted_on_the_scale_of_an_english_one():
    japanese = report_words("ナトリウムガラス電池のエネルギー密度は412 Wh/kgです。")
    english = report_words("The energy density of sodium-glass batteries is 412 Wh/kg.")
    assert english == 11 and abs(japanese - english) <= 2, japanese


def test_a_brief_report_three_times_its_length_is_sent_back_and_a_near_one_is_not():
    assert length_gap(prose(650), "brief") is None
    gap = length_gap(prose(1800), "brief")
    assert gap is not None and gap.too_long
    assert length_problem(gap).startswith(
        "The report is about 1,800 words; the reader asked for a brief report of 300-600"
    )


def test_a_detailed_report_of_one_paragraph_is_sent_back_and_standard_asks_no_length():
    gap = length_gap(prose(200), "detailed")
    assert gap is not None and not gap.too_long and "cover each angle" in length_problem(gap)
    assert length_gap(prose(1400), "detailed") is None
    assert length_gap(prose(20), "standard") is None and length_gap(prose(20_000), "standard") is None


def test_the_outline_lists_its_sections_in_order():
    (section,) = orchestrator_sections(ReaderShape(outline=OUTLINE), None)
    assert "1. Context\n2. Costs\n3. Risks\n4. Outlook" in section


def test_a_report_with_every_section_in_order_has_no_gaps():
    report = "# T\n\nSummary.\n\n## 1. Context\n\n## Costs and prices\n\n## Risks\n\n## outlook\n\n## Sources\n"
    assert not outline_gaps(report, OUTLINE)


def test_a_missing_and_a_misplaced_section_are_named():
    report = "# T\n\n## Costs\n\n## Context\n\n## Outlook\n\n## Sources\n[1] A — https://a.example\n"
    gaps = outline_gaps(report, OUTLINE)
    assert gaps.missing == ("Risks",) and gaps.out_of_order == ("Costs",)
    problems = gap_problems(gaps)
    assert problems[0] == 'The outline\'s section "Risks" is missing: add it as a ## heading.'
    noted = with_outline_note(report, gaps)
    assert noted.index('no section "Risks"') < noted.index("## Sources")


def test_a_sentence_start_in_another_language_is_no_name_unless_the_report_names_it():
    from deep_research_agent.report.entities import names_in

    assert [n.text for n in names_in("Selon la source, la cellule Halvorsen atteint 412 Wh/kg.", english=False)] == [
        "Halvorsen"
    ]
    assert [
        n.text for n in names_in("Halvorsen annonce 412 Wh/kg.", known=frozenset({"halvorsen"}), english=False)
    ] == ["Halvorsen"]


def test_a_german_report_checks_figures_and_quotes_and_says_names_are_not_checked():
    from deep_research_agent.evidence.store import EvidenceStore
    from deep_research_agent.report.citations import check_citations
    from deep_research_agent.report.claims import check_claims

    report = (
        "# Bericht\n\nDie Zelle der Forschungsgruppe erreicht nach unabhängigen Messungen 412 Wh/kg [1].\n\n"
        "## Sources\n[1] A — https://a.example/x\n"
    )
    evidence = EvidenceStore()
    library = evidence.library()
    check = check_claims(report, check_citations(report, library, []), library)
    assert check.language == "de"
    assert all(c.claim.names == () for c in check.checked), "German capitalises every noun: no name is read"
    assert "names are not" in check.summary.not_checked_in_language
