"""Report hygiene: the scrub (what a reader must never see) and the citation lint (numbering contract)."""

from __future__ import annotations

import pytest

from deep_research_agent.report.hygiene import MIN_DUMP_ROWS, lint_citations, scrub_report
from deep_research_agent.report.series import parse_row

SOURCES = "\n\n## Sources\n[1] Alpha — https://a.example/1\n[2] Beta — https://b.example/2\n"


def daily_rows(count: int, template: str = "- 2024-01-{day:02d}: {value} USD") -> str:
    return "\n".join(template.format(day=day, value=40 + day % 5) for day in range(1, count + 1))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("2024-01-01: 42.1", ("2024-01-01", 42.1, "")),
        ("| 2024-01-02 | 1,850 | 3 |", ("2024-01-02", 1850.0, "")),
        ("- Jan 2024 — 42 USD [3]", ("Jan 2024", 42.0, "USD")),
        ("2024-01-01,42.1,43", ("2024-01-01", 42.1, "")),
        ("Q1 2024: 12.5%", ("Q1 2024", 12.5, "%")),
        ("2024-03 412 Wh/kg", ("2024-03", 412.0, "Wh/kg")),
        ("12/03/2024 -5.2", ("12/03/2024", -5.2, "")),
        ("2024-01-05T10:00Z = 7", ("2024-01-05T10:00Z", 7.0, "")),
        ("March 5, 2024: $1,200", ("March 5, 2024", 1200.0, "")),
        ("2024-01-01: 42 (+3%)", ("2024-01-01", 42.0, "")),
        ("2019: Founded with 10 employees", None),
        ("2024 was a good year, up 5%", None),
        ("Revenue: 42", None),
        ("2024-01-01: strong demand", None),
        ("", None),
    ],
)
def test_parse_row(line: str, expected: tuple[str, float, str] | None) -> None:
    point = parse_row(line)
    assert (None if point is None else (point.label, point.value, point.unit)) == expected


SCRUB_CASES = [
    # Process narration: an attribution is cut from a cited claim, an uncited narration sentence goes.
    ("The research sub-agent found that sales rose 5% [1].", "Sales rose 5% [1]."),
    ("The sub-agent reported that margins fell [2].", "Margins fell [2]."),
    ("According to the research-subagent, demand doubled [3].", "Demand doubled [3]."),
    ("Demand doubled, according to the research sub-agent [3].", "Demand doubled [3]."),
    ("Per the offloaded file, 40 rows were returned [1].", "40 rows were returned [1]."),
    ("According to the offloaded file at /workspace/x.csv, revenue was $5M [1].", "Revenue was $5M [1]."),
    ("I delegated this to three sub-agents. Prices fell [2].", "Prices fell [2]."),
    ("Prices fell [2]. Our sub-agents could not reach the regulator's site.", "Prices fell [2]."),
    ("> According to the sub-agent, costs fell [5].", "> Costs fell [5]."),
    ("- The extract-subagent found 3 tables [2].\n- Plain item [3].", "- 3 tables [2].\n- Plain item [3]."),
    ("## Findings from research-subagent\n\nText [1].", "## Findings\n\nText [1]."),
    ("Intro.\n\nOur sub-agents could not reach the site.\n\nOutro.", "Intro.\n\nOutro."),
    # Paths.
    ("Revenue grew 12% [2] (see `/large_tool_results/abc`).", "Revenue grew 12% [2]."),
    ("Revenue grew 12% [2] (data in /workspace/data/rev.csv).", "Revenue grew 12% [2]."),
    ("Costs fell [1]. The raw file is at /workspace/data/rev.csv.", "Costs fell [1]."),
    ("Results are in ./out/data.json for reference [4].", "Results are for reference [4]."),
    ("The export [1] was saved to C:\\exports\\q1.csv today.", "The export [1] today."),
    # Tool names and call syntax.
    ('Prices were pulled with web_search(query="lithium price 2024") [1].', "Prices were pulled [1]."),
    ("Prices are listed [1] via web_search.", "Prices are listed [1]."),
    ("Prices are listed [1]. Next I will call submit_report.", "Prices are listed [1]."),
    ("Call `submit_report` when done. The task (a hard one) was finished.", "The task (a hard one) was finished."),
    ("| Metric | Source |\n|---|---|\n| Price | web_fetch [1] |", "| Metric | Source |\n|---|---|\n| Price | [1] |"),
    (
        'Intro [1].\n\n<tool_call>{"name": "web_search", "arguments": {"query": "x"}}</tool_call>\n\nOutro [2].',
        "Intro [1].\n\nOutro [2].",
    ),
    (
        'Intro.\n<function_calls>\n<invoke name="web_fetch"><parameter name="url">x</parameter></invoke>\n</function_calls>\nOutro.',
        "Intro.\nOutro.",
    ),
    ('Before {"tool_calls": [{"function": {"name": "web_search", "arguments": "{}"}}]} after.', "Before after."),
    ('Before\n[{"name": "web_fetch", "args": {"url": "https://a.com"}}]\nafter.', "Before\nafter."),
    (
        'Text.\n\n```json\n{"name": "submit_report", "arguments": {"report_markdown": "x"}}\n```\n\nMore.',
        "Text.\n\nMore.",
    ),
    ('Text.\n\n```\nweb_search(query="x")\n```\n\nMore.', "Text.\n\nMore."),
    ("Text.\n\n```xml\n<tool_call>\n{}\n</tool_call>\n```\n\nMore.", "Text.\n\nMore."),
    # Data dumps become one statistic line; citations on the rows survive.
    (
        f"Prices:\n\n{daily_rows(10)}\n\nDone.",
        "Prices:\n\nSeries of 10 values, 2024-01-01 → 2024-01-10: min 40 USD (2024-01-05), max 44 USD (2024-01-04), "
        "mean 42 USD.\n\nDone.",
    ),
    (
        "Rates:\n" + daily_rows(MIN_DUMP_ROWS, "2024-01-{day:02d}: {value}% [2]"),
        "Rates:\nSeries of 8 values, 2024-01-01 → 2024-01-08: min 40% (2024-01-05), max 44% (2024-01-04), mean 42% [2].",
    ),
    (
        "| Date | Close |\n|---|---|\n" + daily_rows(9, "| 2024-01-{day:02d} | {value} |") + "\n\nEnd.",
        "Series of 9 values, 2024-01-01 → 2024-01-09: min 40 (2024-01-05), max 44 (2024-01-04), mean 42.22.\n\nEnd.",
    ),
    (
        "Closes:\n" + "\n".join(f"2024-{month:02d},{1000 + month * 10:,}" for month in range(1, 13)),
        "Closes:\nSeries of 12 values, 2024-01 → 2024-12: min 1,010 (2024-01), max 1,120 (2024-12), mean 1,065.",
    ),
    (
        "```csv\nname,price,qty\n" + "\n".join(f"item{i},{i * 1.5},{i}" for i in range(1, 11)) + "\n```\n",
        "Table of 10 rows × 3 columns (name, price, qty), item1 → item10: min 1.5 (item1), max 15 (item10), mean 8.25.\n",
    ),
    (
        "Counts:\n" + "\n".join(f"site{i};{i * 3}" for i in range(1, 10)),
        "Counts:\nTable of 9 rows × 2 columns, site1 → site9: min 3 (site1), max 27 (site9), mean 15.",
    ),
]


