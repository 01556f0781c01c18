"""What a CommonMark renderer (markdown-it-py, as deep-agents-ui's and agent-chat-ui's renderers) makes of a
delivered report and of the clarifying questions: a Sources list of linked titles, linked markers, numbers kept."""

from __future__ import annotations

from markdown_it import MarkdownIt

from deep_research_agent.delivery.clarification import questions_text
from deep_research_agent.evidence.store import EvidenceStore, SourceRecord
from deep_research_agent.report.markdown import source_entries, split_sources
from deep_research_agent.report.rendering import linked_citations, listed_sources, readable_report, source_entry

CELL = "https://example.org/halvorsen"
FARM = "https://example.org/kelp"
REPORT = (
    "# Sodium-glass cells\n\nThe cell reached 412 Wh/kg [1]. Kelp farms grew [2], and both were cited [1, 2].\n\n"
    "`code [1]` stays.\n\n## Sources\n[1] Halvorsen — " + CELL + "\n[2] Kelp survey — " + FARM + "\n"
)


def evidence_with_pages() -> EvidenceStore:
    evidence = EvidenceStore()
    evidence.add_source(CELL, "The Halvorsen cell [Nordlys Institute]")
    return evidence


def tokens(markdown: str) -> list:
    return MarkdownIt("commonmark").parse(markdown)


def sources_tokens(markdown: str) -> list:
    return tokens(split_sources(markdown).sources)


def test_a_two_source_report_renders_its_sources_as_a_list_of_linked_titles():
    readable = readable_report(REPORT, evidence_with_pages())

    parsed = sources_tokens(readable)
    items = [t for t in parsed if t.type == "list_item_open"]
    assert len(items) == 2 and [t.type for t in parsed].count("bullet_list_open") == 1
    links = [child for t in parsed if t.type == "inline" for child in t.children if child.type == "link_open"]
    assert [link.attrs["href"] for link in links] == [CELL, FARM]
    texts = [t.content for t in parsed if t.type == "inline"][1:]
    assert texts[0] == f"[1] [The Halvorsen cell (Nordlys Institute)]({CELL})", "the retrieved page's title"
    assert texts[1] == f"[2] [Kelp survey]({FARM})", "a title the run has no record of stays as written"


def test_inline_markers_link_to_their_source_outside_code():
    readable = readable_report(REPORT, evidence_with_pages())

    body = split_sources(readable).before
    assert f"412 Wh/kg [[1]]({CELL})." in body and f"both were cited [[1]]({CELL})[[2]]({FARM})." in body
    assert "`code [1]` stays." in body
    hrefs = [c.attrs["href"] for t in tokens(body) if t.type == "inline" for c in t.children if c.type == "link_open"]
    assert hrefs == [CELL, FARM, CELL, FARM]


def test_the_rendered_report_is_still_read_by_the_citation_anatomy():
    readable = readable_report(REPORT, evidence_with_pages())

    entries = source_entries(split_sources(readable).sources)
    assert [(e.index, e.url, e.title) for e in entries] == [
        (1, CELL, "The Halvorsen cell (Nordlys Institute)"),
        (2, FARM, "Kelp survey"),
    ]
    assert listed_sources(listed_sources(REPORT, evidence_with_pages()), evidence_with_pages()) == listed_sources(
        REPORT, evidence_with_pages()
    )


def test_a_source_without_a_url_is_its_label_and_a_marker_without_an_entry_is_left_alone():
    assert source_entry(3, SourceRecord(index=3, url="", title="time MCP server", domain="")) == "- [3] time MCP server"
    assert linked_citations("A claim [4].\n\n## Sources\n- [3] time MCP server\n").startswith("A claim [4].")


def test_numbered_questions_keep_their_numbers_in_any_renderer_and_open_with_one_lead_sentence():
    text = questions_text(["Which region should I cover?", "Which time span?"])

    parsed = tokens(text)
    assert not any(t.type == "ordered_list_open" for t in parsed), "an ordered list's numbers can be hidden"
    paragraphs = [t.content for t in parsed if t.type == "inline"]
    assert paragraphs == [
        "Before I start the research, a few quick questions:",
        "**1.** Which region should I cover?",
        "**2.** Which time span?",
    ]
