"""The number normaliser and matcher: how a report's figure is found, or not, in the text it cites."""

from __future__ import annotations

import pytest

from deep_research_agent.evidence.figures import COUNT, DATE, IDENTIFIER, YEAR, figures_in, supports, unsupported


def values(text: str) -> list[tuple[str, str]]:
    return [(f.value, f.unit) for f in figures_in(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("3,000 people", [("3000", "")], id="thousands-comma"),
        pytest.param("3000 people", [("3000", "")], id="plain"),
        pytest.param("3 000 people", [("3000", "")], id="thousands-space"),
        pytest.param("3\u202f000 people", [("3000", "")], id="thousands-narrow-space"),
        pytest.param("1,234,567.890", [("1234567.89", "")], id="separators-and-decimals"),
        pytest.param("2.50 and 2.5 and 3.0", [("2.5", ""), ("2.5", ""), ("3", "")], id="decimal-zeros"),
        pytest.param("007", [("7", "")], id="leading-zeros"),
        pytest.param("100 m", [("100", "m")], id="unit-symbol"),
        pytest.param("100 metres", [("100", "m")], id="unit-word"),
        pytest.param("a 100-metre tower", [("100", "m")], id="unit-hyphenated"),
        pytest.param("100m", [("100", "m")], id="unit-attached"),
        pytest.param("over 100 metres", [("100", "m")], id="qualifier-ignored"),
        pytest.param("12%, 12 %, 12 percent, 12 per cent", [("12", "%")] * 4, id="percent-forms"),
        pytest.param("3 percentage points", [("3", "pp")], id="percentage-points"),
        pytest.param("$61, 61 dollars, US$61, 61 USD", [("61", "usd")] * 4, id="dollars"),
        pytest.param("€180 and 180 euros", [("180", "eur")] * 2, id="euros"),
        pytest.param("1.2 billion and 1,200 million", [("1200000000", "")] * 2, id="scale-words"),
        pytest.param("$2.4 million", [("2400000", "usd")], id="scaled-currency"),
        pytest.param(
            "412 Wh/kg, 3.1 mS/cm, 3.2 GWh", [("412", "wh/kg"), ("3.1", "ms/cm"), ("3.2", "gwh")], id="compound-units"
        ),
        pytest.param("25 degrees Celsius, 25 °C", [("25", "°c")] * 2, id="temperature"),
        pytest.param("-5% and fell 5%", [("5", "%")] * 2, id="sign-dropped"),
        pytest.param("3.0x and 3 times", [("3", "x")] * 2, id="multiples"),
        pytest.param("280–247 BC", [("280", "bc"), ("247", "bc")], id="range-dash-takes-second-unit"),
        pytest.param("between 280 and 247 BC", [("280", "bc"), ("247", "bc")], id="range-words"),
        pytest.param("15 to 25 percent", [("15", "%"), ("25", "%")], id="range-to"),
        pytest.param("between 1 and 2 million", [("1000000", ""), ("2000000", "")], id="range-takes-scale"),
        pytest.param("2019–24", [("2019", ""), ("2024", "")], id="abbreviated-year-range"),
        pytest.param("2019-2024", [("2019", ""), ("2024", "")], id="year-range"),
        pytest.param("the 1990s", [("1990", "")], id="decade"),
        pytest.param("H2O, v2, CO2, Q1 and B2B", [], id="digits-inside-words"),
        pytest.param("the 21st century, its 3rd tier", [], id="ordinals"),
        pytest.param("see https://x.example/2024/05/report", [], id="url"),
        pytest.param("cited [3] and [1, 2] and [4-6]", [], id="citation-markers"),
        pytest.param("[the page](https://x.example/2024) says", [], id="link-target"),
        pytest.param("no numbers here", [], id="none"),
    ],
)
def test_normalised_values_and_units(text: str, expected: list[tuple[str, str]]) -> None:
    assert values(text) == expected


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param("finished in 1999", YEAR, id="year-after-in"),
        pytest.param("since 2010 the", YEAR, id="year-after-since"),
        pytest.param("mid-2024", YEAR, id="year-after-mid"),
        pytest.param("the 1990s", YEAR, id="decade"),
        pytest.param("247 BC", YEAR, id="era"),
        pytest.param("1,999 visitors", COUNT, id="separator-makes-a-count"),
        pytest.param("1999 metres", COUNT, id="unit-makes-a-count"),
        pytest.param("in 1500 cases", "", id="noun-after-a-cue-is-not-a-year"),
        pytest.param("1500 soldiers", "", id="bare-four-digits-is-either"),
        pytest.param("5 ad campaigns", "", id="lowercase-ad-is-no-era"),
        pytest.param("2024-03-14", DATE, id="iso-date"),
        pytest.param("NTB-7", IDENTIFIER, id="identifier"),
    ],
)
def test_kinds(text: str, kind: str) -> None:
    assert figures_in(text)[0].kind == kind


