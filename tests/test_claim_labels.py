"""The floor of the labelled claim benchmark (``bench/claim_labels.py``): how often the checks flag what the
cited text does not back, and how rarely what it does."""

from __future__ import annotations

import asyncio

import pytest

from bench.claim_labels import SUPPORTED, evaluate, load, scripted_judge


@pytest.fixture(scope="module")
def labelled():
    return load()


def test_the_benchmark_is_large_and_covers_every_error_kind(labelled) -> None:
    passages, cases = labelled
    labels = {case.label for case in cases}
    assert len(cases) >= 150 and len(passages) >= 10
    assert labels >= {
        SUPPORTED,
        "wrong_figure",
        "wrong_year",
        "wrong_unit",
        "wrong_era",
        "wrong_quote",
        "wrong_name",
        "wrong_place",
        "wrong_direction",
        "wrong_cause",
        "invented_detail",
    }
    assert len({case.id for case in cases}) == len(cases)


def test_the_deterministic_checks_flag_most_unsupported_sentences_and_almost_no_supported_one(labelled) -> None:
    passages, cases = labelled
    result = asyncio.run(evaluate(passages, cases, None))
    assert result.recall >= 0.78 and result.false_flag_rate <= 0.02
    for kind in ("wrong_figure", "wrong_year", "wrong_unit", "wrong_era", "wrong_quote", "wrong_name", "wrong_place"):
        assert result.flagged[kind] == result.total[kind], kind


def test_the_held_out_set_meets_the_goal_with_no_model(labelled) -> None:
    passages, cases = labelled
    held_out = [case for case in cases if case.split == "held_out"]
    result = asyncio.run(evaluate(passages, held_out, None))
    assert (result.total[SUPPORTED], result.unsupported) == (9, 11)
    assert result.caught >= 9 and result.flagged[SUPPORTED] <= 1


def test_with_the_judge_every_kind_reaches_it_or_is_flagged_before(labelled) -> None:
    passages, cases = labelled
    result = asyncio.run(evaluate(passages, cases, scripted_judge))
    assert result.recall >= 0.95 and result.false_flag_rate <= 0.05 and result.failures == 0
