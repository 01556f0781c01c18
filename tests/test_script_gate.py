"""Specification of the coding sub-agent's answer contract (``handover/script.py``): STATUS / SCRIPT / OUTPUT /
NOTES, a script that exists, an OUTPUT that an execute really printed."""

from __future__ import annotations

import pytest

from deep_research_agent.domain.names import ScriptStatus
from deep_research_agent.handover.script import bounce_message, check_answer, parse_answer

ANSWER = "STATUS: ok\nSCRIPT: /workspace/mean.py\nOUTPUT:\nmean=6.00\nrows=3\nNOTES: Mean of the brief's prices."
RAN = ["mean=6.00\nrows=3\n\n[Command succeeded with exit code 0]"]


def test_a_full_answer_passes_and_is_read_section_by_section():
    verdict = check_answer(ANSWER, execute_outputs=RAN, script_exists=True)

    assert verdict.ok, verdict.problems
    assert (verdict.status, verdict.script, verdict.output) == (
        ScriptStatus.OK,
        "/workspace/mean.py",
        "mean=6.00\nrows=3",
    )
    assert verdict.notes == "Mean of the brief's prices."


def test_sections_may_be_bold_and_status_words_have_synonyms():
    sections = parse_answer(
        "**STATUS**: Succeeded.\n**SCRIPT**: `/workspace/x.py`\n**OUTPUT**:\n```\n42\n```\nNOTES: none"
    )

    assert sections["SCRIPT"] == "/workspace/x.py" and sections["OUTPUT"] == "42"
    assert (
        check_answer("STATUS: error\nSCRIPT: /w/x.py\nOUTPUT:\n42", execute_outputs=["42"], script_exists=True).status
        == ScriptStatus.FAILED
    )


@pytest.mark.parametrize(
    ("answer", "outputs", "exists", "problem"),
    [
        pytest.param("The mean is 6.", RAN, None, "The STATUS section is missing.", id="prose"),
        pytest.param(
            ANSWER.replace("STATUS: ok", "STATUS: maybe"), RAN, True, "STATUS must be ok or failed", id="status"
        ),
        pytest.param(
            ANSWER.replace("/workspace/mean.py", "mean.py"),
            RAN,
            None,
            "SCRIPT must be the absolute path",
            id="relative",
        ),
        pytest.param(ANSWER, RAN, False, "There is no file /workspace/mean.py in the sandbox", id="no-file"),
        pytest.param(ANSWER, [], True, "You never ran the script", id="never-ran"),
        pytest.param(
            ANSWER.replace("mean=6.00", "The mean came out at six."),
            RAN,
            True,
            "OUTPUT must be the script's real output",
            id="narrated",
        ),
    ],
)
def test_an_answer_that_breaks_the_contract_is_told_why(answer, outputs, exists, problem):
    verdict = check_answer(answer, execute_outputs=outputs, script_exists=exists)

    assert not verdict.ok and any(problem in p for p in verdict.problems), verdict.problems


def test_the_bounce_lists_the_problems_and_restates_the_contract():
    text = bounce_message(["The SCRIPT section is missing."])

    assert "- The SCRIPT section is missing." in text and "STATUS: ok | failed" in text and "one chance" in text
