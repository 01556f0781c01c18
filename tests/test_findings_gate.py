"""The findings gate: which final messages a research sub-agent may hand over, and what is handed over."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deep_research_agent.assist import page_example
from deep_research_agent.domain.conversation import harness_message
from deep_research_agent.domain.findings import Findings
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.names import EvidenceKind
from deep_research_agent.domain.stops import StopCause
from deep_research_agent.evidence.store import EvidenceStore
from deep_research_agent.handover.contract import (
    MAX_FALLBACK_CHARS,
    MAX_FIELD_CHARS,
    NO_SOURCES_GAP,
    NOT_PARSED,
    PROVENANCE,
    UNRESEARCHED,
    bounce_message,
    copies_placeholder,
    hand_back,
    quotes_checked,
    source_problem,
    validate_findings,
)
from deep_research_agent.handover.gate import FindingsGateMiddleware, pages_read
from deep_research_agent.report.rendering import findings_markdown

URL = "https://example.com/battery"


def finding(claim: str = "The cell reaches 412 Wh/kg.", source: str = URL, evidence: str = "reaches 412 Wh/kg") -> dict:
    return {"finding": claim, "evidence": evidence, "source": source}


def message(summary: str = "Solid-state cells lead on density.", findings: object = None, gaps: object = None) -> str:
    payload: dict = {"summary": summary, "findings": [finding()] if findings is None else findings}
    if gaps is not None:
        payload["gaps"] = gaps
    return json.dumps(payload)


SERIES = ", ".join(f"2024-01-{day:02d}: {40 + day}" for day in range(1, 9))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(message(), id="bare"),
        pytest.param(f"```json\n{message()}\n```", id="fenced"),
        pytest.param(f"Here are my findings:\n{message()}\nThat is all.", id="in-prose"),
        pytest.param(f'{{"note": "scratch"}} then {message()}', id="unrelated-object-first"),
        pytest.param(f"{message(summary='draft')}\nRevised:\n{message()}", id="last-object-wins"),
        pytest.param(message(findings=[]), id="empty-findings-is-honest"),
        pytest.param(message(findings=[], gaps="No data for 2025."), id="gaps-as-string"),
        pytest.param(message(findings=[finding(source="MCP: pricing-db")]), id="mcp-label-source"),
        pytest.param(message(findings=[finding(source="Tavily search")]), id="search-label-source"),
    ],
)
def test_valid_messages_pass(text: str) -> None:
    verdict = validate_findings(text, tool_calls_made=2)
    assert verdict.ok, verdict.problems
    assert verdict.findings is not None
    assert verdict.findings.summary == "Solid-state cells lead on density."


def test_last_object_is_the_one_read() -> None:
    verdict = validate_findings(f"{message(summary='draft')} {message(summary='final')}", tool_calls_made=1)
    assert verdict.findings is not None and verdict.findings.summary == "final"


@pytest.mark.parametrize(
    ("text", "tool_calls", "expected"),
    [
        pytest.param("I could not find anything useful.", 3, [NOT_PARSED], id="prose-only"),
        pytest.param('{"answer": 42}', 3, [NOT_PARSED], id="json-without-contract-keys"),
        pytest.param('{"summary": "cut off', 3, [NOT_PARSED], id="truncated-json"),
        pytest.param(message(summary=""), 3, ["`summary` is empty"], id="empty-summary"),
        pytest.param(message(summary="   "), 3, ["`summary` is empty"], id="blank-summary"),
        pytest.param(message(findings="prices rose"), 3, ["`findings` is not a list"], id="findings-string"),
        pytest.param(message(findings={"finding": "x"}), 3, ["`findings` is not a list"], id="findings-object"),
        pytest.param(message(findings=["just a sentence"]), 3, ["finding 1 is not an object"], id="finding-not-object"),
        pytest.param(message(findings=[finding(claim="")]), 3, ["finding 1 has no text"], id="finding-without-text"),
        pytest.param(message(findings=[finding(source="")]), 3, ["has no source"], id="finding-without-source"),
        pytest.param(message(findings=[{"finding": "x"}]), 3, ["has no source"], id="finding-source-key-missing"),
        pytest.param(
            message(findings=[finding(source="/workspace/prices.csv")]), 3, ["is a sandbox path"], id="workspace-path"
        ),
        pytest.param(
            message(findings=[finding(source="/large_tool_results/call_7")]),
            3,
            ["is a sandbox path"],
            id="offload-path",
        ),
        pytest.param(message(findings=[finding(source="./data.json")]), 3, ["is a file path"], id="relative-path"),
        pytest.param(
            message(findings=[finding(source="C:\\data\\prices.xlsx")]), 3, ["is a file path"], id="windows-path"
        ),
        pytest.param(message(findings=[finding(source="prices.csv")]), 3, ["is a file path"], id="bare-data-file"),
        pytest.param(
            message(findings=[finding(source="web_search")]), 3, ["names an internal tool"], id="tool-web-search"
        ),
        pytest.param(
            message(findings=[finding(source="web_fetch")]), 3, ["names an internal tool"], id="tool-web-fetch"
        ),
        pytest.param(message(findings=[finding(source="task")]), 3, ["names an internal tool"], id="tool-task"),
        pytest.param(message(findings=[finding(source="execute")]), 3, ["names an internal tool"], id="tool-execute"),
        pytest.param(
            message(findings=[finding(source="read_file")]), 3, ["names an internal tool"], id="tool-read-file"
        ),
        pytest.param(
            message(findings=[finding(source="get_price_history(asset='BTC')")]),
            3,
            ["names an internal tool"],
            id="snake-call",
        ),
        pytest.param(
            message(findings=[finding(source="research-subagent")]), 3, ["names an internal tool"], id="subagent-role"
        ),
        pytest.param(
            message(summary="x" * (MAX_FIELD_CHARS + 1)), 3, ["`summary` is 1,201 characters"], id="long-summary"
        ),
        pytest.param(
            message(findings=[finding(evidence="y" * 1500)]), 3, ["`evidence` is 1,500 characters"], id="long-evidence"
        ),
        pytest.param(message(gaps=["z" * 1300]), 3, ["gap 1 is 1,300 characters"], id="long-gap"),
        pytest.param(
            message(findings=[finding(claim=f"Daily closes: {SERIES}.")]),
            3,
            ["transcribes a series of 8 dated values"],
            id="series-in-finding",
        ),
        pytest.param(
            message(summary=f"Prices were {SERIES}."), 3, ["`summary` transcribes a series"], id="series-in-summary"
        ),
        pytest.param(message(), 0, [PROVENANCE], id="findings-without-tool-calls"),
    ],
)
def test_problems_are_named(text: str, tool_calls: int, expected: list[str]) -> None:
    verdict = validate_findings(text, tool_calls_made=tool_calls)
    assert len(verdict.problems) == len(expected), verdict.problems
    for problem, fragment in zip(verdict.problems, expected, strict=True):
        assert fragment in problem


def test_every_problem_is_reported_at_once() -> None:
    text = message(
        summary="",
        findings=[
            finding(claim=""),
            finding(source="/workspace/a.csv"),
            finding(source="web_search(query='x')"),
            finding(),
        ],
    )
    verdict = validate_findings(text, tool_calls_made=0)
    assert len(verdict.problems) == 5
    assert verdict.problems[-1] == PROVENANCE


def test_empty_findings_without_tool_calls_is_fine() -> None:
    """Nothing claimed, nothing to prove: "found nothing without looking" is a gap, not a provenance breach."""
    assert validate_findings(message(findings=[]), tool_calls_made=0).ok


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (URL, None),
        ("http://example.org/a?b=1#c", None),
        ("HTTPS://EXAMPLE.COM", None),
        ("https://example.com/workspace/report", None),
        ("Tavily search", None),
        ("MCP: pricing-db", None),
        ("Reuters", None),
        ("Company 10-K filing, 2024", None),
        ("Task Force on Climate Disclosures", None),
        ("/workspace/data/prices.csv", "is a sandbox path"),
        ("/workspace", "is a sandbox path"),
        ("/large_tool_results/abc123", "is a sandbox path"),
        ("/skills/pricing/SKILL.md", "is a sandbox path"),
        ("offloaded to /workspace/x.json", "is a sandbox path"),
        ("/home/user/notes.txt", "is a file path"),
        ("/tmp/out.json", "is a file path"),
        ("./data.json", "is a file path"),
        ("../data/prices.csv", "is a file path"),
        ("~/Downloads/report.pdf", "is a file path"),
        ("C:\\Users\\me\\prices.csv", "is a file path"),
        ("file:///etc/passwd", "is a file path"),
        ("data.json", "is a file path"),
        ("web_search", "names an internal tool, not a source"),
        ("`web_fetch`", "names an internal tool, not a source"),
        ("Web_Search", "names an internal tool, not a source"),
        ("submit_report", "names an internal tool, not a source"),
        ("task", "names an internal tool, not a source"),
        ("execute", "names an internal tool, not a source"),
        ("grep", "names an internal tool, not a source"),
        ("web_search results for 'battery'", "names an internal tool, not a source"),
        ("fetch_prices(symbol='X')", "names an internal tool, not a source"),
        ("execute(command='python a.py')", "names an internal tool, not a source"),
        ("get_price_history", "names an internal tool, not a source"),
        ("research-subagent", "names an internal tool, not a source"),
        ("the research sub-agent", "names an internal tool, not a source"),
    ],
)
def test_source_classification(source: str, problem: str | None) -> None:
    assert source_problem(source) == problem


def test_cleaned_findings_drop_unusable_entries_and_keep_the_rest() -> None:
    text = message(
        findings=[
            finding(),
            finding(claim="", source=URL),
            finding(claim="From a file.", source="/workspace/a.csv"),
            finding(claim="From a tool.", source="web_fetch"),
            "not an object",
            finding(claim="From the pricing server.", source="MCP: pricing-db"),
        ],
        gaps=["No 2025 data."],
    )
    verdict = validate_findings(text, tool_calls_made=4)
    assert verdict.findings is not None
    assert [f.source for f in verdict.findings.findings] == [URL, "MCP: pricing-db"]
    assert verdict.findings.gaps == ["No 2025 data."]
    assert json.loads(verdict.fallback_text) == verdict.findings.model_dump(exclude_none=True)


def test_cleaning_summarises_a_series_and_caps_long_fields() -> None:
    text = message(findings=[finding(claim=f"Daily closes: {SERIES}.", evidence="e" * 2000)])
    verdict = validate_findings(text, tool_calls_made=1)
    assert verdict.findings is not None
    cleaned = verdict.findings.findings[0]
    assert cleaned.finding == (
        "Daily closes: Series of 8 values, 2024-01-01 → 2024-01-08: min 41 (2024-01-01), max 48 (2024-01-08), mean 44.5."
    )
    assert len(cleaned.evidence) == MAX_FIELD_CHARS and cleaned.evidence.endswith("…")


def test_provenance_failure_hands_over_no_findings() -> None:
    verdict = validate_findings(message(gaps=["Pricing."]), tool_calls_made=0)
    assert verdict.findings is not None
    assert verdict.findings.findings == []
    assert verdict.findings.gaps == ["Pricing.", NO_SOURCES_GAP]
    assert verdict.findings.summary == "Solid-state cells lead on density."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Nothing parseable here.  ", "Nothing parseable here."),
        ("", ""),
        ("a" * (MAX_FALLBACK_CHARS + 50), "a" * (MAX_FALLBACK_CHARS - 1) + "…"),
    ],
)
def test_fallback_for_unparsable_text_is_the_trimmed_prose(text: str, expected: str) -> None:
    verdict = validate_findings(text, tool_calls_made=1)
    assert verdict.findings is None
    assert verdict.fallback_text == expected


def test_findings_null_is_an_empty_list() -> None:
    verdict = validate_findings('{"summary": "Nothing found.", "findings": null}', tool_calls_made=1)
    assert verdict.ok and verdict.findings is not None and verdict.findings.findings == []


@pytest.mark.parametrize(
    "problems",
    [
        [NOT_PARSED],
        ["`summary` is empty: answer the unit.", "finding 2 has no source: give the URL."],
        [PROVENANCE],
    ],
)
def test_bounce_message_lists_each_problem_and_restates_the_contract(problems: list[str]) -> None:
    text = bounce_message(problems)
    for problem in problems:
        assert f"- {problem}" in text
    for part in (
        '"summary"',
        '"findings"',
        '"finding"',
        '"evidence"',
        '"source"',
        '"gaps"',
        "1,200",
        "file path",
        "tool name",
    ):
        assert part in text
    assert "empty findings list is fine" in text


def test_a_unit_that_researched_nothing_is_told_only_to_call_a_tool_ending_on_the_example() -> None:
    example = '{"name": "web_search", "arguments": {"query": "pharos height"}}'
    text = bounce_message([f"{UNRESEARCHED}. Start with a web_search call, like this:\n{example}", NOT_PARSED])

    assert text.startswith(UNRESEARCHED) and text.endswith(example)
    assert NOT_PARSED not in text and '"findings"' not in text


# What Qwen2.5-Coder-0.5B handed back after reading a page (bench/local_model.py): the prompt's example, copied.
COPIED_EXAMPLE = json.dumps(
    {
        "summary": "dense prose answer to the unit",
        "findings": [
            {
                "finding": "page content",
                "evidence": "the text you read that supports it",
                "source": "the page or passage URL",
            }
        ],
        "gaps": ["what you could not establish"],
    }
)


def test_an_answer_that_copies_the_examples_placeholders_is_refused_and_hands_over_none_of_them() -> None:
    verdict = validate_findings(COPIED_EXAMPLE, tool_calls_made=2)

    assert not verdict.ok
    copied = [p for p in verdict.problems if "copies the example's placeholder" in p]
    assert [p.split(" copies")[0] for p in copied] == [
        "`summary`",
        "finding 1: `evidence`",
        "finding 1: `source`",
        "gap 1",
    ]
    assert verdict.findings is not None
    assert verdict.findings.summary == "" and verdict.findings.findings == [] and verdict.findings.gaps == []


def test_a_copied_quote_leaves_the_finding_without_it_and_a_copied_source_drops_the_finding() -> None:
    text = message(
        findings=[
            finding(evidence="the sentence of the page that says it, copied"),
            finding(claim="The tower stood over 100 metres.", source="the page URL"),
        ]
    )
    # The first quote copies the example a bounce of the assist showed the unit.
    shown = [HumanMessage(content="Find the cell's density"), harness_message(page_example(URL))]

    verdict = validate_findings(text, tool_calls_made=2, conversation=shown)

    assert not verdict.ok and verdict.copied_text
    assert verdict.findings is not None
    assert [(f.finding, f.evidence, f.source) for f in verdict.findings.findings] == [
        ("The cell reaches 412 Wh/kg.", "", URL)
    ]


def test_a_bounce_with_the_assists_page_example_ends_on_that_example_citing_the_page() -> None:
    problems = validate_findings(COPIED_EXAMPLE, tool_calls_made=2).problems

    text = bounce_message(problems, example=page_example(URL))

    *_, lead, example = text.splitlines()
    assert lead.startswith("Reply with exactly one JSON object") and "the page you read as its source" in lead
    assert json.loads(example)["findings"][0]["source"] == URL
    assert all(problem in text for problem in problems)
    # The example's texts are placeholders once the unit was shown them: copying them is refused like the
    # contract's, while its source, the page the unit read, may be cited.
    shown = [HumanMessage(content="Find the cell's density"), harness_message(text)]
    copied = validate_findings(example, tool_calls_made=2, conversation=shown)
    assert copied.copied_text and copied.findings is not None and copied.findings.findings == []
    assert not validate_findings(example, tool_calls_made=2).copied_text
    assert not validate_findings(message(), tool_calls_made=2, conversation=shown).copied_text


def test_an_example_filled_with_the_units_own_brief_is_no_placeholder() -> None:
    brief = "Sodium-glass battery energy density"
    shown = [
        HumanMessage(content=brief),
        harness_message(
            f'Start with a web_search call, like this:\n{{"name": "web_search", "arguments": {{"query": "{brief}"}}}}'
        ),
    ]

    verdict = validate_findings(message(summary=brief), tool_calls_made=2, conversation=shown)

    assert verdict.ok and not verdict.copied_text


@pytest.mark.parametrize(
    ("text", "copied"),
    [
        ("the page or passage URL", True),
        ("The page URL.", True),
        ("one claim with its figures", True),
        ("the text you read that supports it", True),
        ("the page", False),
        ("page content", False),
        ("The tower stood 137 metres tall, one claim with its figures in a survey.", False),
        ("http://127.0.0.1:8000/articles/pharos-lighthouse", False),
    ],
)
def test_a_placeholder_is_the_examples_text_or_three_or_more_of_its_words_in_a_row(text: str, copied: bool) -> None:
    assert copies_placeholder(text) is copied


def test_the_pages_a_unit_read_are_its_fetches_that_did_not_fail_and_that_the_run_holds_a_page_for() -> None:
    evidence = EvidenceStore()
    for url in ("https://a.example/one", "https://b.example/two"):
        evidence.add_evidence(url=url, title="", kind=EvidenceKind.PAGE, text="text", agent="research-subagent")
    evidence.add_evidence(
        url="https://c.example/hit",
        title="",
        kind=EvidenceKind.SEARCH_RESULT,
        text="snippet",
        agent="research-subagent",
    )

    def fetch(call_id: str, url: str) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": "web_fetch", "args": {"url": url}, "id": call_id}])

    messages = [
        HumanMessage("brief"),
        fetch("1", "https://a.example/one"),
        ToolMessage("page", tool_call_id="1"),
        fetch("2", "https://b.example/two"),
        ToolMessage("page", tool_call_id="2"),
        fetch("3", "https://c.example/hit"),
        ToolMessage("TOOL ERROR", tool_call_id="3", status="error"),
        fetch("4", "https://a.example/one"),
        ToolMessage("page", tool_call_id="4"),
        fetch("5", "https://b.example/two"),
        ToolMessage("TOOL ERROR", tool_call_id="5", status="error"),
    ]

    assert pages_read(messages, evidence) == ["https://b.example/two", "https://a.example/one"]


# What the loop guard told Qwen2.5-Coder-0.5B, and the summary the model handed over (bench/local_model.py).
LOOP_WARNING = (
    "LOOP DETECTED: you called read_file 3 times with the same arguments and got the same result each time. "
    "Repeating it will not give you anything new. Change approach (a different query, page or source), or finish "
    "now with what you have. After 6 identical calls you will be stopped."
)
ECHOED_WARNING = (
    "Loop detected, you called read_file 3 times with the same arguments and got the same result each time. "
    "Repeating it will not give you anything new."
)
PAGE = "The Lighthouse of Alexandria was built on the island of Pharos between 280 and 247 BC, during two reigns."


def read_the_page() -> list:
    return [
        HumanMessage("Who built the Lighthouse of Alexandria?"),
        AIMessage("", tool_calls=[{"name": "web_fetch", "args": {"url": URL}, "id": "1"}]),
        ToolMessage(PAGE, tool_call_id="1"),
    ]


def test_an_answer_repeating_a_harness_warning_is_refused_and_hands_over_none_of_it() -> None:
    conversation = [*read_the_page(), harness_message(LOOP_WARNING)]
    text = message(summary=ECHOED_WARNING, findings=[finding(claim=PAGE)], gaps=[ECHOED_WARNING])

    verdict = validate_findings(text, tool_calls_made=1, conversation=conversation)

    assert verdict.copied_text
    assert [p.split(" “")[0] for p in verdict.problems if "repeats what the harness told you" in p] == [
        "`summary` repeats what the harness told you",
        "gap 1 repeats what the harness told you",
    ]
    assert verdict.findings is not None
    assert (verdict.findings.summary, verdict.findings.gaps) == ("", [])
    assert [f.finding for f in verdict.findings.findings] == [PAGE]


def test_words_the_conversation_held_before_the_harness_repeated_them_are_the_sub_agents_to_use() -> None:
    brief = "Who built the Lighthouse of Alexandria and how tall was it?"
    example = json.dumps({"name": "web_search", "arguments": {"query": brief}})
    bounce = harness_message(f"{UNRESEARCHED}. Start with a web_search call, like this:\n{example}")
    summary = harness_message(f"Summary of the earlier work: {ECHOED_WARNING}", carries_content=True)
    conversation = [HumanMessage(brief), AIMessage("I know this."), bounce, *read_the_page()[1:], summary]

    revised = message(summary=f"{brief} {PAGE} {ECHOED_WARNING}", findings=[finding(claim=PAGE)])

    assert validate_findings(revised, tool_calls_made=1, conversation=conversation).ok


def test_a_halted_unit_hands_back_nothing_it_copied_from_the_harness() -> None:
    conversation = [*read_the_page(), harness_message(LOOP_WARNING)]
    copied = AIMessage(message(summary=ECHOED_WARNING, findings=[finding(claim=PAGE), finding(claim=ECHOED_WARNING)]))
    notes = AIMessage(ECHOED_WARNING)

    handed_back = hand_back([*conversation, copied], cause=StopCause.LOOP)
    without_findings = hand_back([*conversation, notes], cause=StopCause.LOOP)

    assert handed_back.summary == "" and [f.finding for f in handed_back.findings] == [PAGE]
    assert "Repeating it" not in without_findings.summary and "Its last notes" not in without_findings.summary


@pytest.mark.parametrize("knob", ["first_call", "page_example"])
def test_the_gate_refuses_an_example_hook_it_cannot_call(knob: str) -> None:
    with pytest.raises(KnobError, match=knob):
        FindingsGateMiddleware(role="research-subagent", **{knob: "an example"})


# --- the quotes, checked at hand-over ------------------------------------------------------------


def test_a_finding_whose_quote_is_in_no_text_read_from_its_source_is_handed_over_marked() -> None:
    evidence = EvidenceStore()
    evidence.add_evidence(
        url=URL, title="Cells", kind="page", text="The cell reaches 412 Wh/kg in tests.", agent="research-subagent"
    )
    other = "https://example.com/other"
    evidence.add_evidence(
        url=other, title="Other", kind="search_result", text="Prices fell 12% last year.", agent="research-subagent"
    )
    handed = Findings.model_validate(
        {
            "summary": "s",
            "findings": [
                finding(),
                finding(claim="Prices fell 12%.", source=other, evidence="Prices fell 12%"),
                finding(claim="It costs $90/kWh.", evidence="costs $90/kWh"),
                finding(claim="It reaches 412 Wh/kg.", source=other),
                finding(claim="Never read.", source="https://never.example/x", evidence="anything"),
                finding(claim="No quote.", evidence=""),
            ],
        }
    )

    checked = quotes_checked(handed, evidence.library())

    assert [f.check for f in checked.findings] == [
        None,
        None,  # a search result's snippet is text the run read from that source
        "quote_not_found",
        "quote_not_found",  # in the text of another source only
        "quote_not_found",
        None,  # no quote: left to the report's checks, which name it
    ]
    handed_json = json.loads(checked.to_json())["findings"]
    assert "check" not in handed_json[0] and handed_json[2]["check"] == "quote_not_found"
    shown = findings_markdown(checked, evidence)
    assert f"It costs $90/kWh. ([{URL}]({URL})) (its quote is in no text read from this source)" in shown
    assert shown.count("its quote is in no text") == 3


def test_a_sub_agent_cannot_mark_its_own_finding() -> None:
    text = message(findings=[{**finding(), "check": "quote_not_found"}])
    verdict = validate_findings(text, tool_calls_made=1)
    assert verdict.findings is not None and verdict.findings.findings[0].check is None
