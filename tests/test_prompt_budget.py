"""The prompt budget's check and its published table (bench/happy_path_chars.py, docs/prompt-budget.md)."""

from __future__ import annotations

from pathlib import Path

from bench.happy_path_chars import (
    BUDGET_CALLS,
    BUDGET_CHARS,
    RESEARCHER,
    RESEARCHER_TOOL_CHARS,
    Call,
    capability_table,
    over_budget,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "prompt-budget.md"
START, END = "<!-- capability-table:start -->\n", "<!-- capability-table:end -->"


def test_a_run_within_the_budget_passes_and_each_breach_is_named():
    within = [Call("orchestrator", BUDGET_CHARS // 2, 100), Call(RESEARCHER, BUDGET_CHARS // 2, RESEARCHER_TOOL_CHARS)]
    assert over_budget(within) == []

    too_big = [Call("orchestrator", BUDGET_CHARS + 1, 0)]
    too_many = [Call("orchestrator", 1, 0)] * (BUDGET_CALLS + 1)
    heavy_tools = [Call(RESEARCHER, 100, RESEARCHER_TOOL_CHARS + 1)]
    assert [len(over_budget(calls)) for calls in (too_big, too_many, heavy_tools)] == [1, 1, 1]
    assert "over the budget of 26,000" in over_budget(too_big)[0]
    assert "tool schemas" in over_budget(heavy_tools)[0]


def test_the_published_table_of_what_each_capability_adds_is_current():
    published = DOC.read_text(encoding="utf-8").split(START, 1)[1].split(END, 1)[0]
    assert published == capability_table(), (
        "docs/prompt-budget.md's capability table is stale: paste the output of "
        "`uv run python -c \"from bench.happy_path_chars import capability_table; print(capability_table(), end='')\"`"
    )
