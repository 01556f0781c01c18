"""The report's language, outline and style: what a run may ask for, and the refusals that list the valid values."""

from __future__ import annotations

import pytest

from deep_research_agent.delivery.unit_cap import UnitCapMiddleware
from deep_research_agent.documents.language import detect_language
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.reader import LANGUAGES, MAX_OUTLINE_SECTIONS, OutlineError, parse_outline
from deep_research_agent.graph import plan_max_units, unit_cap
from deep_research_agent.settings import ResearchConfig

KEY = {"OPENAI_API_KEY": "sk-test"}


def resolve(**configurable: object) -> ResearchConfig:
    return ResearchConfig.resolve({"configurable": configurable}, KEY)


def test_the_defaults_ask_for_nothing_new():
    settings = resolve()
    assert (settings.report_language, settings.report_outline, settings.report_style) == ("auto", (), "standard")
    assert settings.problems == ()


def test_a_language_code_is_read_in_any_case():
    assert resolve(report_language="FR").report_language == "fr"


def test_an_unknown_language_code_refuses_the_run_and_lists_the_valid_ones():
    (problem,) = resolve(report_language="french").problems
    assert "'french' is not a language code" in problem
    assert "auto" in problem and "fr" in problem.split("one of: ")[1].split(", ") and "ja" in problem


def test_an_unknown_style_refuses_the_run_and_lists_the_styles():
    (problem,) = resolve(report_style="long").problems
    assert problem == "report_style 'long' does not exist. Use one of: brief, standard, detailed."


def test_the_env_sets_the_style_and_a_run_overrides_it():
    env = {**KEY, "DRA_REPORT_STYLE": "detailed"}
    assert ResearchConfig.resolve({}, env).report_style == "detailed"
    assert ResearchConfig.resolve({"configurable": {"report_style": "brief"}}, env).report_style == "brief"


def test_an_outline_is_a_list_of_headings_or_a_markdown_skeleton():
    assert resolve(report_outline=["Context", "Costs"]).report_outline == ("Context", "Costs")
    skeleton = "# My report\n\n## Context\nwhat to say\n### detail\n## Costs\n## Outlook\n"
    assert resolve(report_outline=skeleton).report_outline == ("Context", "Costs", "Outlook")
    env = {**KEY, "DRA_REPORT_OUTLINE": '["A", "B"]'}
    assert ResearchConfig.resolve({}, env).report_outline == ("A", "B")


def test_an_outline_without_headings_or_with_hundreds_is_refused():
    (empty,) = resolve(report_outline="  \n\n").problems
    assert "no section headings" in empty
    (many,) = resolve(report_outline=[f"Section {n}" for n in range(200)]).problems
    assert f"200 sections; a report follows at most {MAX_OUTLINE_SECTIONS}" in many
    with pytest.raises(OutlineError, match="list of section headings"):
        parse_outline([1, 2])


def test_an_empty_list_means_no_outline():
    assert resolve(report_outline=[]).report_outline == ()


@pytest.mark.parametrize(
    "question, language",
    [
        ("Quelle est la part du nucléaire dans la production d'électricité en France en 2023 ?", "fr"),
        ("日本の出生率の推移について教えてください", "ja"),
        ("Wie hoch ist die Inflation in Deutschland?", "de"),
        ("What share of French electricity was nuclear in 2023?", "en"),
    ],
)
def test_the_question_language_is_told_locally(question, language):
    assert detect_language(question) == language


def test_a_text_too_short_to_tell_names_no_language():
    assert detect_language("solar energy") is None
    assert detect_language("   ") is None


def test_every_language_the_detector_tells_can_be_asked_for_by_code():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    assert set(LanguageIdentifier.from_model_file(MODEL_FILE).labels) - {"zxx"} == set(LANGUAGES)


def test_ask_takes_the_language_style_and_an_outline_file(tmp_path):
    import argparse

    from deep_research_agent.cli.ask import reader_options

    outline = tmp_path / "outline.md"
    outline.write_text("# Rapport\n## Contexte\n## Coûts\n", encoding="utf-8")
    args = argparse.Namespace(language="FR", style="brief", outline=str(outline))
    assert reader_options(args) == {
        "report_language": "fr",
        "report_style": "brief",
        "report_outline": ["Contexte", "Coûts"],
    }


@pytest.mark.parametrize(
    "options, message",
    [
        ({"language": "klingon"}, "--language 'klingon' is not a language code"),
        ({"style": "long"}, "--style 'long' does not exist. Use one of: brief, standard, detailed."),
        ({"outline": "/nonexistent/outline.md"}, "Cannot read --outline"),
    ],
)
def test_ask_refuses_a_bad_option_before_asking_a_server(options, message):
    import argparse

    from deep_research_agent.cli.ask import reader_options

    args = argparse.Namespace(**{"language": None, "style": None, "outline": None, **options})
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        reader_options(args)


def test_a_refused_style_or_language_leaves_the_defaults_for_the_graph_that_reports_it():
    settings = resolve(report_style="epic", report_language="elvish")
    assert len(settings.problems) == 2 and (settings.report_style, settings.report_language) == ("standard", "auto")


def test_a_style_caps_the_units_a_run_starts_and_a_reviewed_plan_has():
    assert unit_cap(resolve()) == [] and plan_max_units(resolve()) == 10
    (brief,) = unit_cap(resolve(report_style="brief"))
    assert brief.max_units == 2 and plan_max_units(resolve(report_style="brief")) == 2
    assert plan_max_units(resolve(report_style="detailed", plan_max_units=5)) == 5
    assert plan_max_units(resolve(report_style="detailed", plan_max_units=0)) == 8


@pytest.mark.parametrize("knobs", [{"max_units": 0, "style": "brief"}, {"max_units": 2, "style": "epic"}])
def test_the_unit_cap_refuses_a_cap_or_style_it_cannot_hold(knobs):
    with pytest.raises(KnobError):
        UnitCapMiddleware(**knobs)