def test_dates_in_any_written_form_are_one_date_and_a_year() -> None:
    forms = ["2024-03-14", "14 March 2024", "March 14, 2024", "14th Mar 2024"]
    assert [[(f.value, f.kind) for f in figures_in(form)] for form in forms] == [
        [("2024-03-14", DATE), ("2024", YEAR)]
    ] * 4


def test_figures_keep_their_written_text_and_offsets() -> None:
    text = "It rose 300 metres, cost $2.4 million and drew 1,999 visitors."
    assert [(f.text, text[f.start : f.end]) for f in figures_in(text)] == [
        ("300 metres", "300 metres"),
        ("$2.4 million", "2.4 million"),
        ("1,999", "1,999"),
    ]


@pytest.mark.parametrize(
    ("claim", "source", "held"),
    [
        pytest.param("3,000 people", "3000 people came", True, id="separator-vs-plain"),
        pytest.param("3000 people", "some 3 000 people", True, id="plain-vs-space"),
        pytest.param("100 m", "over 100 metres tall", True, id="unit-forms"),
        pytest.param("100 metres", "100 feet", False, id="other-unit"),
        pytest.param("100 metres", "a score of 100", True, id="source-without-unit"),
        pytest.param("12%", "growth (%): 12", True, id="percent-against-bare"),
        pytest.param("12%", "12 percentage points", False, id="percent-is-not-points"),
        pytest.param("$61", "61 euros", False, id="other-currency"),
        pytest.param("1.2 billion", "1,200 million", True, id="scale"),
        pytest.param("10", "in 2010", False, id="digits-inside-a-larger-number"),
        pytest.param("10 metres", "2010 metres", False, id="digits-inside-a-larger-number-with-unit"),
        pytest.param("2.5", "2.55", False, id="decimal-prefix"),
        pytest.param("finished in 1999", "1,999 visitors", False, id="year-vs-count"),
        pytest.param("2,010 visitors", "opened in 2010", False, id="count-vs-year"),
        pytest.param("1500 soldiers", "1,500 soldiers", True, id="ambiguous-bare-number"),
        pytest.param("280–247 BC", "between 280 and 247 BC", True, id="range-forms"),
        pytest.param("247", "247 BC", True, id="era-against-bare"),
        pytest.param("247 AD", "247 BC", False, id="other-era"),
        pytest.param("over 100 metres", "The tower is 100 m high", True, id="over-100-metres"),
        pytest.param("300 metres", "at least 300 years", False, id="same-value-other-unit"),
        pytest.param("2019–24", "from 2019 to 2024", True, id="abbreviated-range"),
        pytest.param("14 March 2024", "published 2024-03-14", True, id="date-forms"),
        pytest.param("15 March 2024", "published 2024-03-14", False, id="other-date"),
        pytest.param("NTB-7", "a glass called NTB-7", True, id="identifier"),
        pytest.param("NTB-8", "a glass called NTB-7", False, id="other-identifier"),
        pytest.param("25 degrees", "25 degrees Celsius", True, id="degrees"),
    ],
)
def test_matcher(claim: str, source: str, held: bool) -> None:
    assert (unsupported(figures_in(claim), figures_in(source)) == []) is held


def test_supports_needs_the_same_value() -> None:
    [claimed], [found] = figures_in("100 m"), figures_in("101 m")
    assert not supports(claimed, found)


