"""The checks of a claim's meaning with no model: the names it states and the direction of its comparisons."""

from __future__ import annotations

import pytest

from deep_research_agent.evidence.figures import figures_in
from deep_research_agent.report.direction import Direction, bound_directions, disagreement, sentence_directions
from deep_research_agent.report.entities import NameIndex, known_names, missing_names, names_in


def names(text: str, known: frozenset[str] = frozenset()) -> list[str]:
    return [name.text for name in names_in(text, known=known)]


# --- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("It was designed by Sostratus of Cnidus [1].", ["Sostratus of Cnidus"], id="connector"),
        pytest.param("It was built for Ptolemy II and Cleopatra.", ["Ptolemy II", "Cleopatra"], id="and-splits"),
        pytest.param(
            "The Lighthouse of Alexandria stood on Pharos.", ["Lighthouse of Alexandria", "Pharos"], id="the-starts"
        ),
        pytest.param("Historians say it stood tall.", [], id="sentence-start-plural"),
        pytest.param("Ancient accounts describe it.", [], id="sentence-start-common-word"),
        pytest.param("Recently, it was mapped.", [], id="sentence-start-adverb"),
        pytest.param("Debian ships apt.", ["Debian"], id="sentence-start-name"),
        pytest.param("NASA sent a rover; the iPhone took a photo.", ["NASA", "iPhone"], id="acronym-and-inner-capital"),
        pytest.param("It fell in March 1303 at 25 degrees Celsius, in 280 BC.", [], id="months-units-eras"),
        pytest.param("**Finding 1:** it rose. See Table 3 and Phase II.", [], id="labels"),
        pytest.param('Pliny called it "the Tower of Babel" [1].', ["Pliny"], id="quotes-are-the-quote-check-s"),
        pytest.param("It is at https://Example.org/Page and `Code`.", [], id="urls-and-code"),
        pytest.param("I think so: The tower fell.", [], id="pronoun-and-colon"),
        pytest.param("It was, as Strabo wrote, tall.", ["Strabo"], id="mid-sentence"),
    ],
)
def test_names_in_a_claim(text: str, expected: list[str]) -> None:
    assert names(text) == expected


def test_a_sentence_s_first_word_is_a_name_when_the_report_capitalises_it_elsewhere() -> None:
    known = known_names(["It was designed by Dinocrates.", "Dinocrates designed it."])
    assert "dinocrates" in known
    assert names("Dinocrates designed it.") == []  # shaped like a plural: not a name on its own
    assert names("Dinocrates designed it.", known) == ["Dinocrates"]


@pytest.mark.parametrize(
    ("claim", "held"),
    [
        pytest.param("Ptolemy's lighthouse", True, id="possessive"),
        pytest.param("the Ptolemies built it", True, id="plural"),
        pytest.param("on Pháros", True, id="diacritics"),
        pytest.param("an Egyptian tower", True, id="demonym"),
        pytest.param("in the US", True, id="alias"),
        pytest.param("by the Greeks", True, id="alias-plural"),
        pytest.param("a Roman tower", True, id="roman"),
        pytest.param("on Rhodes", False, id="absent"),
        pytest.param("for Ptolemy III", False, id="another-numeral"),
    ],
)
def test_a_name_is_held_by_a_text_that_writes_it_another_way(claim: str, held: bool) -> None:
    index = NameIndex(
        "The Ptolemy II lighthouse stood on Pharos in Egypt; the United States and Greece have copies. "
        "Rome later ruled Alexandria."
    )
    assert (missing_names(names_in(claim), [index]) == []) is held


# --- direction -----------------------------------------------------------------------------------


def bound(text: str) -> list[Direction]:
    return [d for figure in figures_in(text) for d in bound_directions(text, figure.start, figure.end)]


def directions(text: str) -> list[tuple[str, int, str]]:
    return [tuple(d) for d in bound(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("It stood over 100 metres tall.", [("bound", 1, "over")], id="over"),
        pytest.param("It stood under 100 metres tall.", [("bound", -1, "under")], id="under"),
        pytest.param(
            "more than 300 people and fewer than 20 ships",
            [("bound", 1, "more than"), ("bound", -1, "fewer than")],
            id="phrases",
        ),
        pytest.param("It is 100 metres or more.", [("bound", 1, "or more")], id="after"),
        pytest.param("not more than 5 days", [("bound", -1, "not more than")], id="negation-flips"),
        pytest.param("built before 280 BC", [("time", -1, "before")], id="before"),
        pytest.param("rebuilt after 1303", [("time", 1, "after")], id="after-a-year"),
        pytest.param("Exports rose by 5% in 2020.", [("change", 1, "rose")], id="rose"),
        pytest.param("a 5% decline", [("change", -1, "decline")], id="noun-after"),
        pytest.param("Over the years, it stood 100 metres tall.", [], id="far-from-the-figure"),
        pytest.param("It stood over; 100 metres.", [], id="not-across-a-clause"),
    ],
)
def test_directions_bound_to_a_figure(text: str, expected: list[tuple[str, int, str]]) -> None:
    assert directions(text) == expected


def test_sentence_directions_leave_out_words_bound_to_figures_and_weak_words() -> None:
    assert [tuple(d) for d in sentence_directions("It was the tallest tower, and exports fell.")] == [
        ("height", 1, "tallest"),
        ("change", -1, "fell"),
    ]
    assert sentence_directions("It rose 5% and most people went up.") == []


@pytest.mark.parametrize(
    ("claimed", "found", "reversed_"),
    [
        pytest.param("under 100", "over 100", "under", id="opposite"),
        pytest.param("over 100", "more than 100", None, id="same-sign"),
        pytest.param("over 100", "100", None, id="source-silent"),
        pytest.param("under 100", "rose by 100", None, id="other-axis"),
        pytest.param("under 100", "over 100 and under 100", None, id="source-says-both"),
    ],
)
def test_disagreement(claimed: str, found: str, reversed_: str | None) -> None:
    result = disagreement(bound(claimed), bound(found))
    assert (result.words if result else None) == reversed_