@pytest.mark.parametrize(("markdown", "expected"), SCRUB_CASES)
def test_scrub(markdown: str, expected: str) -> None:
    assert scrub_report(markdown) == expected


PROSE = [
    "Plain prose, with commas; and 3 : 1 ratios.   Two spaces.\n\n\n\nAnd e.g. things (like this) [1].\n",
    "Speeds in km/h and/or mph, 24/7 coverage, a 50/50 split [2].",
    "See https://example.com/workspace/report and https://x.org/tmp/a.csv for details [1].",
    "The task force will execute (and monitor) the plan; grep is a Unix tool.",
    "According to the report, growth was strong [3]. Per the CEO, margins held.",
    "Q1 2024 revenue rose 12% year on year [1], from $1,850 (2024-01-05) to $2,010 (2024-03-29).",
    "\n".join(f"- {2010 + i}: Founded office number {i} with {i * 10} staff." for i in range(10)),
    "| Model | Price | Context |\n|---|---|---|\n" + "\n".join(f"| model-{i} | {i}.5 | {i * 8}k |" for i in range(12)),
    "Too few rows to be a dump:\n" + daily_rows(MIN_DUMP_ROWS - 1),
    "```python\nrows = read_file('prices.csv')\nprint(len(rows))\n```\n",
    "```\n" + daily_rows(MIN_DUMP_ROWS - 2) + "\n```",
    "An empty fence stays:\n\n```\n```\n",
    "Trailing spaces stay.   \nTabs\tstay.\n",
    "Multi-agent systems split work between a planner and sub-agents [4].",
    "A list:\n\n1. First, apples, pears\n2. Second, plums, figs\n",
    "",
]


@pytest.mark.parametrize("markdown", PROSE)
def test_plain_prose_is_untouched(markdown: str) -> None:
    assert scrub_report(markdown) == markdown


@pytest.mark.parametrize("markdown", [case for case, _ in SCRUB_CASES] + PROSE)
def test_scrub_is_idempotent(markdown: str) -> None:
    once = scrub_report(markdown)
    assert scrub_report(once) == once