def test_a_long_text_s_lazy_lookup_finds_every_figure_the_full_parse_finds() -> None:
    """``EvidenceText`` looks figures up by their written forms instead of parsing a whole page; it must agree
    with parsing the whole page."""
    from deep_research_agent.evidence.text import EvidenceText
    from testkit.web import ARTICLES, numbered_article

    texts = ["\n\n".join(article.paragraphs) for article in ARTICLES.values()]
    texts.append("\n\n".join(numbered_article(4, kb=8).paragraphs))
    texts.append(
        "Sales hit $2.4 million in 2023. Between 280 and 247 BC it was built. It is 3 000 m long; 1,200 million "
        "users joined by mid-2024, on 14 March 2024 (2024-03-14). NTB-7 conducts 3.1 mS/cm, up 12 percent."
    )
    texts.append("mean=6.00\ncount=3.0 rows, 7.250 kg, total=10.00.")  # script output writes whole numbers with zeros
    for text in texts:
        prepared = EvidenceText({"id": "e", "url": "u", "title": "", "kind": "page", "text": text})
        missed = [f.text for f in figures_in(text) if not prepared.holds(f)]
        assert missed == [], missed


# --- labels, versions and identifiers ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Finding 1: the tower", id="finding"),
        pytest.param("as Step 2 shows", id="step"),
        pytest.param("see Table 3 and Figure 4", id="table-and-figure"),
        pytest.param("in Section 5 and section 6.2", id="section"),
        pytest.param("Phase II and Phase 3 trials", id="phase"),
        pytest.param("No. 6 and no. 7", id="number-abbreviation"),
        pytest.param("item #7", id="hash"),
        pytest.param("(1) the base, (2) the tower, 3) the lantern", id="inline-list-numbers"),
        pytest.param("Type 2 diabetes, Category 5 storms", id="types"),
        pytest.param("see p. 12 and pp. 14", id="pages"),
    ],
)
def test_labels_are_not_figures(text: str) -> None:
    assert figures_in(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("level 3 metres", [("3", "m", COUNT)], id="a-unit-makes-a-measure"),
        pytest.param("Table 3 lists 12% growth", [("12", "%", COUNT)], id="the-measure-after-a-label"),
        pytest.param("the figure 4 million", [("4000000", "", COUNT)], id="a-scale-makes-a-measure"),
        pytest.param("Python 3.12 was released", [("3.12", "", IDENTIFIER)], id="version-after-a-name"),
        pytest.param("version 2.4 adds", [("2.4", "", IDENTIFIER)], id="version-word"),
        pytest.param("it fixes 3.12.1", [("3.12.1", "", IDENTIFIER)], id="two-dots"),
        pytest.param("ISO 8601 dates", [("iso 8601", "", IDENTIFIER)], id="standard"),
        pytest.param("RFC 9110 says", [("rfc 9110", "", IDENTIFIER)], id="rfc"),
        pytest.param("COVID-19 cases", [("covid-19", "", IDENTIFIER)], id="hyphenated-identifier"),
        pytest.param("It rose 2.5 metres", [("2.5", "m", COUNT)], id="a-decimal-measure-is-no-version"),
        pytest.param("Alexandria's 2.5% growth", [("2.5", "%", COUNT)], id="a-percentage-after-a-name"),
    ],
)
def test_measures_versions_and_identifiers(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert [(f.value, f.unit, f.kind) for f in figures_in(text)] == expected


@pytest.mark.parametrize(
    ("claim", "source", "held"),
    [
        pytest.param("Python 3.12", "Python 3.12 is out", True, id="version-as-written"),
        pytest.param("Python 3.1", "Python 3.10 is out", False, id="version-is-no-decimal"),
        pytest.param("Python 3.12", "Python 3.120", False, id="version-is-a-token"),
        pytest.param("ISO 8601", "dates follow ISO 8601", True, id="standard"),
        pytest.param("ISO 8601", "dates follow ISO 8602", False, id="other-standard"),
    ],
)
def test_versions_and_identifiers_are_found_as_tokens(claim: str, source: str, held: bool) -> None:
    from deep_research_agent.evidence.text import EvidenceText

    prepared = EvidenceText({"id": "e", "url": "u", "title": "", "kind": "page", "text": source})
    assert all(prepared.holds(f) for f in figures_in(claim)) is held
