"""The README, the pages under docs/ and .env.example stay true to the code and to the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from deep_research_agent.domain.stops import STOPS
from deep_research_agent.protocol import events
from deep_research_agent.report.claims import ClaimVerdict
from deep_research_agent.settings import MODEL_TIERS, SLOTS, env_example, markdown_table

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "deep_research_agent"
DOCS = ROOT / "docs"
README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")
PAGES = [README_PATH, *sorted(DOCS.glob("*.md"))]


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body of the Markdown section ``heading`` (a full heading line), up to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    following = re.search(rf"^#{{1,{level}}} ", text[start:], flags=re.M)
    return text[start : start + following.start()] if following else text[start:]


def test_the_configuration_table_is_generated_from_the_settings():
    table = (
        page("configuration.md").split("<!-- config-table:start -->\n", 1)[1].split("<!-- config-table:end -->", 1)[0]
    )
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


def test_the_stops_table_names_each_stop_as_its_cause_does():
    table = page("events.md").split("<!-- stops-table:start -->\n", 1)[1].split("<!-- stops-table:end -->", 1)[0]
    rows = [[cell.strip().strip("`") for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]

    def named(value: object, absent: str) -> str:
        return str(value) if value is not None else absent

    assert [row[1:] for row in rows] == [
        [
            named(stop.halt_state, "none"),
            named(stop.halted_by, "none"),
            f"{stop.end_state}` / `{stop.end_reason}",
            named(stop.outcome, "by the report"),
        ]
        for stop in STOPS.values()
    ], "docs/events.md's stops table disagrees with domain/stops.py's STOPS"


def test_every_claim_verdict_is_explained():
    text = page("architecture.md")
    for verdict in ClaimVerdict:
        assert f"| `{verdict.value}` |" in text, f"docs/architecture.md's verdict table lacks {verdict.value!r}"


def test_the_readme_is_at_most_20_kb():
    size = len(README.encode())
    assert size <= 20_000, f"README.md is {size:,} bytes: move reference material into docs/ (at most 20,000)"


def test_the_readme_first_screen_gives_the_two_commands():
    first_screen = "\n".join(README.splitlines()[:25])
    assert "./run.sh " in first_screen and "./run.sh test" in first_screen


def test_the_readme_shows_the_screenshot_and_one_flowchart():
    assert "](docs/webui.png)" in README
    assert len(re.findall(r"^```mermaid\nflowchart ", README, flags=re.M)) == 1


def test_the_readme_links_every_page_under_docs():
    for doc in sorted(DOCS.glob("*.md")):
        assert f"](docs/{doc.name}" in README, f"README links nowhere to docs/{doc.name}"


def test_the_tier_table_matches_model_tiers():
    lines = page("configuration.md").splitlines()
    for name, tier in MODEL_TIERS.items():
        row = next(line for line in lines if line.startswith(f"| `{name}`"))
        for slot in SLOTS:
            assert tier.slot(slot).slug in row, f"docs/configuration.md's tier {name} does not list its {slot} model"


# --- links and paths resolve --------------------------------------------------------------------

FENCE = re.compile(r"^```.*?^```[^\n]*$", flags=re.M | re.S)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
PATH = re.compile(r"[\w.\-]+(?:/[\w.\-]+)*/?")
FILE_SUFFIXES = {".py", ".sh", ".md", ".json", ".toml", ".lock", ".mjs", ".ts", ".png", ".txt"}
# The first segments a repository path may start with: the repository's own entries and, for paths
# written relative to the package (`handover/gate.py`), the package's.
TOP_LEVEL = {entry.name for entry in ROOT.iterdir()} | {entry.name for entry in PACKAGE.iterdir()}
# Paths the docs name that are made by a command, not committed, and say so where they are named.
GENERATED = ("ui/dist", "deploy/.venv", "tests/output", ".venv", ".env", "data")


def prose(text: str) -> str:
    """The text outside fenced code blocks, where links and inline code are Markdown."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation but hyphens and underscores dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading anchors by its text
    text = text.replace("`", "").replace("*", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", prose(path.read_text(encoding="utf-8")), flags=re.M):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def repository_paths(text: str) -> set[str]:
    """Every repository path named in inline code: a path whose first segment is a top-level entry of the
    repository or of the package (``bench/claims.py``, ``handover/gate.py``), and a bare file name
    (``run.sh``, ``routes.py``) that is the whole span or written ``./name``. In a span of several words (a
    command, ``KEY=value``) each word counts on its own. Placeholders (``<name>``, ``*``), URLs and
    absolute paths are not repository paths."""
    named: set[str] = set()
    for span in re.findall(r"`([^`\n]+)`", prose(text)):
        words = re.split(r"[\s=]+", span.strip())
        for raw in words:
            explicit = raw.startswith("./")
            word = raw.strip("\"'(),;").removeprefix("./")
            if not PATH.fullmatch(word):
                continue
            if "/" in word:
                if word.split("/", 1)[0] in TOP_LEVEL:
                    named.add(word)
            elif (len(words) == 1 or explicit) and not word.startswith(".") and Path(word).suffix in FILE_SUFFIXES:
                named.add(word)
    return named


def exists(path: str) -> bool:
    return (ROOT / path).exists() or (PACKAGE / path).exists()


def generated(path: str) -> bool:
    return any(path == made or path.startswith(f"{made}/") for made in GENERATED)


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(doc):
    own = anchors(doc)
    broken = []
    for target in LINK.findall(prose(doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.\-]*:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        resolved = (doc.parent / file).resolve() if file else doc
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in (own if resolved == doc else anchors(resolved)):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_named_exists(doc):
    missing = sorted(
        path for path in repository_paths(doc.read_text(encoding="utf-8")) if not generated(path) and not exists(path)
    )
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_layout_names_every_package():
    layout = page("architecture.md").split("```\nsrc/deep_research_agent/\n", 1)[1].split("```", 1)[0]
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert packages
    missing = [name for name in packages if f"\n  {name}/ " not in layout]
    assert not missing, f"docs/architecture.md's Layout lacks the packages {missing}"


def test_the_path_check_sees_the_paths_the_docs_name():
    named = repository_paths(
        "`./run.sh ask`, `run-stack.sh`, `handover/gate.py`, `bench/claims.py`, `done/report_delivered`,"
        " `deploy/.venv/bin/python -m uvicorn`, `skills/<name>/SKILL.md`, `search.html`, `.md`, `-o events.d.ts`"
    )
    assert named == {"run.sh", "run-stack.sh", "handover/gate.py", "bench/claims.py", "deploy/.venv/bin/python"}
    assert slug("Checked claims: what `[unverified]` means") == "checked-claims-what-unverified-means"
    assert slug("Sizing `DRA_JOBS`") == "sizing-dra_jobs"
    assert slug("Concept → modules") == "concept--modules"


def test_every_env_var_the_code_reads_is_in_env_example():
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    declared = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", example, flags=re.M))
    read_in_code = set()
    for path in (ROOT / "src").rglob("*.py"):
        read_in_code |= set(
            re.findall(r"""environ(?:\.get)?\(\s*["']((?:DRA|OPENAI|TAVILY|LLM)_[A-Z0-9_]+)""", path.read_text())
        )
    assert read_in_code <= declared, f"undocumented: {sorted(read_in_code - declared)}"


@pytest.mark.parametrize("document, generated", [("markdown", markdown_table), ("env-example", env_example)])
def test_python_m_settings_prints_each_generated_document(document, generated):
    result = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.settings", document], capture_output=True, text=True, check=True
    )

    assert result.stdout == generated()


def test_python_m_settings_refuses_an_unknown_document_and_names_the_known_ones():
    result = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.settings", "html"], capture_output=True, text=True
    )

    assert result.returncode == 2
    assert "usage: python -m deep_research_agent.settings {env-example|markdown}" in result.stderr
