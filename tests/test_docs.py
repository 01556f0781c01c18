"""The README, the pages under docs/ and .env.example stay true to the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from deep_research_agent.protocol import events
from deep_research_agent.report.claims import ClaimVerdict
from deep_research_agent.settings import MODEL_TIERS, SLOTS, env_example, markdown_table

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body of the Markdown section ``heading`` (a full heading line), up to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    following = re.search(rf"^#{{1,{level}}} ", text[start:], flags=re.M)
    return text[start : start + following.start()] if following else text[start:]


def test_the_configuration_table_is_generated_from_the_settings():
    table = page("configuration.md").split("<!-- config-table:start -->\n", 1)[1].split("<!-- config-table:end -->", 1)[0]
    assert table == markdown_table(), (
        "docs/configuration.md's config table is stale: paste the output of "
        "`uv run python -m deep_research_agent.settings markdown`"
    )


def test_the_event_table_names_every_event_type():
    table = section(page("events.md"), "## Event types")
    assert events.EVENT_TYPES
    for event_type in events.EVENT_TYPES:
        assert f"| `{event_type}` |" in table, f"docs/events.md's event table lacks {event_type}"


def test_every_status_state_is_explained():
    text = page("events.md")
    assert list(events.StatusState)
    for state in events.StatusState:
        assert f"`{state.value}`" in text, f"docs/events.md never explains status state {state.value!r}"


def test_every_end_reason_is_in_the_end_state_table():
    table = section(page("events.md"), "## End states")
    for reason in events.EndReason:
        assert f"`{reason.value}`" in table, f"docs/events.md's end-state table lacks {reason.value!r}"


def test_every_outcome_is_in_the_outcome_table():
    table = section(page("events.md"), "## Outcome: how good the answer is")
    for outcome in events.Outcome:
        assert f"| `{outcome.value}` |" in table, f"docs/events.md's outcome table lacks {outcome.value!r}"


def test_every_claim_verdict_is_explained():
    text = page("architecture.md")
    for verdict in ClaimVerdict:
        assert f"| `{verdict.value}` |" in text, f"docs/architecture.md's verdict table lacks {verdict.value!r}"


def test_the_readme_first_screen_gives_the_two_commands():
    first_screen = "\n".join(README.splitlines()[:25])
    assert "./run.sh " in first_screen and "./run.sh test" in first_screen


def test_the_tier_table_matches_model_tiers():
    lines = page("configuration.md").splitlines()
    for name, tier in MODEL_TIERS.items():
        row = next(line for line in lines if line.startswith(f"| `{name}`"))
        for slot in SLOTS:
            assert tier.slot(slot).slug in row, f"docs/configuration.md's tier {name} does not list its {slot} model"


def test_every_env_var_the_code_reads_is_in_env_example():
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    declared = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", example, flags=re.M))
    read_in_code = set()
    for path in (ROOT / "src").rglob("*.py"):
        read_in_code |= set(re.findall(r"""environ(?:\.get)?\(\s*["']((?:DRA|OPENAI|TAVILY|LLM)_[A-Z0-9_]+)""", path.read_text()))
    assert read_in_code <= declared, f"undocumented: {sorted(read_in_code - declared)}"


@pytest.mark.parametrize("document, generated", [("markdown", markdown_table), ("env-example", env_example)])
def test_python_m_settings_prints_each_generated_document(document, generated):
    result = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.settings", document], capture_output=True, text=True, check=True
    )

    assert result.stdout == generated()


def test_python_m_settings_refuses_an_unknown_document_and_names_the_known_ones():
    result = subprocess.run([sys.executable, "-m", "deep_research_agent.settings", "html"], capture_output=True, text=True)

    assert result.returncode == 2
    assert "usage: python -m deep_research_agent.settings {env-example|markdown}" in result.stderr
