"""Salvage helpers: what the orchestrator's last text is, what it is told, and the incomplete-report banner."""

from __future__ import annotations

import json
import typing

import pytest

from deep_research_agent.delivery.final_text import (
    REPORT_MIN_CHARS,
    FinalTextKind,
    classify_final_text,
    nudge_for,
)
from deep_research_agent.report.salvage import incomplete_banner

PARAGRAPH = "Solid-state cells now lead on energy density, with pilot lines reporting steady gains in yield. " * 3
FINDINGS = json.dumps(
    {"summary": "s", "findings": [{"finding": "f", "evidence": "e", "source": "https://a.example"}], "gaps": []}
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # report_like
        (f"# Battery outlook\n\n{PARAGRAPH}\n\n## Sources\n[1] A — https://a.example", "report_like"),
        (f"# Battery outlook\n\n{PARAGRAPH}", "report_like"),
        (f"Intro.\n\n## Density\n\n{PARAGRAPH}\n\n## Cost\n\n{PARAGRAPH}", "report_like"),
        (f"{PARAGRAPH}\n\n{PARAGRAPH}\n\n{PARAGRAPH}", "report_like"),
        (f"Let me summarise.\n\n{PARAGRAPH}\n\n{PARAGRAPH}\n\n{PARAGRAPH}", "report_like"),
        # json_dump
        (FINDINGS, "json_dump"),
        (f"```json\n{FINDINGS}\n```", "json_dump"),
        (f"Here are the findings:\n{FINDINGS}", "json_dump"),
        ('[{"date": "2024-01-01", "close": 42.1}, {"date": "2024-01-02", "close": 43.0}]', "json_dump"),
        ('{"summary": "cut off mid-way", "findings": [{"finding": "x", "so', "json_dump"),
        ('```\n{"a": 1, "b": [1, 2, 3]}\n```', "json_dump"),
        # intent_stub
        ("Now I will write the final report.", "intent_stub"),
        ("Let me search for more recent pricing data.", "intent_stub"),
        ("Next, I'll compile the findings into the report.", "intent_stub"),
        ("I'll now delegate the remaining units.", "intent_stub"),
        ("I have the data. Now, let me draft the report.", "intent_stub"),
        ("Okay, I am going to call the research sub-agents again.", "intent_stub"),
        ("Great. I need to verify two more figures before writing.", "intent_stub"),
        ("Proceeding to write the report.", "intent_stub"),
        ("I’ll now write the report.", "intent_stub"),
        ("Let’s gather the last figures.", "intent_stub"),
        # other
        ("", "other"),
        ("   \n ", "other"),
        ("Done.", "other"),
        ("The research is complete.", "other"),
        ("Here is a note: prices rose {sharply} last year.", "other"),
        ("# Title only", "other"),
        ("Let me know if you need anything else.", "other"),
        ("Let me know if you need anything else." + " Filler sentence here." * 60, "other"),
    ],
)
def test_classify_final_text(text: str, kind: FinalTextKind) -> None:
    assert classify_final_text(text) == kind


def test_short_untitled_prose_is_not_a_report() -> None:
    text = "A short answer with two paragraphs.\n\nAnd a second one."
    assert len(text) < REPORT_MIN_CHARS
    assert classify_final_text(text) == "other"


@pytest.mark.parametrize(
    ("kind", "fragments"),
    [
        ("report_like", ["submit_report", "report_markdown", "not delivered"]),
        ("json_dump", ["raw JSON", "# title", "[n]", "## Sources", "submit_report"]),
        ("intent_stub", ["did not take it", "tool call", "task", "submit_report"]),
        ("other", ["submit_report", "next tool call"]),
    ],
)
def test_nudge_for(kind: FinalTextKind, fragments: list[str]) -> None:
    nudge = nudge_for(kind)
    for fragment in fragments:
        assert fragment in nudge


def test_every_kind_has_a_distinct_nudge() -> None:
    kinds = typing.get_args(FinalTextKind)
    assert len({nudge_for(kind) for kind in kinds}) == len(kinds)


@pytest.mark.parametrize(
    ("missing", "reason", "expected"),
    [
        (
            ["EU pricing for 2025", "Warranty terms"],
            "the time budget ran out",
            "> **Incomplete report.** This report was assembled from partial results because the time budget ran out.\n"
            "> Missing:\n> - EU pricing for 2025\n> - Warranty terms\n> Treat its conclusions as provisional.\n\n",
        ),
        (
            [],
            "the model stopped without delivering a report.",
            "> **Incomplete report.** This report was assembled from partial results because the model stopped without "
            "delivering a report.\n> Treat its conclusions as provisional.\n\n",
        ),
        (
            ["multi\nline   item", "  "],
            "",
            "> **Incomplete report.** This report was assembled from partial results because the run ended early.\n"
            "> Missing:\n> - multi line item\n> Treat its conclusions as provisional.\n\n",
        ),
    ],
)
def test_incomplete_banner(missing: list[str], reason: str, expected: str) -> None:
    assert incomplete_banner(missing, reason) == expected