@pytest.mark.parametrize(
    "sources",
    [
        "## Sources\n[1] Prices export — /workspace/prices.csv\n[2] web_search — https://a.example\n",
        "## Sources\n" + daily_rows(10, "[{day}] 2024-01-{day:02d}: {value}"),
        "## References\n1. The research sub-agent's notes — https://b.example\n",
    ],
)
def test_sources_section_is_never_scrubbed(sources: str) -> None:
    body = "# Title\n\nThe research sub-agent found that prices rose [1].\n\n"
    scrubbed = scrub_report(body + sources)
    assert scrubbed == "# Title\n\nPrices rose [1].\n\n" + sources


def test_text_after_the_sources_section_is_scrubbed() -> None:
    markdown = "Claim [1].\n\n## Sources\n[1] A — https://a.example\n\n## Appendix\n\nSaved at /workspace/a.csv [1]."
    assert scrub_report(markdown) == "Claim [1].\n\n## Sources\n[1] A — https://a.example\n\n## Appendix\n\nSaved [1]."


LINT_CASES = [
    # (markdown, orphans, danglers, empty entries, no inline citation)
    ("Claim [1]. More [2]." + SOURCES, [], [], [], False),
    ("Claim [1]." + SOURCES, [2], [], [], False),
    ("Claim [1]. More [2]. Extra [4]." + SOURCES, [], [4], [], False),
    ("No citation at all." + SOURCES, [1, 2], [], [], True),
    ("Both [1, 2]." + SOURCES, [], [], [], False),
    ("Both [1][2]." + SOURCES, [], [], [], False),
    ("Range [1-3].\n\n## Sources\n[1] A — https://a\n[2] B — https://b\n[3] C — https://c\n", [], [], [], False),
    ("Range [1–3] with an en dash." + SOURCES, [], [3], [], False),
    ("Claim [1]. In code `arr[2]` and\n\n```\nx[2] = 1\n```\n" + SOURCES, [2], [], [], False),
    ("Claim [1] and [2].\n\n## Sources\n[1] A — https://a\n[2] —\n", [], [], [2], False),
    ("Claim [1] and [2].\n\n## Sources\n[1] A — https://a\n[2]\n", [], [], [2], False),
    ("Claim [1].\n\n## Sources\n[1] A, see also [5] — https://a\n", [], [], [], False),
    ("A link [1](https://a.example) is not a citation [2]." + SOURCES, [1], [], [], False),
    ("Claim [1] and [2].\n\n## Sources\n- [1] A — https://a\n- [2] B — https://b\n", [], [], [], False),
    ("Claim [1] and [2].\n\n## Sources\n1. A — https://a\n2. B — https://b\n", [], [], [], False),
    ("Claim [1].\n\n## Sources\n[1] A — https://a\n[2] B — https://b\n\n## Appendix\n\nMore [2].", [], [], [], False),
    ("A plain essay without sources.", [], [], [], False),
    (
        "Claim [1]. Also [1, 3].\n\n## Sources\n[1] A — https://a\n[2] B — https://b\n[3] C — https://c\n",
        [2],
        [],
        [],
        False,
    ),
]


@pytest.mark.parametrize(("markdown", "orphans", "danglers", "empty", "no_inline"), LINT_CASES)
def test_lint(markdown: str, orphans: list[int], danglers: list[int], empty: list[int], no_inline: bool) -> None:
    lint = lint_citations(markdown)
    assert (lint.orphans, lint.danglers, lint.empty_entries, lint.no_inline_citations) == (
        orphans,
        danglers,
        empty,
        no_inline,
    )
    assert lint.ok == (not (orphans or danglers or empty or no_inline))


def test_lint_reads_citations_in_first_use_order() -> None:
    lint = lint_citations("B [2], then A [1], then C [3], B again [2]." + SOURCES)
    assert lint.cited == [2, 1, 3]
    assert lint.listed == [1, 2]


def test_citations_without_a_sources_section() -> None:
    lint = lint_citations("Claim [1]. More [2].")
    assert not lint.has_sources
    assert lint.danglers == [1, 2]
    assert lint.problems() == [
        "The text cites [1], [2] but the report has no `## Sources` section: end it with `## Sources`, "
        "one `[n] Title — URL` line per cited source."
    ]


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        (
            "Claim [1]." + SOURCES,
            ["[2] is listed under Sources but never cited: cite it after the claim it supports, or delete the entry."],
        ),
        (
            "Claim [1]. More [2]. Extra [4]." + SOURCES,
            ["[4] is cited in the text but has no entry under Sources: add `[4] Title — URL`, or remove the citation."],
        ),
        (
            "Claim [1] and [2].\n\n## Sources\n[1] A — https://a\n[2] —\n",
            ["Sources entry [2] is empty: give its title and URL, or delete it and every [2] in the text."],
        ),
        (
            "No citation at all." + SOURCES,
            [
                "The report lists sources but cites none of them in the text: put [n] right after each claim "
                "that comes from source n."
            ],
        ),
        ("Claim [1]. More [2]." + SOURCES, []),
    ],
)
def test_lint_problems_are_fix_instructions(markdown: str, expected: list[str]) -> None:
    assert lint_citations(markdown).problems() == expected
