"""A question is checked before anything runs: empty or blank never starts a run, nor does one over the limit;
``./run.sh ask`` takes it as an argument, from stdin (``-``) or from a file."""

from __future__ import annotations

import io
from argparse import Namespace
from pathlib import Path

import pytest

from deep_research_agent.cli.__main__ import build_parser
from deep_research_agent.cli.ask import read_question
from deep_research_agent.domain.questions import question_problem


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n", "\u00a0\u2003"])
def test_an_empty_or_blank_question_is_refused(text):
    assert question_problem(text, max_chars=100).startswith("The question is empty, so no research was started")


def test_a_question_over_the_limit_is_refused_with_its_length_the_limit_and_where_long_material_goes():
    problem = question_problem("x" * 1_001, max_chars=1_000)

    assert problem.startswith("The question is 1,001 characters long and this server takes at most 1,000")
    assert "DRA_MAX_QUESTION_CHARS" in problem and "./run.sh corpus add" in problem


@pytest.mark.parametrize(("text", "max_chars"), [("x" * 1_000, 1_000), ("Kelp?", 0), ("x" * 10_000_000, 0)])
def test_a_question_within_the_limit_or_without_one_may_run(text, max_chars):
    assert question_problem(text, max_chars=max_chars) == ""


def ask_args(*argv: str) -> Namespace:
    return build_parser().parse_args(["ask", *argv])


def test_ask_takes_the_question_as_typed_from_its_argument():
    assert read_question(ask_args("  How dense are sodium-glass batteries?"), io.StringIO()) == (
        "  How dense are sodium-glass batteries?"
    )


def test_ask_dash_reads_the_whole_question_from_stdin():
    question = "Compare these:\n" + "line of pasted context\n" * 20_000

    assert read_question(ask_args("-"), io.StringIO(question + "\n")) == question.rstrip("\n")


def test_ask_question_file_reads_a_question_longer_than_an_argument_may_be(tmp_path: Path):
    question = "Which of these claims hold? " + "x" * 200_000  # past Linux's 128 KiB for one argument
    path = tmp_path / "question.txt"
    path.write_text(question + "\n", encoding="utf-8")

    assert read_question(ask_args("--question-file", str(path)), io.StringIO()) == question


@pytest.mark.parametrize(
    ("argv", "stdin", "said"),
    [
        (("",), "", "The question is empty"),
        (("   ",), "", "The question is empty"),
        (("-",), " \n\n", "The question is empty"),
        ((), "", 'No question: give it as an argument, as "-" to read it from stdin, or with --question-file FILE.'),
        (("Kelp?", "--question-file", "q.txt"), "", "as an argument or with --question-file, not both"),
        (("-", "--review-plan"), "Kelp?", "--review-plan reads its answers from stdin"),
        (("--question-file", "/nonexistent/q.txt"), "", "Cannot read --question-file /nonexistent/q.txt"),
    ],
)
def test_ask_without_a_question_to_research_says_what_to_give(argv, stdin, said):
    with pytest.raises(ValueError) as refused:
        read_question(ask_args(*argv), io.StringIO(stdin))

    assert said in str(refused.value)


def test_ask_refuses_a_question_file_that_is_not_text(tmp_path: Path):
    path = tmp_path / "question.bin"
    path.write_bytes(b"\xff\xfe\x00binary")

    with pytest.raises(ValueError, match="is not UTF-8 text"):
        read_question(ask_args("--question-file", str(path)), io.StringIO())
